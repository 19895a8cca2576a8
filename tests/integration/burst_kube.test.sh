#!/usr/bin/env bash
# burst_kube.test.sh - the burst path end to end on the real Slurm and the
# emulated cluster (the sandbox: hb-kubemu in execute mode, hpcbridged with
# remote.backend kubernetes), submitted as the sandbox's user from the
# directory the cluster mounts (root never bursts):
#
#   * an unchanged MPI sbatch script in the gpu partition becomes a proxy
#     on Slurm and one MPIJob, labelled with its gateway id and user, whose
#     launcher runs the real Open MPI program; its output arrives in the
#     Slurm output file and the proxy ends COMPLETED;
#   * a failing launcher gives a FAILED proxy with the launcher's exit code;
#   * scancel of the proxy deletes the MPIJob;
#   * deleting the MPIJob in the cluster ends the proxy CANCELLED;
#   * faults: 500s and 429s on create, a watch dropped mid-job, 410 on the
#     watch's resume, and hpcbridged killed mid-job and restarted: each job
#     ends right, with exactly one MPIJob.
#
# usage: burst_kube.test.sh BUILD_DIR SRC_DIR
set -euo pipefail

build=$(cd "${1:?BUILD_DIR}" && pwd)
src=$(cd "${2:?SRC_DIR}" && pwd)
tmp=$(mktemp -d /tmp/hb-burstk.XXXXXX)
chmod 755 "$tmp"
export HB_SANDBOX_BACKEND=kubernetes
# shellcheck source=lib/sandbox_test.sh
. "$src/tests/integration/lib/sandbox_test.sh"
sandbox_test_up
ok "sandbox up"
url=$(cat "$box/kube/url")
kube() { /usr/bin/python3 "$src/tests/integration/lib/kube.py" "$@"; }

# Exactly one MPIJob carries the gateway id.
one_mpijob() {
	local n
	n=$(kube names "hpcbridge.io/gateway-id=$1" | grep -c . || true)
	[ "$n" = 1 ] && ok "$2: exactly one MPIJob for $1" ||
		bad "$2: $n MPIJobs for $1"
}

# Wait until the proxy's output file holds TEXT.
wait_output() {
	local file=$1 text=$2 i
	for i in $(seq 300); do
		grep -q "$text" "$file" 2>/dev/null && return 0
		sleep 0.2
	done
	return 1
}

wk=$HB_SANDBOX_WORK
mpicc -O1 -o "$wk/hello" "$src/examples/sandbox/hello.c" ||
	die "mpicc examples/sandbox/hello.c"
chmod 755 "$wk/hello"

# 0. Root never bursts: placement keeps its job on Slurm and says why.
id=$(submit "$src/examples/sandbox/mpi-burst.sh")
[ -n "$id" ] && [ "$(field "$id" Partition)" = gpu ] &&
	ok "root: the job stays on Slurm (partition gpu)" ||
	bad "root: job '$id' in partition $(field "$id" Partition)"
hb=$(gateway_id "$id")
hpcbridge status "$hb" 2>&1 | grep -q "root never runs on the cluster" &&
	ok "root: the decision says why" ||
	bad "root: $(hpcbridge status "$hb" 2>&1)"
scancel "$id" 2>/dev/null || true

# 1. The example MPI script bursts and runs as an MPIJob.
id=$(submit_user "$src/examples/sandbox/mpi-burst.sh")
[ -n "$id" ] || die "sbatch mpi-burst.sh: $(cat "$tmp/sbatch.err")"
[ "$(field "$id" Partition)" = burst ] && ok "mpi-burst: a proxy in burst" ||
	bad "mpi-burst partition $(field "$id" Partition)"
hb=$(gateway_id "$id")
st=$(wait_final "$id")
[ "$st" = COMPLETED ] && ok "mpi-burst: COMPLETED" || bad "mpi-burst: $st"
[ "$(field "$id" ExitCode)" = 0:0 ] && ok "mpi-burst: exit code 0" ||
	bad "mpi-burst exit code $(field "$id" ExitCode)"
out=$wk/mpi-burst-$id.out
n=$(grep -c "^hello from rank [01] of 2 on " "$out" || true)
[ "$n" = 2 ] && ok "mpi-burst: two MPI ranks ran in the launcher" ||
	bad "mpi-burst output: $(cat "$out" 2>&1)"
grep -qx "job $hb running remotely" "$out" &&
	ok "mpi-burst: the launcher knew its gateway id" ||
	bad "mpi-burst: no 'job $hb running remotely' in $(cat "$out" 2>&1)"
one_mpijob "$hb" mpi-burst
[ "$(kube phase "$hb")" = Succeeded ] && ok "mpi-burst: MPIJob Succeeded" ||
	bad "mpi-burst: MPIJob phase $(kube phase "$hb" 2>&1)"
kube labels "$hb" >"$tmp/labels"
grep -qx "hpcbridge.io/user=$HB_SANDBOX_USER" "$tmp/labels" &&
	ok "mpi-burst: MPIJob labelled with the user" ||
	bad "mpi-burst labels: $(cat "$tmp/labels")"
