#!/usr/bin/env bash
# origin_twin.test.sh - managed MPIJobs (spec.runPolicy.managedBy:
# hpcbridge.io/gateway) placed by the daemon's placement, and the crash and
# downtime cases of the Kubernetes-origin path, on the sandbox (real Slurm,
# hb-kubemu in execute mode, hpcbridged on a policy that sends partition
# gpu to Kubernetes, keeps the rest on Slurm, and rejects what fits
# neither).  Read and written with python3-kubernetes:
#
#   * an MPIJob annotated hpcbridge.io/partition=gpu runs in the cluster as
#     one twin MPIJob (no managedBy, labelled with the original's uid, an
#     ownerReference to it) whose launcher runs real Open MPI; the
#     original's status goes Running -> Succeeded, copied from the twin;
#     no Slurm job; the decision is stored with its explanation;
#   * a failing twin gives Failed;
#   * deleting the original deletes its twin;
#   * a policy that rejects the job: Failed, reason PlacementRejected;
#   * hpcbridged killed (failpoints) after storing a job and before its twin
#     exists, and after creating the twin before recording it, and with
#     kill -9 while the twin runs: exactly one twin after the restart, and
#     the job succeeds;
#   * the same for a job placed on Slurm (killed before the submit, and
#     after it before recording it): exactly one Slurm job;
#   * MPIJobs deleted while hpcbridged is stopped: after the restart their
#     Slurm job is cancelled and their twin deleted, the jobs end cancelled
#     in the store with an audit event.
#
# usage: origin_twin.test.sh BUILD_DIR SRC_DIR
set -euo pipefail

build=$(cd "${1:?BUILD_DIR}" && pwd)
src=$(cd "${2:?SRC_DIR}" && pwd)
tmp=$(mktemp -d /tmp/hb-twin.XXXXXX)
chmod 755 "$tmp"
export HB_SANDBOX_BACKEND=kubernetes
# Slurm's partitions take one node of 8 CPUs, the cluster four of 16.
export HB_SANDBOX_POLICY=$tmp/policy.yaml
cat >"$HB_SANDBOX_POLICY" <<'EOF'
version: 1
defaults:
  prefer: slurm
  fallback: reject
slurm:
  default_partition: debug
  partitions:
    debug: {max_nodes: 1, node: {cpus: 8, memory: 16000Mi}}
    gpu: {max_nodes: 1, node: {cpus: 8, memory: 16000Mi}}
    long: {max_nodes: 1, node: {cpus: 8, memory: 16000Mi}}
kubernetes:
  namespace: default
  max_nodes: 4
  node: {cpus: 16, memory: 64000Mi}
  startup: 0s
rules:
  - name: gpu-in-cluster
    partition: gpu
    prefer: kubernetes
EOF
# shellcheck source=lib/sandbox_test.sh
. "$src/tests/integration/lib/sandbox_test.sh"
# shellcheck source=lib/origin.sh
. "$src/tests/integration/lib/origin.sh"
# The user the MPIJobs are labelled with, granted to namespace default.
export HB_ORIGIN_USER=hbot$$
export HB_SANDBOX_ORIGIN_NAMESPACES="{default: [$HB_ORIGIN_USER]}"
# the MPIJobs below are hand-made, and their twins run their pods as
# written (as root, like the MPI Operator's examples): no Pod Security
export HB_SANDBOX_POD_SECURITY=privileged
sandbox_test_up
trap 'origin_users_del; _sandbox_test_cleanup' EXIT
origin_user "$HB_ORIGIN_USER" || die "cannot make user $HB_ORIGIN_USER"
ok "sandbox up"
work=$tmp/work
mkdir -p "$work"
chmod 1777 "$work" # the Slurm jobs' working directory: theirs to write
db=$box/state.db

