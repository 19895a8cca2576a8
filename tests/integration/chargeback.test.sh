#!/usr/bin/env bash
# chargeback.test.sh - metering end to end in the sandbox (real Slurm
# with slurmdbd over MariaDB, hpcbridged, the emulated cluster running
# burst jobs' MPIJobs), with a rate card of round numbers:
#
#   * a job that stays on Slurm: its ledger entry charges what slurmctld
#     allocated for as long as sacct says it ran (AllocCPUS x ElapsedRaw);
#   * a job that bursts: charged once, on the cluster side, its pods'
#     requests (a 2-CPU worker and the 1-CPU, 1 GiB launcher) for as long
#     as the MPIJob ran; never for its proxy; the proxy's sacct record
#     says what ran remotely;
#   * a job cancelled while it runs: charged what it ran, as sacct says;
#   * an array of two tasks: each task charged as sacct has it, apart;
#   * a job cancelled before it runs: nothing;
#   * `hpcbridge report --reconcile` agrees with sacct (exit 0);
#   * the budget's spend is the ledger's actuals (the placement state's
#     spend for the account equals the ledger's sum);
#   * `hpcbridge jobs` shows each job's elapsed time and cost.
#
# usage: chargeback.test.sh BUILD_DIR SRC_DIR
set -euo pipefail

build=$(cd "${1:?BUILD_DIR}" && pwd)
src=$(cd "${2:?SRC_DIR}" && pwd)
tmp=$(mktemp -d /tmp/hb-charge.XXXXXX)
chmod 755 "$tmp"
export HB_SANDBOX_BACKEND=kubernetes
# In the built-in policy's currency (USD), so that budgets count actuals;
# 3.60 a CPU-hour is 1,000 micro-units a CPU-second.
cat >"$tmp/card.yaml" <<'YAML'
currency: {code: USD, symbol: "$"}
versions:
  - version: test-1
    effective: 2026-01-01
    slurm:
      default: {cpu_hour: 3.60, memory_gb_hour: 0.36}
    kubernetes:
      default: {cpu_hour: 7.20, memory_gb_hour: 0.72}
YAML
export HB_SANDBOX_RATECARD=$tmp/card.yaml
# shellcheck source=lib/sandbox_test.sh
. "$src/tests/integration/lib/sandbox_test.sh"
sandbox_test_up
ok "sandbox up"
hb=$build/bin/hpcbridge
db=$box/state.db
q() { sqlite3 -readonly "$db" "$1"; }

wk=$HB_SANDBOX_WORK
mpicc -O1 -o "$wk/hello" "$src/examples/sandbox/hello.c" ||
	die "mpicc examples/sandbox/hello.c"
chmod 755 "$wk/hello"
# the sandbox's two examples, each running two seconds more, so that the
# resource-seconds are not all zero
for ex in mpi-on-slurm mpi-burst; do
	sed 's|^mpirun .*|&\nsleep 2|' "$src/examples/sandbox/$ex.sh" >"$tmp/$ex.sh"
done
cat >"$tmp/long.sh" <<'EOF'
#!/bin/bash
#SBATCH --job-name=long
#SBATCH --partition=debug
#SBATCH --account=physics
#SBATCH --ntasks=1
#SBATCH --time=5
#SBATCH --output=long-%j.out
sleep 120
EOF

cat >"$tmp/array.sh" <<'EOF'
#!/bin/bash
#SBATCH --job-name=array
#SBATCH --partition=debug
#SBATCH --account=physics
#SBATCH --array=0-1
#SBATCH --ntasks=1
#SBATCH --time=5
#SBATCH --output=array-%A_%a.out
sleep 2
EOF

# the jobs
array=$(submit_user "$tmp/array.sh")
stay=$(submit_user "$tmp/mpi-on-slurm.sh")
burst=$(submit_user "$tmp/mpi-burst.sh")
long=$(submit_user "$tmp/long.sh")
later=$(submit_user "$tmp/long.sh" --begin=now+1hour)
[ -n "$array" ] && [ -n "$stay" ] && [ -n "$burst" ] && [ -n "$long" ] &&
	[ -n "$later" ] ||
	die "sbatch: $(cat "$tmp/sbatch.err" 2>/dev/null)"
for _ in $(seq 300); do
	[ "$(field "$long" JobState)" = RUNNING ] && break
	sleep 0.2
done
[ "$(field "$long" JobState)" = RUNNING ] || die "job $long never ran"
sleep 3
scancel "$long" "$later"
for id in "$stay" "$burst" "$long" "$later"; do
	wait_final "$id" >/dev/null
