#!/usr/bin/env bash
# hpcbridge report --pilot and --by pilot on a store filled by
# report_fill (every fifth job in the pilot, the one after it in the
# control group, all run and ended, every sixth failed):
#  - the JSON's figures: jobs and successes counted from the fill's rule,
#    the cost per core-hour its amount over its core-hours, rounded half
#    up to the micro-unit, the groups' amounts those of --by pilot;
#  - the table and the CSV say the same as the JSON;
#  - the HTML page is self-contained;
#  - --pilot with --by is a usage error.
#
# usage: report_pilot.test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
hb=$build/bin/hpcbridge
fill=$build/tests/report_fill
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
passes=0
ok() { passes=$((passes + 1)); }
bad() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

db=$tmp/state.db
"$fill" "$db"
win=(--from 2026-10 --to 2026-12)
for f in json csv table html; do
	"$hb" report --state "$db" "${win[@]}" --pilot --format "$f" >"$tmp/pilot.$f" ||
		bad "--pilot --format $f"
done
"$hb" report --state "$db" "${win[@]}" --by pilot --format json >"$tmp/by.json" ||
	bad "--by pilot"

if python3 - "$tmp" <<'PY'; then ok; else bad "pilot figures"; fi
import csv, json, sys
from decimal import Decimal, ROUND_HALF_UP

d = sys.argv[1]
p = json.load(open(d + "/pilot.json"))
by = {l["key"]: l for l in json.load(open(d + "/by.json"))["lines"]}
cells = {(g["group"], g["side"]): g for g in p["groups"]}
assert list(cells) == [("pilot", "slurm"), ("pilot", "kubernetes"),
                       ("control", "slurm"), ("control", "kubernetes")]
# the fill's rule: job i (0..243), day i//4, slot i%4 (slot 1 on
# Kubernetes); i%5 == 0 pilot, 1 control; i%6 == 0 failed
for group, r in (("pilot", 0), ("control", 1)):
    for side in ("slurm", "kubernetes"):
        js = [i for i in range(244) if i % 5 == r and
              (i % 4 % 3 == 1) == (side == "kubernetes")]
        c = cells[(group, side)]
        assert c["jobs"] == len(js), (group, side, c["jobs"], len(js))
        assert c["succeeded"] == sum(1 for i in js if i % 6), c
        rate = (Decimal(c["succeeded"]) / c["jobs"]).quantize(
            Decimal("0.000001"), ROUND_HALF_UP)
        assert c["success_rate"] == str(rate), c
        assert c["median_runtime_ms"] == 3 * 3600 * 1000, c
        waits = sorted(i % 7 * 60000 for i in js)
        n = len(waits)
        med = (waits[(n - 1) // 2] + waits[n // 2]) // 2
        assert c["median_wait_ms"] == med, (c, med)
        per = (Decimal(c["amount_micros"]) / Decimal(c["core_hours"])).quantize(
            Decimal(1), ROUND_HALF_UP)
        assert c["cost_per_core_hour"] == str((per / 1000000).quantize(Decimal("0.000001"))), (c, per)
    # both sides together: the --by pilot line of the group
    amt = sum(cells[(group, s)]["amount_micros"] for s in ("slurm", "kubernetes"))
    jobs = sum(cells[(group, s)]["jobs"] for s in ("slurm", "kubernetes"))
    assert amt == by[group]["amount_micros"], (group, amt, by[group])
    assert jobs == by[group]["jobs"], (group, jobs, by[group])

# the CSV and the table say the same
rows = list(csv.DictReader(open(d + "/pilot.csv", newline="")))
assert [(r["group"], r["side"]) for r in rows] == list(cells)
for r in rows:
    c = cells[(r["group"], r["side"])]
    assert int(r["jobs"]) == c["jobs"] and r["amount"] == c["amount"], (r, c)
    assert r["cost_per_core_hour"] == c["cost_per_core_hour"], (r, c)
    assert Decimal(r["median_wait_s"]) * 1000 == c["median_wait_ms"], (r, c)
table = open(d + "/pilot.table").read().splitlines()
assert table[0].split()[:3] == ["GROUP", "SIDE", "JOBS"], table[0]
for line, c in zip(table[1:], p["groups"]):
    f = line.split()
    assert f[:4] == [c["group"], c["side"], str(c["jobs"]), str(c["succeeded"])], line
    assert f[-2:] == [c["amount"], c["cost_per_core_hour"]], line
PY

# HTML: self-contained, the four rows
if ! grep -qiE '<script|src=|href=|url\(' "$tmp/pilot.html" &&
	[ "$(grep -c '^<tr><td>' "$tmp/pilot.html")" -eq 4 ] &&
	[ "$(grep -c 'data-group=' "$tmp/pilot.html")" -eq 4 ]; then ok; else bad "pilot html"; fi

# --pilot and --by: one or the other
if "$hb" report --state "$db" --pilot --by account >"$tmp/out" 2>"$tmp/err"; then
	bad "--pilot --by accepted"
else
	rc=$?
	[ "$rc" -eq 2 ] && grep -q -- '--pilot and --by' "$tmp/err" && [ ! -s "$tmp/out" ] &&
		ok || bad "--pilot --by: exit $rc, $(cat "$tmp/err")"
fi

echo "report_pilot.test.sh: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