# mpijob NAME COMMAND PARTITION|- WORKERS > the manifest (JSON)
mpijob() {
	/usr/bin/python3 - "$@" "$work" <<'EOF'
import json, os, sys
name, cmd, part, workers, work = sys.argv[1:6]
meta = {'name': name, 'labels': {'hpcbridge.io/user': os.environ['HB_ORIGIN_USER'],
                                 'hpcbridge.io/account': 'physics'}}
if part != '-':
    meta['annotations'] = {'hpcbridge.io/partition': part}
print(json.dumps({
    'apiVersion': 'kubeflow.org/v2beta1', 'kind': 'MPIJob',
    'metadata': meta,
    'spec': {
        'slotsPerWorker': 1,
        'runPolicy': {'cleanPodPolicy': 'None',
                      'managedBy': 'hpcbridge.io/gateway'},
        'mpiReplicaSpecs': {
            'Launcher': {'replicas': 1, 'template': {'spec': {
                'containers': [{'name': 'launcher', 'image': 'busybox',
                                'workingDir': work,
                                'command': ['/bin/sh', '-c', cmd]}]}}},
            'Worker': {'replicas': int(workers), 'template': {'spec': {
                'containers': [{'name': 'worker',
                                'image': 'busybox'}]}}}}}}))
EOF
}

# create NAME COMMAND [PARTITION|- [WORKERS]]: prints the MPIJob's uid.
# Partition gpu (the default) runs in the cluster, "-" on Slurm.
create() {
	mpijob "$1" "$2" "${3:-gpu}" "${4:-2}" >"$tmp/$1.json"
	kube create "$tmp/$1.json" || die "create MPIJob $1"
}

twins() { kube names "hpcbridge.io/twin-of=$1"; } # UID
ntwins() { twins "$1" | grep -c . || true; }
nslurm() { slurm_ids "$1" | grep -c . || true; }
sql() { sqlite3 -readonly "$db" "$@"; }
job_of() { sql "SELECT id FROM jobs WHERE k8s_name = '$1' ORDER BY id DESC LIMIT 1"; }

# Start hpcbridged again (only it: the rest runs), with $1 as its failpoint.
start_daemon() {
	HPCBRIDGE_FAILPOINT=${1:-} bash "$src/scripts/sandbox.sh" up "$box" \
		"$build" >/dev/null 2>>"$tmp/up.err" ||
		die "daemon restart: $(tail -n 5 "$tmp/up.err")"
}
# Wait (20 s) until MPIJob $1 is gone.
wait_gone() {
	local i
	for i in $(seq 100); do
		kube get "$1" >/dev/null 2>&1 || return 0
		sleep 0.2
	done
	return 1
}
# Wait until the daemon (pid $1) is gone: killed by its failpoint.
wait_dead() {
	local i
	for i in $(seq 300); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.2
	done
	return 1
}
stop_daemon() {
	local pid
	pid=$(daemon_pid)
	kill -TERM "$pid"
	wait_dead "$pid" || die "hpcbridged did not stop"
}

# 1. Placed in the cluster: one twin runs real Open MPI; Running -> Succeeded.
uid=$(create hello 'mpirun --oversubscribe -np 2 sh -c "echo rank \$OMPI_COMM_WORLD_RANK of \$OMPI_COMM_WORLD_SIZE" >twin-hello.out; sleep 4; echo done >>twin-hello.out')
wait_cond hello Running && ok "hello: Running" ||
	bad "hello: not Running: $(kube status hello)"
tw=$(twins "$uid")
[ "$(ntwins "$uid")" = 1 ] && ok "hello: one twin ($tw)" ||
	bad "hello: twins '$tw'"
case $tw in hello-"${uid:0:8}") ok "hello: the twin's name is derived from the original" ;;
*) bad "hello: twin name '$tw' (uid $uid)" ;; esac
kube get "$tw" | /usr/bin/python3 -c '
import json, sys
t = json.load(sys.stdin)
assert "managedBy" not in t["spec"]["runPolicy"], t["spec"]["runPolicy"]
ref = t["metadata"]["ownerReferences"][0]
assert ref["name"] == "hello" and ref["uid"] == sys.argv[1], ref
assert ref["controller"] is False, ref
assert t["metadata"]["labels"]["hpcbridge.io/user"] == sys.argv[2]
' "$uid" "$HB_ORIGIN_USER" && ok "hello: twin without managedBy, owned by the original" ||
	bad "hello: twin $(kube get "$tw")"
