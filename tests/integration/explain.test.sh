#!/usr/bin/env bash
# hpcbridge explain and hpcbridge policy check, end to end with --state:
# the six example policies decide what they promise, --json is a document
# with every alternative, --dump-state writes a snapshot that reads back,
# errors name FILE:LINE and key with nothing on stdout, and the same
# inputs always give the same output.
#
# usage: explain.test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
hb=$build/bin/hpcbridge
pol=$src/config/policies
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
passes=0
export -n SBATCH_ACCOUNT SBATCH_PARTITION 2>/dev/null || true

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

# has FILE TEXT: FILE contains TEXT (fixed string)
has() {
	if grep -qF -- "$2" "$1"; then
		ok
	else
		bad "'$2' not in $1:"
		sed 's/^/    /' "$1" | head -12 >&2
	fi
}

explain() { "$hb" explain --no-env -u alice "$@"; }

# --- snapshots and jobs -----------------------------------------------
cat >"$tmp/busy.yaml" <<'EOF'
now: 2026-11-21T08:00:00Z
slurm:
  partitions:
    batch: {expected_start: 6h10m, pending: 42, idle_nodes: 0}
    gpu: {expected_start: 4h, pending: 17, idle_nodes: 0}
kubernetes:
  queues:
    burst: {pending: 0, free: {cpus: 4096, memory: 16Ti, gpus: {a100: 8, h100: 8}}}
    spot: {pending: 0, free: {cpus: 4096, memory: 16Ti}}
    hpc: {pending: 0, free: {cpus: 4096, memory: 16Ti}}
    default: {pending: 0, free: {cpus: 4096, memory: 16Ti}}
    gpu: {pending: 0, free: {cpus: 4096, memory: 16Ti, gpus: {h200: 16}}}
    pilot: {pending: 0, free: {cpus: 4096, memory: 16Ti}}
spend:
  chem:
    month: {slurm: 0, kubernetes: 1999.50}
EOF
cat >"$tmp/idle.yaml" <<'EOF'
now: 2026-11-21T08:00:00Z
slurm:
  partitions:
    batch: {expected_start: 0s, pending: 0, idle_nodes: 64}
EOF
cat >"$tmp/regrid.sh" <<'EOF'
#!/bin/bash
#SBATCH -J era5-regrid
#SBATCH -p batch -N 2 --ntasks-per-node=32 --mem=64G
#SBATCH -t 8:00:00
#SBATCH --deadline=2026-11-21T20:00:00
srun ./regrid
EOF
cat >"$tmp/small.sh" <<'EOF'
#!/bin/bash
#SBATCH -J small -A bio -n 16 -t 4:00:00
srun ./x
EOF
cat >"$tmp/genomes.sh" <<'EOF'
#!/bin/bash
#SBATCH -N 16 --ntasks-per-node=64 -t 1-0
#SBATCH --hpcbridge-data=/lustre/genomes/hg38
srun ./align
EOF
cat >"$tmp/wide.sh" <<'EOF'
#!/bin/bash
#SBATCH -A chem -N 8 --ntasks-per-node=32 -t 10:00:00
srun ./md
EOF
cat >"$tmp/h100.sh" <<'EOF'
#!/bin/bash
#SBATCH -p gpu --gres=gpu:h100:4 -t 2:00:00
python train.py
EOF
cat >"$tmp/mig.sh" <<'EOF'
#!/bin/bash
#SBATCH -p gpu --gres=gpu:1g.10gb:1 -t 1:00:00
python infer.py
EOF
cat >"$tmp/md.sh" <<'EOF'
#!/bin/bash
#SBATCH -J md -A chemistry -n 8 -t 2:00:00
srun ./md
EOF

# --- 1. help, registration, usage ---------------------------------------
expect 0 "$hb" --help && has "$tmp/out" "  explain"
has "$tmp/out" "  policy"
expect 0 "$hb" explain --help && has "$tmp/out" "--dump-state"
expect 0 "$hb" policy --help
expect 2 "$hb" policy || true
expect 2 "$hb" policy frob "$pol/full.yaml" || true
expect 2 "$hb" explain --state "$tmp/busy.yaml" || true
has "$tmp/err" "give one SCRIPT or MANIFEST"
expect 2 "$hb" explain --state "$tmp/busy.yaml" --dump-state "$tmp/md.sh" ||
	true
expect 2 "$hb" explain --seq x --state "$tmp/busy.yaml" "$tmp/md.sh" || true
[ -s "$tmp/out" ] && bad "usage error wrote to stdout" || ok

# without --state the live daemon is asked; with none running, exit 3
# (tests/integration/placement_live.test.sh asks a live one)
expect 3 "$hb" explain --socket "$tmp/none.sock" -p "$pol/full.yaml" \
	"$tmp/md.sh" || true