hpcbridge status "$hb" 2>&1 | grep -q succeeded &&
	ok "mpi-burst: hpcbridge status succeeded" ||
	bad "mpi-burst status: $(hpcbridge status "$hb" 2>&1)"

# 1a. As a real cluster runs it: kubectl shows the MPIJob running as the
# user (runAsUser, runAsNonRoot) through Kueue's LocalQueue, admitted by
# Kueue (created suspended, then unsuspended); the file the job writes in
# the directory the cluster mounts belongs to the user.
uid=$(id -u "$HB_SANDBOX_USER")
kubectl get mpijob "$hb" -o yaml >"$tmp/mpijob.yaml" 2>&1 ||
	bad "kubectl get mpijob $hb: $(cat "$tmp/mpijob.yaml")"
for want in "runAsUser: $uid" "runAsNonRoot: true" \
	"kueue.x-k8s.io/queue-name: burst" \
	"kueue.x-k8s.io/priority-class: normal" "claimName: work"; do
	grep -qF "$want" "$tmp/mpijob.yaml" &&
		ok "kubectl get mpijob -o yaml: $want" ||
		bad "kubectl get mpijob -o yaml: no '$want'"
done
kubectl get workloads -o yaml >"$tmp/wl.yaml" 2>&1
grep -q "name: $hb" "$tmp/wl.yaml" && grep -q "reason: Admitted" "$tmp/wl.yaml" &&
	ok "Kueue admitted the MPIJob's workload" ||
	bad "no admitted workload for $hb: $(head -c 800 "$tmp/wl.yaml")"
cat >"$tmp/writes.sh" <<'EOF'
#!/bin/sh
#SBATCH --partition=gpu
#SBATCH --output=writes-%j.out
id -u >"wrote-$HPCBRIDGE_JOB_ID.txt"
EOF
id=$(submit_user "$tmp/writes.sh")
hb=$(gateway_id "$id")
st=$(wait_final "$id")
f=$wk/wrote-$hb.txt
[ "$st" = COMPLETED ] && [ "$(stat -c %u "$f" 2>/dev/null)" = "$uid" ] &&
	[ "$(cat "$f")" = "$uid" ] &&
	ok "the file the job wrote on the cluster is the user's (uid $uid)" ||
	bad "writes.sh: $st, $(stat -c '%u:%g' "$f" 2>&1), $(cat "$f" 2>&1)"

# 1b. The MPIJob is the job as decided: options on sbatch's command line
# (here 2 nodes, 1 task each, where the script says 2 tasks and no nodes)
# shape it, not only the script's #SBATCH lines.
id=$(submit_user "$src/examples/sandbox/mpi-burst.sh" -N 2 --ntasks-per-node=1)
hb=$(gateway_id "$id")
st=$(wait_final "$id")
kube get "$hb" >"$tmp/decided.json" 2>&1 || true
/usr/bin/python3 - "$tmp/decided.json" <<'PY' &&
import json, sys
m = json.load(open(sys.argv[1]))
w = m["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"]
sys.exit(0 if w == 2 and m["spec"].get("slotsPerWorker") == 1 else 1)
PY
	ok "decided job: -N 2 --ntasks-per-node=1 on the command line gave 2 workers of 1 slot ($st)" ||
	bad "decided job: $(head -c 600 "$tmp/decided.json")"

# 2. A failing launcher.
cat >"$tmp/fail.sh" <<'EOF'
#!/bin/sh
#SBATCH --partition=gpu
#SBATCH --output=fail-%j.out
echo "about to fail"
exit 7
EOF
id=$(submit_user "$tmp/fail.sh")
hb=$(gateway_id "$id")
st=$(wait_final "$id")
[ "$st" = FAILED ] && ok "failing launcher: proxy FAILED" ||
	bad "failing launcher: $st"
[ "$(field "$id" ExitCode)" = 7:0 ] && ok "failing launcher: exit code 7" ||
	bad "failing launcher exit code $(field "$id" ExitCode)"
grep -qx "about to fail" "$wk/fail-$id.out" &&
	ok "failing launcher: its output" ||
	bad "failing launcher output: $(cat "$wk/fail-$id.out" 2>&1)"
[ "$(kube phase "$hb")" = Failed ] && ok "failing launcher: MPIJob Failed" ||
	bad "failing launcher: MPIJob phase $(kube phase "$hb" 2>&1)"

cat >"$tmp/long.sh" <<'EOF'
#!/bin/sh
#SBATCH --partition=gpu
#SBATCH --output=long-%j.out
echo "long job started"
sleep 300
echo "not reached"
EOF

# 3. scancel of the proxy deletes the MPIJob.
id=$(submit_user "$tmp/long.sh")
hb=$(gateway_id "$id")
wait_output "$wk/long-$id.out" "long job started" &&
	ok "scancel: the remote job runs" ||
	bad "scancel: did not start: $(cat "$wk/long-$id.out" 2>&1)"