[ "$(st hello "'startTime' in s")" = True ] && ok "hello: startTime" ||
	bad "hello: running status $(kube status hello)"
wait_cond hello Succeeded && ok "hello: Succeeded" ||
	bad "hello: not Succeeded: $(kube status hello)"
[ "$(st hello "bool(s.get('startTime')) and bool(s.get('completionTime')) and s['startTime'] <= s['completionTime']")" = True ] &&
	ok "hello: startTime <= completionTime" || bad "hello: $(kube status hello)"
[ "$(st hello "s['replicaStatuses']['Launcher'].get('succeeded')")" = 1 ] &&
	ok "hello: Launcher succeeded 1" || bad "hello: $(kube status hello)"
copied() { # NAME: the twin's conditions, times and Worker replicas
	st "$1" "[s.get(k) for k in ('conditions', 'startTime', 'completionTime')] + [s['replicaStatuses'].get('Worker')]"
}
[ "$(copied hello)" = "$(copied "$tw")" ] &&
	ok "hello: the original's status is the twin's" ||
	bad "hello: $(kube status hello) vs twin $(kube status "$tw")"
grep -qx "rank 0 of 2" "$work/twin-hello.out" &&
	grep -qx "rank 1 of 2" "$work/twin-hello.out" &&
	ok "hello: the twin's launcher ran mpirun -np 2" ||
	bad "hello: output $(cat "$work/twin-hello.out" 2>&1)"
[ "$(nslurm hello)" = 0 ] && ok "hello: no Slurm job" ||
	bad "hello: Slurm jobs $(slurm_ids hello)"
hb=$(job_of hello)
[ "$(sql "SELECT target || ' ' || state FROM jobs WHERE id = '$hb'")" = "kubernetes succeeded" ] &&
	ok "hello: $hb target kubernetes, succeeded" ||
	bad "hello: $(sql "SELECT * FROM jobs WHERE id = '$hb'")"
[ "$(sql "SELECT policy FROM decisions WHERE job_id = '$hb'")" = "$HB_SANDBOX_POLICY" ] &&
	sql "SELECT explanation FROM decisions WHERE job_id = '$hb'" |
	grep -q "^decision: kubernetes" &&
	sql "SELECT inputs FROM decisions WHERE job_id = '$hb'" |
	grep -q '"rule":"gpu-in-cluster"' &&
	ok "hello: its decision and explanation are stored" ||
	bad "hello: decision $(sql "SELECT * FROM decisions WHERE job_id = '$hb'")"