has "$tmp/err" "is hpcbridged running?"
[ -s "$tmp/out" ] && bad "live-mode error wrote to stdout" || ok

# --- 2. policy check ------------------------------------------------------
for f in "$pol"/*.yaml; do
	expect 0 "$hb" policy check "$f" && has "$tmp/out" ": valid"
done
expect 0 "$hb" policy check "$pol/full.yaml"
has "$tmp/out" "rule physics (line"
has "$tmp/out" "budget: \$5,000.00 per month of Kubernetes spend"
has "$tmp/out" "data /lustre/medical lives on slurm; it never moves"
has "$tmp/out" "gpu: a request for h100 may also run on h200"

printf 'slurm:\n  partitions:\n    gpu:\n      rates:\n        cpu_hour: lots\n' \
	>"$tmp/bad.yaml"
expect 1 "$hb" policy check "$tmp/bad.yaml" || true
has "$tmp/err" "$tmp/bad.yaml:5: slurm.partitions.gpu.rates.cpu_hour: amount 'lots'"
[ -s "$tmp/out" ] && bad "invalid policy wrote to stdout" || ok
printf 'rules:\n  - acount: x\n' >"$tmp/typo.yaml"
expect 1 "$hb" policy check "$tmp/typo.yaml" || true
has "$tmp/err" "typo.yaml:2: rules[0].acount: unknown key"
expect 1 "$hb" policy check "$tmp/none.yaml" || true
has "$tmp/err" "none.yaml: cannot open"

# --- 3. the six policies ---------------------------------------------------
# 1. deadline burst: Slurm would miss 20:00, Kubernetes meets it
expect 0 explain -p "$pol/deadline-burst.yaml" -s "$tmp/busy.yaml" \
	"$tmp/regrid.sh"
has "$tmp/out" "decision: kubernetes (queue burst): Slurm would miss the deadline; Kubernetes meets it"
has "$tmp/out" "Slurm (partition batch): expected start in 6h10m (42 pending), finish in 14h10m, misses the deadline (12h00m) by 2h10m"
has "$tmp/out" "deadline in 12h00m ($tmp/regrid.sh:5)"
# ...and stays when Slurm is idle
expect 0 explain -p "$pol/deadline-burst.yaml" -s "$tmp/idle.yaml" \
	"$tmp/regrid.sh"
has "$tmp/out" "decision: slurm (partition batch): rule defaults prefers Slurm, and it meets the deadline"

# 2. cheaper burst, unless on-prem only (-O sets the account)
expect 0 explain -p "$pol/cheaper-burst.yaml" -s "$tmp/busy.yaml" \
	"$tmp/small.sh"
has "$tmp/out" "decision: kubernetes (queue spot): Kubernetes is the cheaper side"
expect 0 explain -p "$pol/cheaper-burst.yaml" -s "$tmp/busy.yaml" \
	-O --account=defense "$tmp/small.sh"
has "$tmp/out" "decision: slurm (partition batch)"
has "$tmp/out" "not allowed: rule on-prem-only says burst: never"

# 3. data gravity: 40 TB stays with its data
expect 0 explain -p "$pol/data-gravity.yaml" -s "$tmp/busy.yaml" \
	"$tmp/genomes.sh"
has "$tmp/out" "decision: slurm"
has "$tmp/out" "not allowed: 40 TB would move; rule defaults keeps jobs with their data above 1 TB"

# 4. budget: over budget on Kubernetes, too wide for Slurm: rejected
expect 0 explain -p "$pol/budget-cap.yaml" -s "$tmp/busy.yaml" "$tmp/wide.sh"
has "$tmp/out" "decision: reject: no side can run the job, or may take it"
has "$tmp/out" "cannot run the job: 8 nodes, at most 4 per job"
has "$tmp/out" "rule defaults's budget is \$2,000.00 per month; \$1,999.50 spent"

# 5. GPU equivalence: h100 runs on H200, never A100; MIG stays on Slurm
expect 0 explain -p "$pol/gpu-equivalence.yaml" -s "$tmp/busy.yaml" \
	"$tmp/h100.sh"
has "$tmp/out" "decision: kubernetes (queue gpu)"
has "$tmp/out" "4×h200 free now"
has "$tmp/out" "no GPU type that can take the h100 request"
expect 0 explain -p "$pol/gpu-equivalence.yaml" -s "$tmp/busy.yaml" \
	"$tmp/mig.sh"
has "$tmp/out" "decision: slurm (partition gpu)"
has "$tmp/out" "cannot run the job: no MIG profile 1g.10gb"

# 6. migration pilot: some submission counters go to Kubernetes, the same
# counter always the same way
picked=0
for seq in $(seq 0 59); do
	explain -p "$pol/migration-pilot.yaml" -s "$tmp/busy.yaml" --seq "$seq" \
		"$tmp/md.sh" >"$tmp/p1" 2>&1 || bad "pilot seq $seq"
	explain -p "$pol/migration-pilot.yaml" -s "$tmp/busy.yaml" --seq "$seq" \
		"$tmp/md.sh" >"$tmp/p2" 2>&1 || bad "pilot seq $seq"
	cmp -s "$tmp/p1" "$tmp/p2" || bad "pilot seq $seq differs between runs"
	if grep -q "migration pilot" "$tmp/p1"; then
		picked=$((picked + 1))
	fi
done
if [ "$picked" -ge 1 ] && [ "$picked" -le 20 ]; then ok; else
	bad "pilot picked $picked of 60"; fi

# --- 4. --json ---------------------------------------------------------------
expect 0 explain --json -p "$pol/deadline-burst.yaml" -s "$tmp/busy.yaml" \
	"$tmp/regrid.sh"
python3 - "$tmp/out" <<'EOF' && ok || bad "--json document"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["target"] == "kubernetes", d["target"]
assert d["why"] == "deadline"
assert [a["side"] for a in d["alternatives"]] == ["slurm", "kubernetes"]
s, k = d["alternatives"]
assert not s["meets_deadline"] and k["meets_deadline"]
assert s["start_in_s"] == 22200 and s["finish_in_s"] == 22200 + 8 * 3600
assert isinstance(k["cost_micro"], int) and k["cost"].count(".") == 1
assert any(f["factor"] == "late" and f["side"] == "slurm" for f in d["factors"])
assert d["explanation"][0].startswith("decision: kubernetes")
assert d["job"]["name"] == "era5-regrid" and d["job"]["nodes"] == 2
assert d["deadline"] == "2026-11-21T20:00:00Z"
EOF

# --- 5. --dump-state ---------------------------------------------------------
expect 0 "$hb" explain --state "$tmp/busy.yaml" --dump-state
cp "$tmp/out" "$tmp/dump1.yaml"
has "$tmp/dump1.yaml" "expected_start: 6h10m"
expect 0 "$hb" explain --state "$tmp/dump1.yaml" --dump-state
cmp -s "$tmp/out" "$tmp/dump1.yaml" && ok || bad "--dump-state does not read back the same"
expect 0 "$hb" explain --json --state "$tmp/busy.yaml" --dump-state
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["now"]=="2026-11-21T08:00:00Z"' \
	"$tmp/out" && ok || bad "--dump-state --json"

# --- 6. input errors: FILE:LINE, nothing on stdout --------------------------
printf 'now: 2026-11-21T08:00:00Z\nslurm:\n  partitions:\n    b: {pending: many}\n' \
	>"$tmp/badstate.yaml"
expect 1 explain -p "$pol/full.yaml" -s "$tmp/badstate.yaml" "$tmp/md.sh" ||
	true
has "$tmp/err" "badstate.yaml:4: slurm.partitions.b.pending: expected a whole number"
[ -s "$tmp/out" ] && bad "bad snapshot wrote to stdout" || ok
expect 1 explain -p "$tmp/bad.yaml" -s "$tmp/busy.yaml" "$tmp/md.sh" || true
has "$tmp/err" "bad.yaml:5:"
printf '#!/bin/bash\n#SBATCH -t 1:00:00\n#SBATCH --time=abc\n' >"$tmp/badjob.sh"
expect 1 explain -p "$pol/full.yaml" -s "$tmp/busy.yaml" "$tmp/badjob.sh" ||
	true
has "$tmp/err" "badjob.sh:3:"

# --- 7. the same inputs, the same answer ------------------------------------
explain -p "$pol/full.yaml" -s "$tmp/busy.yaml" "$tmp/regrid.sh" >"$tmp/a1"
explain -p "$pol/full.yaml" -s "$tmp/busy.yaml" "$tmp/regrid.sh" >"$tmp/a2"
cmp -s "$tmp/a1" "$tmp/a2" && ok || bad "explain is not repeatable"
explain --json -p "$pol/full.yaml" -s "$tmp/busy.yaml" "$tmp/regrid.sh" \
	>"$tmp/j1"
explain --json -p "$pol/full.yaml" -s "$tmp/busy.yaml" "$tmp/regrid.sh" \
	>"$tmp/j2"
cmp -s "$tmp/j1" "$tmp/j2" && ok || bad "explain --json is not repeatable"

# a manifest is explained too
expect 0 explain -p "$pol/deadline-burst.yaml" -s "$tmp/busy.yaml" \
	"$src/examples/manifests/mpijob-wrf.yaml"
has "$tmp/out" "decision: "

echo "explain: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