scancel "$id"
st=$(wait_final "$id")
[ "$st" = CANCELLED ] && ok "scancel: proxy CANCELLED" || bad "scancel: $st"
gone=0
for _ in $(seq 100); do
	rc=0
	kube get "$hb" >/dev/null 2>&1 || rc=$?
	[ "$rc" = 3 ] && gone=1 && break
	sleep 0.2
done
[ "$gone" = 1 ] && ok "scancel: the MPIJob is deleted" ||
	bad "scancel: MPIJob $hb still there"
grep -q "not reached" "$wk/long-$id.out" && bad "scancel: the job ran on" || true

# 4. Deleting the MPIJob in the cluster ends the proxy CANCELLED.
id=$(submit_user "$tmp/long.sh")
hb=$(gateway_id "$id")
wait_output "$wk/long-$id.out" "long job started" ||
	bad "kubectl delete: did not start: $(cat "$wk/long-$id.out" 2>&1)"
kube delete "$hb" && ok "kubectl delete: MPIJob deleted" ||
	bad "kubectl delete of $hb failed"
st=$(wait_final "$id")
[ "$st" = CANCELLED ] && ok "kubectl delete: proxy CANCELLED" ||
	bad "kubectl delete: proxy $st"
hpcbridge status "$hb" 2>&1 | grep -q cancelled &&
	ok "kubectl delete: hpcbridge status cancelled" ||
	bad "kubectl delete status: $(hpcbridge status "$hb" 2>&1)"

# 5. 500s and 429s while the MPIJob is created.
cat >"$tmp/short.sh" <<'EOF'
#!/bin/sh
#SBATCH --partition=gpu
#SBATCH --output=short-%j.out
echo "short job ran"
EOF
kube faults "$url" '{"error_500":2,"error_429":2,"retry_after":1,"path":"/mpijobs","method":"POST"}'
id=$(submit_user "$tmp/short.sh")
hb=$(gateway_id "$id")
st=$(wait_final "$id")
[ "$st" = COMPLETED ] && grep -qx "short job ran" "$wk/short-$id.out" &&
	ok "500s and 429s on create: the job ran" ||
	bad "500s and 429s on create: $st, $(cat "$wk/short-$id.out" 2>&1)"
kube counts "$url" | /usr/bin/python3 -c '
import json, sys
c = json.load(sys.stdin)
sys.exit(0 if c["injected_500"] >= 2 and c["injected_429"] >= 2 else 1)
' && ok "500s and 429s on create: the faults were injected" ||
	bad "faults not injected: $(kube counts "$url")"
kube faults "$url"
one_mpijob "$hb" "500s and 429s on create"

# 6. The watch dropped mid-job, then 410 Gone when it resumes.
cat >"$tmp/mid.sh" <<'EOF'
#!/bin/sh
#SBATCH --partition=gpu
#SBATCH --output=mid-%j.out
echo "mid job started"
sleep 3
echo "mid job done"
exit 4
EOF
for fault in '{"drop_watches":true}' '{"gone_next_watch":1,"drop_watches":true}'; do
	id=$(submit_user "$tmp/mid.sh")
	hb=$(gateway_id "$id")
	wait_output "$wk/mid-$id.out" "mid job started" ||
		bad "$fault: did not start"
	kube faults "$url" "$fault"
	st=$(wait_final "$id")
	[ "$st" = FAILED ] && [ "$(field "$id" ExitCode)" = 4:0 ] &&
		grep -qx "mid job done" "$wk/mid-$id.out" &&
		ok "$fault: the job ended with its exit code and output" ||
		bad "$fault: $st $(field "$id" ExitCode) $(cat "$wk/mid-$id.out" 2>&1)"
	kube faults "$url"
	one_mpijob "$hb" "$fault"
done

# 7. hpcbridged killed mid-job and restarted.
id=$(submit_user "$tmp/mid.sh")
hb=$(gateway_id "$id")
wait_output "$wk/mid-$id.out" "mid job started" || bad "restart: did not start"
dpid=$(head -c 32 "$box/hpcbridged.pid" | tr -dc 0-9)
kill -KILL "$dpid"
sleep 1
bash "$src/scripts/sandbox.sh" up "$box" "$build" >/dev/null 2>"$tmp/up2.err" ||
	die "sandbox up after the kill: $(cat "$tmp/up2.err")"
st=$(wait_final "$id")
[ "$st" = FAILED ] && [ "$(field "$id" ExitCode)" = 4:0 ] &&
	grep -qx "mid job done" "$wk/mid-$id.out" &&
	ok "restart: the job ended with its exit code and whole output" ||
	bad "restart: $st $(field "$id" ExitCode) $(cat "$wk/mid-$id.out" 2>&1)"
n=$(grep -c "mid job started" "$wk/mid-$id.out" || true)
[ "$n" = 1 ] && ok "restart: the output was not repeated" ||
	bad "restart: 'mid job started' $n times"
one_mpijob "$hb" restart

sandbox_test_end
echo "all Kubernetes burst checks passed"