# metered from the twin: its pods' requests for as long as it ran (the
# sandbox's rate card), on the cluster side
read -r tws twe < <(kube status hello | python3 -c '
import json, sys, datetime
s = json.load(sys.stdin)
p = lambda t: int(datetime.datetime.strptime(t, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp())
print(p(s["startTime"]), p(s["completionTime"]))' 2>/dev/null || echo "x x")
[ "$(sql "SELECT group_concat(DISTINCT side) || ' ' || (min(period_start_ms) / 1000) || ' ' || (max(period_end_ms) / 1000) FROM ledger WHERE job_id = '$hb'")" = "kubernetes $tws $twe" ] &&
	[ "$(sql "SELECT sum(cpu_mcore_s) > 0 OR max(period_end_ms) = min(period_start_ms) FROM ledger WHERE job_id = '$hb'")" = 1 ] &&
	ok "hello: metered on the cluster side from $tws to $twe" ||
	bad "hello: ledger $(sql "SELECT side, period_start_ms, period_end_ms, cpu_mcore_s FROM ledger WHERE job_id = '$hb'") for the twin's $tws..$twe"
[ "$(sql "SELECT count(*) FROM events WHERE job_id = '$hb' AND action = 'twin-state'")" -ge 2 ] &&
	ok "hello: the state moves are audit events" ||
	bad "hello: events $(sql "SELECT action, detail FROM events WHERE job_id = '$hb'")"

# 2. A failing twin gives Failed.
uid=$(create failing 'echo about to fail; exit 3')
wait_cond failing Failed && ok "failing: Failed" ||
	bad "failing: $(kube status failing)"
[ "$(sql "SELECT state FROM jobs WHERE id = '$(job_of failing)'")" = failed ] &&
	ok "failing: failed in the store" ||
	bad "failing: $(sql "SELECT * FROM jobs WHERE k8s_name = 'failing'")"

# 3. Deleting the original deletes the twin.
uid=$(create doomed 'echo started; sleep 120')
wait_cond doomed Running || bad "doomed: not Running: $(kube status doomed)"
tw=$(twins "$uid")
[ -n "$tw" ] || bad "doomed: no twin"
kube delete doomed || bad "doomed: delete failed"
wait_gone "$tw" && ok "doomed: deleting the original deleted twin $tw" ||
	bad "doomed: twin $tw still there"
[ "$(sql "SELECT state FROM jobs WHERE id = '$(job_of doomed)'")" = cancelled ] &&
	ok "doomed: cancelled in the store" ||
	bad "doomed: $(sql "SELECT * FROM jobs WHERE k8s_name = 'doomed'")"

# 4. A placement that rejects: Failed with the reason, nothing runs.
create huge 'echo never' long 8 >/dev/null
wait_cond huge Failed || bad "huge: not Failed: $(kube status huge)"
case $(st huge "cond('Failed')") in
"True PlacementRejected "*) ok "huge: Failed, reason PlacementRejected" ;;
*) bad "huge: $(st huge "cond('Failed')")" ;;
esac
[ "$(nslurm huge)" = 0 ] && [ -z "$(kube names 'hpcbridge.io/twin-of' | grep '^huge-' || true)" ] &&
	ok "huge: no Slurm job, no twin" || bad "huge: something ran"

