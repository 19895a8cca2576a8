#!/usr/bin/env bash
# hpcbridge report on a store filled by ledger_fill (the real schema, made
# by the store at open): table, CSV and JSON by every key, their totals
# (the lines add up to the total to the micro-unit), month lines across
# the October/November boundary, RFC 4180 quoting of odd account names,
# errors that name the option or file, and the file left unchanged.
#
# usage: report.test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
hb=$build/bin/hpcbridge
fill=$build/tests/ledger_fill
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
passes=0

ok() { passes=$((passes + 1)); }
bad() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
check() { if eval "$1"; then ok; else bad "$2"; fi; }

db=$tmp/state.db
"$fill" "$db"
sum_before=$(sha256sum <"$db")

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

# Every key, every format: the CSV's amount_micros column and the JSON's
# lines add up to the JSON total; the table's TOTAL line says the same.
for by in account user partition queue side month; do
	expect 0 "$hb" report --state "$db" --by "$by" --format json || continue
	cp "$tmp/out" "$tmp/$by.json"
	python3 - "$tmp/$by.json" <<'PY' || bad "json sums by $by"
import json, sys
r = json.load(open(sys.argv[1]))
t = r["total"]
assert t["amount_micros"] == 43000000, t
assert t["amount"] == "43.000000", t
assert t["jobs"] == 6 and t["entries"] == 8, t
assert sum(l["amount_micros"] for l in r["lines"]) == t["amount_micros"]
assert sum(l["entries"] for l in r["lines"]) == t["entries"]
assert sum(l["egress_bytes"] for l in r["lines"]) == t["egress_bytes"]
assert t["gpu_hours"] == {"a100": 3.0, "h100": 2.0}, t
assert t["core_hours"] == 50.0, t
PY
	ok
	expect 0 "$hb" report --state "$db" --by "$by" --format csv || continue
	tr -d '\r' <"$tmp/out" >"$tmp/$by.csv"
	python3 - "$tmp/$by.csv" "$by" <<'PY' || bad "csv by $by"
import csv, sys
from decimal import Decimal
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
assert rows and sys.argv[2] in rows[0], rows[:1]
assert sum(int(r["amount_micros"]) for r in rows) == 43000000
assert sum(Decimal(r["amount"]) for r in rows) == Decimal("43.000000")
for r in rows:
    assert Decimal(r["amount"]) * 1000000 == int(r["amount_micros"]), r
PY
	ok
	expect 0 "$hb" report --state "$db" --by "$by" || continue
	check "grep -Eq '^TOTAL +6 +50\\.00 .* 43\\.000000  2026-10,2026-11\$' '$tmp/out'" \
		"table total by $by: $(tail -1 "$tmp/out")"
done

# CSV: a comma and a quote in account names are quoted as RFC 4180 says;
# lines end in CRLF; the header comes first.
check "grep -q '^\"chem,bio\",1,1,' '$tmp/account.csv'" "comma quoted"
check "grep -q '^\"quote\"\"d\",1,1,' '$tmp/account.csv'" "quote doubled"
check "head -1 '$tmp/account.csv' | grep -q '^account,jobs,entries,core_hours,gpu_hours_a100,gpu_hours_h100,'" "csv header"
"$hb" report --state "$db" --format csv >"$tmp/raw.csv"
check "[ \$(grep -c \$'\\r\$' '$tmp/raw.csv') -eq \$(wc -l <'$tmp/raw.csv') ]" "CRLF line ends"

# Months: the boundary splits October (22:00-23:00 on the 31st) from
# November, in UTC.
check "grep -q '^2026-10,1,2,12.000000,.*,6.000000,6000000,' '$tmp/month.csv'" "october line"
check "grep -q '^2026-11,5,6,38.000000,.*,37.000000,37000000,' '$tmp/month.csv'" "november line"
# A window: November only, given as months; as dates; as RFC 3339.
expect 0 "$hb" report --state "$db" --from 2026-11 --to 2026-12 --format json
check "python3 -c 'import json,sys; assert json.load(open(\"$tmp/out\"))[\"total\"][\"amount_micros\"] == 37000000'" "november window"
expect 0 "$hb" report --state "$db" --from 2026-10-01 --to 2026-11-01 --format json
check "python3 -c 'import json,sys; assert json.load(open(\"$tmp/out\"))[\"total\"][\"amount_micros\"] == 6000000'" "october window"
expect 0 "$hb" report --state "$db" --from 2026-10-31T23:30:00Z --to 2026-11-01T00:00:01Z --format csv
check "[ \$(grep -c '' '$tmp/out') -eq 3 ] && grep -q '^physics,' '$tmp/out'" "RFC 3339 window: $(cat "$tmp/out")"

# Errors name the option or the file; nothing on stdout.
expect 2 "$hb" report --state "$db" --by colour
check "grep -q -- '--by: .colour. is none of account' '$tmp/err' && [ ! -s '$tmp/out' ]" "bad --by"
expect 2 "$hb" report --state "$db" --from 2026-13-01
check "grep -q -- '--from: .2026-13-01.' '$tmp/err'" "bad --from"
expect 2 "$hb" report --state "$db" --format xml
check "grep -q -- '--format: .xml.' '$tmp/err'" "bad --format"
expect 2 "$hb" report --state "$db" --from 2026-12 --to 2026-11
check "grep -q -- '--to: not after --from' '$tmp/err'" "to before from"
expect 1 "$hb" report --state "$tmp/missing.db"
check "grep -q '$tmp/missing.db: open: ' '$tmp/err' && [ ! -e '$tmp/missing.db' ]" "missing store: $(cat "$tmp/err")"
printf 'daemon:\n  state: %s\n' "$db" >"$tmp/hb.yaml"
expect 0 "$hb" report --config "$tmp/hb.yaml" --format json
check "cmp -s '$tmp/out' '$tmp/account.json'" "--config reads daemon.state"
printf 'daemon:\n  state: [\n' >"$tmp/bad.yaml"
expect 1 "$hb" report --config "$tmp/bad.yaml"
check "grep -q '$tmp/bad.yaml' '$tmp/err'" "bad config named: $(cat "$tmp/err")"

# Read-only: the database file is exactly as it was.
check "[ \"\$(sha256sum <'$db')\" = '$sum_before' ]" "store file changed"

echo "report.test.sh: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