done
ok "jobs final: $(for id in "$stay" "$burst" "$long" "$later"; do
	printf '%s=%s ' "$id" "$(field "$id" JobState)"; done)"

gw() { gateway_id "$1"; }
g_stay=$(gw "$stay") g_burst=$(gw "$burst") g_long=$(gw "$long")
g_later=$(gw "$later")
# metered: each final job that ran has a cost (up to 30 s: the
# reconciler's poll, the shadow's last poll)
for _ in $(seq 150); do
	n=$(q "SELECT count(DISTINCT job_id) FROM ledger WHERE job_id IN
	  ('$g_stay', '$g_burst', '$g_long')")
	[ "$n" = 3 ] && break
	sleep 0.2
done
[ "$n" = 3 ] && ok "the three jobs that ran are in the ledger" ||
	bad "$n of 3 jobs in the ledger: $(q 'SELECT job_id, side FROM ledger')"

# sum over a job's entries (reversals net out)
sum() { q "SELECT coalesce(sum($2), 0) FROM ledger WHERE job_id = '$1'"; }
# sacct's AllocCPUS and ElapsedRaw of a Slurm job, once it has its end
acct() {
	local l i
	for i in $(seq 150); do
		l=$(sacct -n -P -X -j "$1" -o AllocCPUS,ElapsedRaw,State 2>/dev/null |
			head -n1)
		case $l in *\|COMPLETED | *\|CANCELLED*) break ;; esac
		sleep 0.2
	done
	printf '%s\n' "$l"
}