# 5. Killed between storing a job and creating its twin, and between
#    creating the twin and recording it: one twin after the restart.
for fp in origin-stored origin-twin-created; do
	name=tw-${fp#origin-}
	pid=$(daemon_pid)
	kill -TERM "$pid"
	wait_dead "$pid" || die "hpcbridged did not stop"
	start_daemon "$fp"
	pid=$(daemon_pid)
	uid=$(create "$name" 'echo ran >>ran.'"$name"'; sleep 2')
	wait_dead "$pid" && ok "$name: hpcbridged killed at $fp" ||
		bad "$name: hpcbridged did not die at $fp"
	want=1 # the twin exists, not recorded
	[ "$fp" = origin-stored ] && want=0 # stored, no twin yet
	[ "$(ntwins "$uid")" = "$want" ] &&
		ok "$name: $want twin before the restart" ||
		bad "$name: $(ntwins "$uid") twins before the restart, want $want"
	start_daemon
	wait_cond "$name" Succeeded && ok "$name: Succeeded after the restart" ||
		bad "$name: $(kube status "$name")"
	sleep 2 # a later list must not create another
	[ "$(ntwins "$uid")" = 1 ] && ok "$name: exactly one twin" ||
		bad "$name: twins '$(twins "$uid")'"
	[ "$(wc -l <"$work/ran.$name")" = 1 ] && ok "$name: ran once" ||
		bad "$name: ran $(wc -l <"$work/ran.$name") times"
done

# kill -9 while the twin runs: picked up where it was.
uid=$(create tw-survivor 'echo ran >>ran.tw-survivor; sleep 6')
wait_cond tw-survivor Running || bad "tw-survivor: not Running"
pid=$(daemon_pid)
kill -KILL "$pid"
wait_dead "$pid" || die "hpcbridged survived kill -9"
start_daemon
wait_cond tw-survivor Succeeded &&
	ok "tw-survivor: Succeeded after a kill -9 while it ran" ||
	bad "tw-survivor: $(kube status tw-survivor)"
sleep 2
[ "$(ntwins "$uid")" = 1 ] && ok "tw-survivor: exactly one twin" ||
	bad "tw-survivor: twins '$(twins "$uid")'"
[ "$(wc -l <"$work/ran.tw-survivor")" = 1 ] && ok "tw-survivor: ran once" ||
	bad "tw-survivor: ran $(wc -l <"$work/ran.tw-survivor") times"

# 6. The same on Slurm: killed before the submit, and after it before
#    recording it (Slurm has the tagged job): one Slurm job.
for fp in origin-stored origin-submitted; do
	name=sl-${fp#origin-}
	stop_daemon
	start_daemon "$fp"
	pid=$(daemon_pid)
	create "$name" 'echo ran >>ran.'"$name"'; sleep 2' - 1 >/dev/null
	wait_dead "$pid" && ok "$name: hpcbridged killed at $fp" ||
		bad "$name: hpcbridged did not die at $fp"
	want=1 # Slurm has it, the store does not
	[ "$fp" = origin-stored ] && want=0 # stored, not submitted
	n=$(nslurm "$name")
	[ "$n" = "$want" ] && ok "$name: $want Slurm job before the restart" ||
		bad "$name: $n Slurm jobs before the restart, want $want"
	start_daemon
	wait_cond "$name" Succeeded && ok "$name: Succeeded after the restart" ||
		bad "$name: $(kube status "$name")"
	sleep 2
	n=$(nslurm "$name")
	[ "$n" = 1 ] && ok "$name: exactly one Slurm job" ||
		bad "$name: $n Slurm jobs"
	[ "$(wc -l <"$work/ran.$name")" = 1 ] && ok "$name: ran once" ||
		bad "$name: ran $(wc -l <"$work/ran.$name") times"
done

# 7. MPIJobs deleted while hpcbridged is stopped.
create gone-slurm 'echo started; sleep 120' - 1 >/dev/null
uid=$(create gone-twin 'echo started; sleep 120')
wait_cond gone-slurm Running || bad "gone-slurm: not Running"
wait_cond gone-twin Running || bad "gone-twin: not Running"
sid=$(slurm_ids gone-slurm)
tw=$(twins "$uid")
stop_daemon
kube delete gone-slurm || bad "gone-slurm: delete failed"
kube delete gone-twin || bad "gone-twin: delete failed"
sleep 1
[ "$(field "$sid" JobState)" = RUNNING ] &&
	ok "gone-slurm: its Slurm job runs on while the daemon is down" ||
	bad "gone-slurm: Slurm job '$sid' $(field "$sid" JobState)"
start_daemon
wait_slurm "$sid" CANCELLED 150 &&
	ok "gone-slurm: Slurm job $sid cancelled after the restart" ||
	bad "gone-slurm: Slurm job '$sid' $state"
wait_gone "$tw" && ok "gone-twin: its twin $tw deleted after the restart" ||
	bad "gone-twin: twin $tw still there"
for name in gone-slurm gone-twin; do
	id=$(job_of "$name")
	for _ in $(seq 50); do
		[ "$(sql "SELECT state FROM jobs WHERE id = '$id'")" = cancelled ] && break
		sleep 0.2
	done
	[ "$(sql "SELECT state FROM jobs WHERE id = '$id'")" = cancelled ] &&
		ok "$name: $id cancelled in the store" ||
		bad "$name: $(sql "SELECT * FROM jobs WHERE id = '$id'")"
	[ "$(sql "SELECT count(*) FROM events WHERE job_id = '$id' AND action = 'cancel'")" -ge 1 ] &&
		ok "$name: with an audit event" ||
		bad "$name: events $(sql "SELECT action FROM events WHERE job_id = '$id'")"
done
[ "$(kube phase hello)" = Succeeded ] &&
	ok "hello: still Succeeded after the restarts" ||
	bad "hello: $(kube phase hello)"

sandbox_test_end
echo "all placement and recovery checks of managed MPIJobs passed"
