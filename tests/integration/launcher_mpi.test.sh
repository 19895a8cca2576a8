#!/usr/bin/env bash
# launcher_mpi.test.sh - the launcher script against real Open MPI.
#
# A job script whose body uses `srun ./hello`, `mpirun -np 4 ./hello` and
# `mpiexec ./hello` and exports NCCL_DEBUG runs through its launcher script
# (from `hpcbridge translate --to mpijob`, or from a small driver when the
# CLI is not built) with a hostfile `localhost slots=4`.  Each launch must
# start 4 ranks, every rank must see NCCL_DEBUG, srun's ranks must see
# their SLURM_PROCID, and the launcher must exit with the script's code.
#
# Usage: launcher_mpi.test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail

build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
data=$src/tests/integration/data/launcher

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

for tool in mpicc mpirun mpiexec python3; do
	command -v "$tool" >/dev/null ||
		fail "$tool not found (scripts/setup.sh installs Open MPI)"
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hb-launcher-mpi.XXXXXX")
pid=
cleanup() {
	if [ -n "$pid" ]; then
		# timeout leads its own process group: end all of it.
		kill -TERM -- "-$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

mpicc -O1 -o "$tmp/hello" "$data/hello.c"
cp "$data/job.sh" "$tmp/job.sh"
echo "localhost slots=4" >"$tmp/hostfile"
: >"$tmp/podenv"

# The launcher text, as the launcher container gets it.
cli=$build/bin/hpcbridge
if [ -x "$cli" ] && "$cli" translate --help >/dev/null 2>&1; then
	via=cli
	"$cli" translate --with-runtime --to mpijob --format json \
		"$tmp/job.sh" >"$tmp/mpijob.json" ||
		fail "hpcbridge translate --to mpijob failed"
	python3 "$data/launcher_argv.py" "$tmp/mpijob.json" \
		"$tmp/launcher.sh" "$tmp/podenv" "$tmp/runtime.sh" ||
		fail "no sh -c launcher in the MPIJob"
	[ -s "$tmp/runtime.sh" ] ||
		fail "the launcher does not mount the runtime ConfigMap"
else
	via=driver
	lib=$build/lib/libhbtranslate.a
	[ -f "$lib" ] || fail "$lib not built"
	flags=()
	if grep -q '^HB_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null
	then
		flags=(-fsanitize=address,undefined)
	fi
	cc -std=gnu11 -D_GNU_SOURCE "${flags[@]}" -I"$src/include" \
		-o "$tmp/driver" "$data/driver.c" "$lib" \
		$(pkg-config --libs libcjson yaml-0.1)
	"$tmp/driver" "$tmp/job.sh" 4242 1 4 >"$tmp/launcher.sh"
fi
echo "launcher script from the $via: $(wc -c <"$tmp/launcher.sh") bytes"

# The pod's own environment (from the manifest), then what the operator
# and this machine need: the hostfile, and Open MPI run as root on 2 cores.
podenv=()
while IFS= read -r -d '' kv; do
	podenv+=("$kv")
done <"$tmp/podenv"

cd "$tmp"
env -i "${podenv[@]}" PATH=/usr/local/bin:/usr/bin:/bin HOME="$tmp" \
	TMPDIR="$tmp" HPCBRIDGE_HOSTFILE="$tmp/hostfile" \
	HPCBRIDGE_RUNTIME="$tmp/runtime.sh" \
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
	OMPI_MCA_rmaps_base_oversubscribe=1 \
	timeout -k 10 300 /bin/sh -c "$(cat "$tmp/launcher.sh")" \
	</dev/null >"$tmp/out" 2>"$tmp/err" &
pid=$!
status=0
wait "$pid" || status=$?
pid=

echo "--- launcher stdout"
cat "$tmp/out"
echo "--- launcher stderr"
cat "$tmp/err"
echo "---"
[ "$status" -eq 3 ] || fail "launcher exited $status, want the script's 3"

python3 - "$tmp/out" <<'PY' || fail "ranks did not run as expected"
import re
import sys

sections, cur, head = {}, None, None
for line in open(sys.argv[1], encoding='utf-8'):
    line = line.rstrip('\n')
    if line.startswith('job '):
        head = line
    elif line.startswith('== '):
        cur = line[3:]
        sections[cur] = []
    elif line.startswith('hello ') and cur:
        sections[cur].append(dict(kv.split('=', 1)
                                  for kv in line.split()[1:]))

ok = True
def check(cond, msg):
    global ok
    if not cond:
        print('check failed:', msg)
        ok = False

check(head is not None and 'ntasks=4 nodes=1' in head,
      'SLURM_NTASKS/SLURM_JOB_NUM_NODES in the script: %r' % head)
check('done' in sections, 'the script did not run to its end')
for name in ('srun', 'mpirun', 'mpiexec'):
    ranks = sections.get(name, [])
    check(sorted(int(r['rank']) for r in ranks) == [0, 1, 2, 3],
          '%s: ranks %r, want 0..3' % (name, [r['rank'] for r in ranks]))
    check(all(r['size'] == '4' for r in ranks), '%s: size != 4' % name)
    check(all(r['nccl'] == 'INFO' for r in ranks),
          '%s: a rank did not see NCCL_DEBUG=INFO' % name)
for r in sections.get('srun', []):
    check(r['procid'] == r['rank'],
          'srun: SLURM_PROCID %s on rank %s' % (r['procid'], r['rank']))
    check(r['job'] != '-', 'srun: SLURM_JOB_ID not set on a rank')
sys.exit(0 if ok else 1)
PY
grep -q 'srun: --mpi has no effect here' "$tmp/err" ||
	fail "srun did not say that it ignores --mpi"
echo "PASS: srun, mpirun and mpiexec each ran 4 ranks with NCCL_DEBUG"
