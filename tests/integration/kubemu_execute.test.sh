#!/usr/bin/env bash
# kubemu_execute.test.sh - hb-kubemu in execute mode runs real
# hpcbridge-translated MPIJobs with Open MPI on this host.
#
# An unchanged sbatch script that starts a 2-rank MPI program with
# `mpirun -np 2` and with `srun` goes through `hpcbridge translate
# --with-runtime --to mpijob`; python3-kubernetes creates the runtime
# ConfigMap and the MPIJob, follows the launcher pod's log and waits for
# the MPIJob to succeed.  The log must show both ranks of both launches.
# A script that exits 3 must end Failed with exit code 3, and deleting a
# running MPIJob must end its launcher's processes.
#
# Usage: kubemu_execute.test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail

build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
emu=$build/bin/hb-kubemu
# The reference CRDs (ctest passes HB_SHARED_DIR).
crds=${HB_SHARED_DIR:-$src/../shared}/reference/crds
cli=$build/bin/hpcbridge

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

for tool in mpicc mpirun; do
	command -v "$tool" >/dev/null ||
		fail "$tool not found (scripts/setup.sh installs Open MPI)"
done
[ -x "$emu" ] || fail "$emu not built"
[ -x "$cli" ] || fail "$cli not built"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hb-kubemu-exec.XXXXXX")
# the launchers run as the image's user, nobody (the manifests say
# runAsNonRoot and name no user: hpcbridge translate knows none)
chmod 755 "$tmp"
pid=
cleanup() {
	if [ -n "$pid" ]; then
		kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

mpicc -O1 -o "$tmp/hello" "$src/tests/integration/data/launcher/hello.c"

"$emu" --listen 127.0.0.1:0 --port-file "$tmp/port" --crds "$crds" \
	--token "t-$$" \
	--kubeconfig-out "$tmp/kubeconfig" --execute --workdir "$tmp/work" \
	--pod-start-ms 50 --kill-grace-ms 1000 --image-user 65534 \
	>"$tmp/emu.out" 2>"$tmp/emu.err" &
pid=$!
for _ in $(seq 100); do
	[ -s "$tmp/port" ] && break
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
[ -s "$tmp/port" ] || { cat "$tmp/emu.err" >&2; fail "no emulator"; }
port=$(cat "$tmp/port")

# 1. A 2-rank job that succeeds.
cat >"$tmp/hello.sh" <<SCRIPT
#!/bin/bash
#SBATCH --job-name=kubemu-hello
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=2
#SBATCH --time=00:05:00
export NCCL_DEBUG=INFO
echo "job ntasks=\$SLURM_NTASKS nodes=\$SLURM_JOB_NUM_NODES"
echo "== mpirun"
mpirun -np 2 $tmp/hello
echo "== srun"
srun $tmp/hello
echo "== done"
SCRIPT
"$cli" translate -q --with-runtime --to mpijob --format json \
	"$tmp/hello.sh" >"$tmp/hello.json" || fail "hpcbridge translate"
/usr/bin/python3 "$src/tests/integration/kubemu_execute.py" \
	"$tmp/kubeconfig" "$tmp/hello.json" Succeeded "$tmp/hello.log" || {
	echo "--- log"
	cat "$tmp/hello.log" || true
	tail -20 "$tmp/emu.err"
	fail "the MPIJob did not succeed"
}
echo "--- launcher log"
cat "$tmp/hello.log"
echo "---"
python3 - "$tmp/hello.log" <<'PY' || fail "ranks did not run as expected"
import sys
sections, cur = {}, None
for line in open(sys.argv[1], encoding='utf-8'):
    line = line.rstrip('\n')
    if line.startswith('== '):
        cur = line[3:]
        sections[cur] = []
    elif line.startswith('hello ') and cur:
        sections[cur].append(dict(kv.split('=', 1)
                                  for kv in line.split()[1:]))
ok = 'done' in sections
for name in ('mpirun', 'srun'):
    ranks = sections.get(name, [])
    got = sorted(int(r['rank']) for r in ranks)
    if got != [0, 1] or any(r['size'] != '2' for r in ranks):
        print('%s: ranks %r' % (name, got))
        ok = False
    if any(r['nccl'] != 'INFO' for r in ranks):
        print('%s: a rank did not see NCCL_DEBUG' % name)
        ok = False
sys.exit(0 if ok else 1)
PY
grep -q "job ntasks=2 nodes=1" "$tmp/hello.log" ||
	fail "the script did not see its Slurm environment"

# 2. A job whose script fails: the MPIJob fails with the exit code.
cat >"$tmp/fail.sh" <<'SCRIPT'
#!/bin/bash
#SBATCH --job-name=kubemu-fail
#SBATCH --ntasks=1
echo "about to fail"
exit 3
SCRIPT
"$cli" translate -q --with-runtime --to mpijob --format json \
	"$tmp/fail.sh" >"$tmp/fail.json" || fail "hpcbridge translate"
/usr/bin/python3 "$src/tests/integration/kubemu_execute.py" \
	"$tmp/kubeconfig" "$tmp/fail.json" Failed:3 "$tmp/fail.log" ||
	fail "the failing MPIJob did not end Failed with code 3"
grep -q "about to fail" "$tmp/fail.log" || fail "the failing job's log"

# 3. Deleting a running MPIJob ends its launcher's processes.
cat >"$tmp/sleep.sh" <<'SCRIPT'
#!/bin/bash
#SBATCH --job-name=kubemu-sleep
#SBATCH --ntasks=1
echo "sleeping"
sleep 300
SCRIPT
"$cli" translate -q --with-runtime --to mpijob --format json \
	"$tmp/sleep.sh" >"$tmp/sleep.json" || fail "hpcbridge translate"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(json.dumps([x for x in d if x["kind"] == "MPIJob"][0]))' \
	"$tmp/sleep.json" >"$tmp/sleep-job.json"
tok="Authorization: Bearer t-$$"
base="http://127.0.0.1:$port"
curl -sf -H "$tok" -H 'Content-Type: application/json' \
	--data @"$tmp/sleep-job.json" \
	"$base/apis/kubeflow.org/v2beta1/namespaces/default/mpijobs" \
	>/dev/null || fail "creating the sleeping MPIJob"
lpid=
for _ in $(seq 100); do
	lpid=$(curl -sf -H "$tok" "$base/api/v1/namespaces/default/pods?labelSelector=training.kubeflow.org/job-name%3Dkubemu-sleep,training.kubeflow.org/job-role%3Dlauncher" |
		python3 -c '
import json, sys
for p in json.load(sys.stdin)["items"]:
    for c in p["status"].get("containerStatuses") or []:
        cid = c.get("containerID", "")
        if "running" in c["state"] and cid.startswith("kubemu://"):
            print(cid[len("kubemu://"):])')
	[ -n "$lpid" ] && break
	sleep 0.1
done
[ -n "$lpid" ] || fail "the sleeping launcher did not start"
kill -0 "$lpid" || fail "launcher process $lpid is not running"
curl -sf -H "$tok" -X DELETE \
	"$base/apis/kubeflow.org/v2beta1/namespaces/default/mpijobs/kubemu-sleep" \
	>/dev/null || fail "deleting the MPIJob"
for _ in $(seq 50); do
	kill -0 "$lpid" 2>/dev/null || break
	sleep 0.1
done
! kill -0 "$lpid" 2>/dev/null || fail "launcher $lpid survived the deletion"

kill -TERM "$pid"
wait "$pid" || fail "the emulator exited with $? on SIGTERM"
pid=
if grep -q "ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error:" "$tmp/emu.err"; then
	cat "$tmp/emu.err" >&2
	fail "the sanitizers reported errors"
fi
echo "PASS: hpcbridge MPIJobs ran with Open MPI in hb-kubemu"
