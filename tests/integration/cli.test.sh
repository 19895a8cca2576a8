#!/usr/bin/env bash
# The hpcbridge translate command-line contract: exit codes, error
# locations on stderr with nothing on stdout, detection of the input kind,
# streams and arrays for several documents, and --explain.
#
# usage: cli.test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
hb=$build/bin/hpcbridge
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
passes=0

ok() { passes=$((passes + 1)); }
bad() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# expect CODE CMD... : run, keep stdout/stderr in $tmp/out, $tmp/err
expect() {
	local want=$1 got=0
	shift
	"$@" >"$tmp/out" 2>"$tmp/err" || got=$?
	if [ "$got" -ne "$want" ]; then
		bad "exit $got, want $want: $*"
		sed 's/^/    stderr: /' "$tmp/err" | head -5 >&2
		return 1
	fi
	ok
}

# 1. help and version
expect 0 "$hb" --help && grep -q '^  translate' "$tmp/out" && ok ||
	bad "--help lists translate"
expect 0 "$hb" --version && grep -qE '^hpcbridge [0-9]+\.[0-9]+' "$tmp/out" &&
	ok || bad "--version"
expect 0 "$hb" translate --help && grep -q -- '--explain' "$tmp/out" && ok ||
	bad "translate --help"

# 2. usage errors exit 2
expect 2 "$hb" || true
expect 2 "$hb" frobnicate || true
expect 2 "$hb" translate || true
expect 2 "$hb" translate --to pod "$src/examples/sbatch/mpi-hello.sh" || true
expect 2 "$hb" translate --format xml "$src/examples/sbatch/mpi-hello.sh" ||
	true
grep -q "unknown format 'xml'" "$tmp/err" && ok || bad "format message"

expect 2 "$hb" translate - - </dev/null &&
	grep -q "given more than once" "$tmp/err" && ok || bad "'-' twice"

# 3. input errors: exit 1, FILE:LINE on stderr, nothing on stdout
printf '#!/bin/bash\n#SBATCH -N 2\n#SBATCH --frobnicate=3\nhostname\n' \
	>"$tmp/unknown.sh"
printf '#!/bin/bash\r\n#SBATCH -N 2\r\nhostname\r\n' >"$tmp/dos.sh"
printf '#!/bin/bash\n#SBATCH --time=abc\nhostname\n' >"$tmp/time.sh"
printf '#!/bin/bash\n#SBATCH --mem=4G\n#SBATCH --mem-per-cpu=1G\nx\n' \
	>"$tmp/mem.sh"
printf '#!/bin/bash\n#PBS -l walltime=xx\nhostname\n' >"$tmp/pbs.pbs"
for f in unknown.sh:3 time.sh:2 mem.sh:3 pbs.pbs:2; do
	file=${f%%:*}
	line=${f##*:}
	expect 1 "$hb" translate "$tmp/$file" || continue
	[ ! -s "$tmp/out" ] && ok || bad "$file: stdout not empty"
	grep -q "^$tmp/$file:$line: " "$tmp/err" && ok ||
		bad "$file: stderr lacks FILE:$line: ($(cat "$tmp/err"))"
done
expect 1 "$hb" translate "$tmp/dos.sh" && [ ! -s "$tmp/out" ] && ok ||
	bad "DOS line breaks rejected with empty stdout"
grep -q "^$tmp/dos.sh:1: .*DOS" "$tmp/err" && ok ||
	bad "dos: message ($(cat "$tmp/err"))"
expect 1 "$hb" translate "$tmp/nonexistent.sh" &&
	grep -q "nonexistent.sh: cannot open" "$tmp/err" && ok ||
	bad "missing file"
# A good input followed by a bad one: still nothing on stdout.
expect 1 "$hb" translate "$src/examples/sbatch/mpi-hello.sh" \
	"$tmp/unknown.sh" && [ ! -s "$tmp/out" ] && ok ||
	bad "partial output written before a failing input"
# A manifest without apiVersion is read as a manifest, and says so.
printf 'kind: MPIJob\nmetadata:\n  name: x\n' >"$tmp/noapi.yaml"
expect 1 "$hb" translate --to sbatch "$tmp/noapi.yaml" &&
	grep -q "noapi.yaml: apiVersion: .* is not kubeflow.org/v2beta1" \
		"$tmp/err" && ok || bad "manifest without apiVersion ($(cat "$tmp/err"))"
# A bad config names its key.
printf 'kubernetes:\n  namespace: Bad_Name\n' >"$tmp/bad.yaml"
expect 1 "$hb" translate --config "$tmp/bad.yaml" \
	"$src/examples/sbatch/mpi-hello.sh" &&
	grep -q "bad.yaml:2: kubernetes.namespace" "$tmp/err" && ok ||
	bad "config error names file:line and key ($(cat "$tmp/err"))"

# 4. output shapes
expect 0 "$hb" translate "$src/examples/sbatch/mpi-hello.sh" &&
	grep -q '^kind: MPIJob$' "$tmp/out" && ! grep -q '^---' "$tmp/out" &&
	ok || bad "one input, one YAML document"
expect 0 "$hb" translate -q "$src/examples/sbatch/mpi-hello.sh" \
	"$src/examples/pbs/torque-mpi.pbs" &&
	[ "$(grep -c '^---$' "$tmp/out")" -eq 2 ] && ok ||
	bad "two inputs, a YAML stream of two"
expect 0 "$hb" translate -q --format json \
	"$src/examples/sbatch/mpi-hello.sh" "$src/examples/pbs/torque-mpi.pbs" &&
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1]));
assert isinstance(d, list) and len(d) == 2, d
assert {x["kind"] for x in d} == {"MPIJob"}' "$tmp/out" && ok ||
	bad "two inputs, a JSON array of two"
