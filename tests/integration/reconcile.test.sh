#!/usr/bin/env bash
# reconcile.test.sh - hpcbridge report --reconcile against a real slurmdbd.
#
# A private Slurm with accounting (MariaDB and slurmdbd, lib/slurm.sh) runs
# three short sbatch jobs, each tagged in its admin comment as hpcbridged
# tags them: two Slurm-side jobs (one with a typed GPU) and a burst job's
# proxy.  A store (tests/integration/slurmc_ledger.c) gets the first
# job's ledger entry with start, end and CPUs as sacct reports them, and
# the second's with an elapsed 60 s too long.  Then:
#
#   * --reconcile reports exactly the second job (elapsed and CPU-hours),
#     lists the proxy apart as charged on the cluster side, states the
#     tolerances, and exits 1; the same in CSV and JSON;
#   * a store that charges both as sacct has them reconciles: exit 0;
#   * the GPU job's TRES (AccountingStorageTRES names gres/gpu) reach the
#     Slurm client as one typed GPU, not two;
#   * accounting not configured, and slurmdbd not answering: exit 2 with
#     a message that says which.
#
# usage: reconcile.test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail

build=${1:?usage: reconcile.test.sh BUILD_DIR SOURCE_DIR}
src=${2:?usage: reconcile.test.sh BUILD_DIR SOURCE_DIR}
build=$(cd "$build" && pwd -P)
src=$(cd "$src" && pwd -P)
hb=$build/bin/hpcbridge
fill=$build/tests/slurmc_ledger
probe=$build/tests/slurmc_probe

# shellcheck source=lib/slurm.sh
. "$src/tests/integration/lib/slurm.sh"

fails=0
passes=0
ok() { passes=$((passes + 1)); }
bad() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
expect_eq() {
	if [ "$1" = "$2" ]; then ok; else bad "$3: got '$1', want '$2'"; fi
}

for p in "$hb" "$fill" "$probe"; do
	[ -x "$p" ] || { echo "FAIL: $p not built" >&2; exit 1; }
done

tmp=$(mktemp -d /tmp/hb-reconcile.XXXXXX)
chmod 755 "$tmp"
cleanup() {
	slurm_down "$tmp/slurm" || true
	if [ "$fails" = 0 ]; then
		slurm_purge "$tmp/slurm" >/dev/null 2>&1 || true
		rm -rf "$tmp"
	else
		echo "reconcile: files kept in $tmp" >&2
	fi
}
trap cleanup EXIT

export HB_SLURM_ACCOUNTING=1
export HB_SLURM_EXTRA_CONF="AccountingStorageTRES=gres/gpu,gres/gpu:a100,gres/gpu:h100"
HB_SLURM_READY_TIMEOUT=90 slurm_up "$tmp/slurm"
ok
mkdir -p "$tmp/work"
db=$tmp/state.db

# submit TARGET ARGS...: a held job tagged as hpcbridged tags it, then
# released; prints "SLURM_ID HB_ID"
submit() {
	local target=$1 id hbid
	shift
	id=$(sbatch --parsable --hold -A physics -D "$tmp/work" -o /dev/null \
		"$@") || return 1
	hbid=$("$fill" "$db" job "$target" "$id" root physics) || return 1
	scontrol update jobid="$id" \
		admincomment="hpcbridge:$hbid target=$target" || return 1
	scontrol release "$id" || return 1
	echo "$id $hbid"
}
read -r id_a hb_a < <(submit slurm -c 2 --gres=gpu:a100:1 --wrap 'sleep 3')
read -r id_b hb_b < <(submit slurm -c 1 --wrap 'sleep 2')
read -r id_p hb_p < <(submit kubernetes -c 1 -p burst --wrap 'sleep 1')
[ -n "$id_a" ] && [ -n "$id_b" ] && [ -n "$id_p" ] && ok ||
	{ bad "sbatch: '$id_a' '$id_b' '$id_p'"; exit 1; }

# acct ID: "State|Start|End|ElapsedRaw|AllocCPUS|AdminComment" once
# slurmdbd has the job's end and its tag (they arrive apart)
acct() {
	local l i
	for i in $(seq 300); do
		l=$(SLURM_TIME_FORMAT=%s sacct -n -P -X -j "$1" \
			-o State,Start,End,ElapsedRaw,AllocCPUS,AdminComment \
			2>/dev/null | head -n1)
		case $l in COMPLETED\|*\|*\|*\|*\|hpcbridge:*) break ;; esac
		sleep 0.2
	done
	printf '%s\n' "$l"
}
IFS='|' read -r st_a start_a end_a el_a cpus_a _ < <(acct "$id_a")
IFS='|' read -r st_b start_b end_b el_b cpus_b _ < <(acct "$id_b")
IFS='|' read -r st_p _ < <(acct "$id_p")
expect_eq "$st_a $st_b $st_p" "COMPLETED COMPLETED COMPLETED" \
	"sacct: the three jobs completed, tagged"
expect_eq "$cpus_a" 2 "sacct: job A's AllocCPUS"
expect_eq "$((end_a - start_a))" "$el_a" "sacct: job A's ElapsedRaw"

# The ledger: A as sacct has it, B 60 s too long, nothing for the proxy
# (a burst job is charged on the cluster side).
"$fill" "$db" charge "$hb_a" "$start_a" "$end_a" "$cpus_a"
"$fill" "$db" charge "$hb_b" "$start_b" $((end_b + 60)) "$cpus_b"
from=$(date -u -d "@$((start_a - 3600))" +%Y-%m-%dT%H:%M:%SZ)
to=$(date -u -d "@$((end_b + 3600))" +%Y-%m-%dT%H:%M:%SZ)