# 1. on Slurm: CPUs x elapsed, as sacct has them
for pair in "$stay:$g_stay" "$long:$g_long"; do
	id=${pair%%:*} g=${pair#*:}
	IFS='|' read -r cpus secs state < <(acct "$id")
	want=$((cpus * secs * 1000))
	got=$(sum "$g" cpu_mcore_s)
	side=$(q "SELECT group_concat(DISTINCT side) FROM ledger WHERE job_id = '$g'")
	[ "$got" = "$want" ] && [ "$side" = slurm ] && [ "$secs" -gt 0 ] &&
		ok "Slurm job $id ($state): $cpus CPUs x ${secs} s = $got mcore-s, side slurm" ||
		bad "Slurm job $id ($state): ledger $got mcore-s on '$side', sacct $cpus CPUs x ${secs} s = $want"
	amount=$(sum "$g" amount_micros)
	mem=$(sum "$g" mem_mib_s)
	# 1,000 micro-units per CPU-second, 100 per GiB-second, rounded once
	exp=$(( (got + mem * 100 / 1024) ))
	[ "$amount" -gt 0 ] && [ $((amount - exp)) -le 1 ] &&
		[ $((exp - amount)) -le 1 ] &&
		ok "Slurm job $id: $amount micro-units (CPU and memory at test-1)" ||
		bad "Slurm job $id: amount $amount, expected about $exp"
done
[ "$(field "$long" JobState)" = CANCELLED ] &&
	ok "the cancelled job was charged for what it ran" ||
	bad "job $long: $(field "$long" JobState)"

# an array: each task is a Slurm job of its own, and a part of the
# gateway job, charged as sacct has that task
for _ in $(seq 300); do
	[ -z "$(squeue -h -j "$array" 2>/dev/null)" ] && break
	sleep 0.2
done
g_array=$(sacct -n -P -X -j "$array" -o AdminComment | head -n1 |
	sed -n 's/^hpcbridge:\(hb-[0-9]*\).*/\1/p')
for _ in $(seq 150); do
	[ "$(q "SELECT count(DISTINCT part) FROM ledger WHERE job_id = '$g_array'")" = 2 ] && break
	sleep 0.2
done
n=0
while IFS='|' read -r raw cpus secs; do
	[ -n "$raw" ] || continue
	got=$(q "SELECT coalesce(sum(cpu_mcore_s), 0) FROM ledger WHERE
	  job_id = '$g_array' AND part = '$raw'")
	if [ "$got" = $((cpus * secs * 1000)) ] && [ "$secs" -gt 0 ]; then
		n=$((n + 1))
	else
		bad "array task $raw: ledger $got mcore-s, sacct $cpus CPUs x ${secs} s"
	fi
done < <(sacct -n -P -X -j "$array" -o JobIDRaw,AllocCPUS,ElapsedRaw)
[ "$n" = 2 ] && ok "array $array ($g_array): each of its 2 tasks charged as sacct has it" ||
	bad "array $array: $n of 2 tasks charged right: $(q "SELECT part, cpu_mcore_s FROM ledger WHERE job_id = '$g_array'")"

# 2. the burst job: on the cluster side, pods x requests, for as long as
# the MPIJob ran; nothing for its proxy
read -r bs be < <(q "SELECT min(period_start_ms), max(period_end_ms) FROM
  ledger WHERE job_id = '$g_burst' AND reverses IS NULL" | tr '|' ' ')
secs=$(( (be - bs) / 1000 ))
got=$(sum "$g_burst" cpu_mcore_s)
mem=$(sum "$g_burst" mem_mib_s)
side=$(q "SELECT group_concat(DISTINCT side) FROM ledger WHERE job_id = '$g_burst'")
[ "$side" = kubernetes ] && [ "$got" = $((3 * secs * 1000)) ] &&
	[ "$mem" = $((1024 * secs)) ] && [ "$secs" -ge 2 ] &&
	ok "burst job $burst: 3 CPUs (worker 2, launcher 1) and 1024 MiB x ${secs} s, side kubernetes" ||
	bad "burst job $burst: $got mcore-s, $mem MiB-s over ${secs} s on '$side'"
[ "$(q "SELECT count(*) FROM ledger WHERE job_id = '$g_burst' AND side = 'slurm'")" = 0 ] &&
	ok "the proxy is not charged" || bad "the proxy has Slurm-side entries"
l=$(sacct_line "$burst")
case $l in *"|hpcbridge:$g_burst target=kubernetes snap="[0-9]*" orig: "*"; ran on kubernetes: 2 pods, 3 CPUs, 1024 MiB, "*)
	ok "sacct: the proxy's AdminComment says what ran remotely" ;;
*) bad "sacct: proxy record '$l'" ;; esac

# 3. cancelled before it ran: nothing
[ "$(q "SELECT count(*) FROM ledger WHERE job_id = '$g_later'")" = 0 ] &&
	ok "the job cancelled while pending costs nothing" ||
	bad "job $later has ledger entries"

# 4. hpcbridge jobs: elapsed and cost
"$hb" jobs --all >"$tmp/jobs.txt"
for g in "$g_stay" "$g_burst" "$g_long"; do
	line=$(grep "^$g " "$tmp/jobs.txt" || true)
	cost=$(awk '{print $9}' <<<"$line")
	el=$(awk '{print $8}' <<<"$line")
	want=$(sum "$g" amount_micros)
	[ "$cost" = "$(printf '%d.%06d' $((want / 1000000)) $((want % 1000000)))" ] &&
		[[ $el =~ ^[0-9]{2}:[0-9]{2}:[0-9]{2}$ ]] &&
		ok "hpcbridge jobs: $g elapsed $el, cost $cost" ||
		bad "hpcbridge jobs: '$line' (want cost of $want micro-units)"
done

# 5. the report agrees with sacct, job by job
from=$(date -u +%Y-%m-%d)
to=$(date -u -d tomorrow +%Y-%m-%d)
rc=0
"$hb" report --reconcile --from "$from" --to "$to" >"$tmp/rec.txt" 2>&1 || rc=$?
[ "$rc" = 0 ] && ok "report --reconcile agrees with sacct: $(tail -n1 "$tmp/rec.txt")" ||
	bad "report --reconcile (exit $rc): $(cat "$tmp/rec.txt")"

# 6. the budget counts actuals: the account's spend this month is the
# ledger's sum for it (the built-in policy estimates no cost)
"$build/tests/hbcall" "$HPCBRIDGE_SOCKET" '{"op":"placement"}' >"$tmp/pl.json" ||
	bad "placement: $(cat "$tmp/pl.json")"
for acc in physics chemistry; do
	spent=$(python3 - "$tmp/pl.json" "$acc" <<'PY'
import json, sys
from decimal import Decimal
doc = json.load(open(sys.argv[1]))
periods = doc["state"].get("spend", {}).get(sys.argv[2], {})
month = periods.get("month", {})
print(int(sum(Decimal(v) for v in month.values()) * 1000000))
PY
)
	want=$(q "SELECT coalesce(sum(amount_micros), 0) FROM ledger WHERE account = '$acc'")
	[ "$spent" = "$want" ] && [ "$want" -gt 0 ] &&
		ok "budget: $acc spent $spent micro-units this month, the ledger's sum" ||
		bad "budget: $acc spent $spent, the ledger has $want"
done
sandbox_test_end