# An array job: one MPIJob per index, named with the index.
expect 0 "$hb" translate -q --format json \
	"$src/examples/sbatch/param-sweep.sh" &&
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1]));
assert len(d) == 16, len(d)
names = [x["metadata"]["name"] for x in d]
assert names[0] == "sweep-0" and names[15] == "sweep-15", names' "$tmp/out" &&
	ok || bad "array job expands to 16 MPIJobs"

# 5. detection and the reverse direction
expect 0 "$hb" translate -q --to jobspec --format json \
	"$src/examples/pbs/torque-mpi.pbs" &&
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1]));
assert d["source"] == "pbs", d["source"]
assert d["nodes_min"] == 2 and d["ntasks_per_node"] == 16
assert d["mem"] == {"kind": "job", "mb": 32768}, d["mem"]' "$tmp/out" && ok ||
	bad "PBS detected and read"
"$hb" translate -q "$src/examples/sbatch/gpu-train.sh" >"$tmp/m.yaml"
expect 0 "$hb" translate -q --to sbatch "$tmp/m.yaml" &&
	grep -q '^#SBATCH --nodes=4' "$tmp/out" && ok ||
	bad "MPIJob back to sbatch"
cp "$tmp/out" "$tmp/back.sh"
"$hb" translate -q --to jobspec --format json "$src/examples/sbatch/gpu-train.sh" \
	>"$tmp/j1.json"
"$hb" translate -q --to jobspec --format json "$tmp/back.sh" >"$tmp/j2.json"
python3 - "$tmp/j1.json" "$tmp/j2.json" <<'PY' && ok || bad "round trip"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
for k in ("name", "account", "partition", "nodes_min", "ntasks_per_node",
          "cpus_per_task", "mem", "gpus", "time_limit", "constraint",
          "checkpoint_dir", "signal", "shape"):
    assert a.get(k) == b.get(k), (k, a.get(k), b.get(k))
PY

# The image follows the job's MPI implementation unless a map says more.
expect 0 "$hb" translate -q --format json "$src/examples/sbatch/param-sweep.sh" &&
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
imgs = {x["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["image"] for x in d}
assert imgs == {"mpioperator/intel:v0.6.0"}, imgs' "$tmp/out" && ok ||
	bad "Intel MPI job gets the Intel image"
printf 'kubernetes:\n  images:\n    mpi:\n      mpich: null\n' >"$tmp/nompich.yaml"
expect 0 "$hb" translate -q --config "$tmp/nompich.yaml" \
	"$src/examples/pbs/torque-mpi.pbs" &&
	grep -q 'image: mpioperator/openmpi:v0.6.0' "$tmp/out" && ok ||
	bad "a null MPI image falls through to default_image"

# 6. --explain lists every directive with its line
expect 0 "$hb" translate --explain "$src/examples/sbatch/mpi-hello.sh" &&
	grep -q 'mpi-hello.sh:3 .*--job-name=mpi-hello' "$tmp/out" &&
	grep -q 'mail_type .*carried' "$tmp/out" && ok ||
	bad "--explain text ($(head -20 "$tmp/out"))"
n_directives=$(grep -c '^#SBATCH' "$src/examples/sbatch/mpi-hello.sh")
n_lines=$(grep -cE '^[^ ].*:[0-9]+ +--' "$tmp/out" || true)
[ "$n_lines" -eq "$n_directives" ] && ok ||
	bad "--explain shows $n_lines of $n_directives directives"
expect 0 "$hb" translate --explain --format json \
	"$src/examples/sbatch/mpi-hello.sh" &&
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1]));
fates = [f["fate"] for e in d["entries"] for f in e["fields"]]
assert "mapped" in fates and all(f in ("mapped","carried","partial","dropped") for f in fates)' \
	"$tmp/out" && ok || bad "--explain JSON"

# Without --with-runtime, stderr names the ConfigMap the MPIJobs mount.
expect 0 "$hb" translate "$src/examples/sbatch/mpi-hello.sh" &&
	grep -q "mount the launcher runtime from ConfigMap hpcbridge-launcher-" \
		"$tmp/err" && ok || bad "runtime ConfigMap hint"
expect 0 "$hb" translate --with-runtime --format json \
	"$src/examples/sbatch/mpi-hello.sh" &&
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
assert [x["kind"] for x in d] == ["ConfigMap", "MPIJob"], d
cm, job = d
vol = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["volumes"][0]
assert vol["configMap"]["name"] == cm["metadata"]["name"], vol
assert cm["immutable"] is True and "runtime.sh" in cm["data"]' "$tmp/out" &&
	! grep -q "create it once" "$tmp/err" && ok ||
	bad "--with-runtime puts the ConfigMap first"

# 7. stdin
expect 0 "$hb" translate -q --to jobspec --format json - \
	<"$src/examples/sbatch/mpi-hello.sh" &&
	grep -q '"source_name": "<stdin>"' "$tmp/out" && ok || bad "stdin"

echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