# reconcile CODE FORMAT [STORE]: run it; output in $tmp/out, $tmp/err
reconcile() {
	local want=$1 fmt=$2 store=${3:-$db} got=0
	"$hb" report --reconcile --state "$store" --from "$from" --to "$to" \
		--format "$fmt" >"$tmp/out" 2>"$tmp/err" || got=$?
	if [ "$got" = "$want" ]; then ok; else
		bad "--reconcile --format $fmt: exit $got, want $want"
		sed 's/^/    /' "$tmp/out" "$tmp/err" >&2
	fi
}

reconcile 1 table
cat "$tmp/out"
grep -q "^Tolerances: elapsed within 2 s or 0.5% (whichever is larger), CPU-hours within 0.5%.$" \
	"$tmp/out" && ok || bad "table: no tolerance line"
grep -q "^Differences beyond the tolerances: 1$" "$tmp/out" && ok ||
	bad "table: not one difference"
grep -q "^$hb_b  *$id_b .* elapsed,cpu_hours$" "$tmp/out" && ok ||
	bad "table: job B ($hb_b, $id_b) not listed as differing"
grep -q "^$hb_a " "$tmp/out" && bad "table: job A listed" || ok
grep -q "^Burst proxies, charged on the cluster side (not differences): 1$" \
	"$tmp/out" && ok || bad "table: the proxy not listed apart"
grep -q "^$hb_p  *$id_p " "$tmp/out" && ok || bad "table: proxy $hb_p"
grep -q "^Within the tolerances: 1 job(s); differences: 1$" "$tmp/out" &&
	ok || bad "table: summary"

reconcile 1 json
python3 - "$tmp/out" "$hb_a" "$hb_b" "$hb_p" "$id_b" "$el_b" <<'PY' &&
import json, sys
r = json.load(open(sys.argv[1]))
a, b, p, id_b, el_b = sys.argv[2:7]
assert r["matched"] == 1 and r["differences"] == 1, r
assert [d["job_id"] for d in r["differs"]] == [b], r["differs"]
d = r["differs"][0]
assert d["slurm_job_id"] == int(id_b) and d["differs"] == "elapsed,cpu_hours", d
assert d["sacct_elapsed_s"] == int(el_b), d
assert abs(d["ledger_elapsed_s"] - (int(el_b) + 60)) < 0.001, d
assert r["missing_in_accounting"] == [] and r["missing_in_ledger"] == [], r
assert [x["job_id"] for x in r["burst_proxy"]] == [p], r["burst_proxy"]
assert r["tolerance"]["elapsed_s"] == 2, r["tolerance"]
assert r["tolerance"]["elapsed_percent"] == 0.5, r["tolerance"]
assert r["tolerance"]["cpu_hours_percent"] == 0.5, r["tolerance"]
PY
	ok || bad "json: $(cat "$tmp/out")"

reconcile 1 csv
tr -d '\r' <"$tmp/out" >"$tmp/out.csv"
python3 - "$tmp/out.csv" "$hb_b" "$hb_p" <<'PY' && ok || bad "csv: $(cat "$tmp/out.csv")"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
assert [(r["kind"], r["job_id"]) for r in rows] == \
    [("differs", sys.argv[2]), ("burst_proxy", sys.argv[3])], rows
assert rows[0]["tolerance"].startswith("elapsed within 2 s"), rows[0]
PY

# A store that charges both jobs as sacct has them (the same ids, in
# the same order, so that the tags name them): nothing differs.
db2=$tmp/state2.db
expect_eq "$("$fill" "$db2" job slurm "$id_a" root physics) \
$("$fill" "$db2" job slurm "$id_b" root physics) \
$("$fill" "$db2" job kubernetes "$id_p" root physics)" "$hb_a $hb_b $hb_p" \
	"the second store's ids"
"$fill" "$db2" charge "$hb_a" "$start_a" "$end_a" "$cpus_a"
"$fill" "$db2" charge "$hb_b" "$start_b" "$end_b" "$cpus_b"
reconcile 0 table "$db2"
grep -q "^Within the tolerances: 2 job(s); differences: 0$" "$tmp/out" &&
	ok || bad "agreeing store: $(cat "$tmp/out")"

# Job A's GPU, from its TRES (gres/gpu=1 beside gres/gpu:a100=1): one.
"$probe" watch "$id_a" 30 >"$tmp/probe.out" 2>&1 || true
grep -q " gpus=a100:1$" "$tmp/probe.out" && ok ||
	bad "job A's GPU: $(cat "$tmp/probe.out")"

# Accounting not configured: exit 2, saying so.
sed 's/^AccountingStorageType=.*/AccountingStorageType=accounting_storage\/none/' \
	"$SLURM_CONF" >"$tmp/slurm/noacct.conf"
grep -q "^AccountingStorageType=accounting_storage/none" "$tmp/slurm/noacct.conf" &&
	ok || bad "no AccountingStorageType line in $SLURM_CONF"
SLURM_CONF=$tmp/slurm/noacct.conf reconcile 2 table
grep -q "Slurm accounting is not configured" "$tmp/err" && ok ||
	bad "no accounting: $(cat "$tmp/err")"

# slurmdbd gone: exit 2, saying so.
_hbs_stop "$(_hbs_pid_of "$tmp/slurm" slurmdbd)" slurmdbd 10
timeout 120 "$hb" report --reconcile --state "$db" --from "$from" \
	--to "$to" >"$tmp/out" 2>"$tmp/err" && rc=0 || rc=$?
expect_eq "$rc" 2 "slurmdbd down: exit"
grep -q "slurmdbd" "$tmp/err" && ok || bad "slurmdbd down: $(cat "$tmp/err")"

echo "reconcile: $passes passed, $fails failed"
[ "$fails" = 0 ]
