#!/usr/bin/env bash
# hpcbridge report --format csv opens in a spreadsheet as it is: read
# back with Python's csv module (RFC 4180), on a store filled by
# report_fill whose account and user names look like formulas
# (=HYPERLINK(...), @SUM(A1), -2+3, +cmd):
#  - a header row, then one row per line, every row as wide as it;
#  - every line ends in CRLF;
#  - numbers are plain: counts and micro-units integers, hours and the
#    amount with exactly 6 decimals and a dot, amount = amount_micros;
#  - a text cell that starts with = + - @ gets a leading apostrophe
#    (OWASP's advice against CSV injection), other names are as stored;
#  - the amount_micros column adds up to the JSON total;
#  - with a rate card that names its capacity (--ratecard, or the
#    configuration's chargeback.ratecard), the idle column adds up to the
#    capacity's cost less the jobs', proportionally or evenly.
#
# usage: report_csv.test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
hb=$build/bin/hpcbridge
fill=$build/tests/report_fill
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
passes=0

db=$tmp/state.db
"$fill" "$db"

for by in account user; do
	if ! "$hb" report --state "$db" --by "$by" --format csv >"$tmp/$by.csv" ||
		! "$hb" report --state "$db" --by "$by" --format json >"$tmp/$by.json"; then
		echo "FAIL: report --by $by" >&2
		fails=$((fails + 1))
		continue
	fi
	if python3 - "$tmp/$by.csv" "$tmp/$by.json" "$by" <<'PY'; then
import csv, json, re, sys
from decimal import Decimal

path, jpath, by = sys.argv[1:]
raw = open(path, "rb").read()
lines = raw.split(b"\r\n")
assert lines[-1] == b"" and all(b"\n" not in l for l in lines), "CRLF"
rows = list(csv.reader(open(path, newline="", encoding="utf-8")))
head, body = rows[0], rows[1:]
assert head[0] == by and head[1:4] == ["jobs", "entries", "core_hours"], head
assert head[-3:] == ["amount", "amount_micros", "rate_versions"], head
assert all(len(r) == len(head) for r in body), [len(r) for r in body]
rep = json.load(open(jpath))
assert len(body) == len(rep["lines"])

ints = {"jobs", "entries", "egress_bytes", "amount_micros"}
decs = {h for h in head if h.endswith("_hours") or h.startswith("gpu_hours_")} | {"amount"}
for r, line in zip(body, rep["lines"]):
    cells = dict(zip(head, r))
    for h in ints:
        assert re.fullmatch(r"-?[0-9]+", cells[h]), (h, cells[h])
    for h in decs:
        assert re.fullmatch(r"-?[0-9]+\.[0-9]{6}", cells[h]), (h, cells[h])
    assert Decimal(cells["amount"]) * 1000000 == int(cells["amount_micros"])
    assert int(cells["amount_micros"]) == line["amount_micros"]
    key = line["key"]
    want = "" if key is None else ("'" + key if key[0] in "=+-@" else key)
    assert cells[by] == want, (cells[by], key)
    # nothing a spreadsheet would evaluate
    assert not cells[by] or cells[by][0] not in "=+-@\t\r", cells[by]
assert sum(int(r[head.index("amount_micros")]) for r in body) == \
    rep["total"]["amount_micros"]
keys = [r[0] for r in body]
if by == "account":
    assert "'=HYPERLINK(\"http://example.invalid\",\"x\")" in keys, keys
    assert "'@SUM(A1)" in keys and "'-2+3" in keys, keys
    assert "<script>alert(1)</script>" in keys and "" in keys, keys
    # the quoted field as it is on disk: quotes doubled, apostrophe inside
    assert b'"\'=HYPERLINK(""http://example.invalid"",""x"")",' in raw
else:
    assert "'+cmd" in keys and "alice" in keys, keys
print("%s: %d rows of %d columns" % (path, len(body), len(head)))
PY
		passes=$((passes + 1))
	else
		echo "FAIL: csv by $by" >&2
		fails=$((fails + 1))
	fi
done

# The idle column: a card with capacity (64 CPUs and 256 GB on Slurm, 32
# CPUs, 128 GB and 2 A100 on Kubernetes).  November's 720 hours cost
# 1658.88 and 3219.84; the jobs were charged 808.562542 and 287.272788;
# idle 3782.884670, spread over the accounts, to the micro-unit.
for how in proportional even; do
	cat >"$tmp/card-$how.yaml" <<CARD
currency: {code: EUR}
idle_cost: $how
capacity:
  slurm: {cpus: 64, memory_gb: 256}
  kubernetes: {cpus: 32, memory_gb: 128, gpus: {a100: 2}}
versions:
  - version: "2026.10"
    effective: 2026-10-01
    slurm:
      default: {cpu_hour: 0.02, memory_gb_hour: 0.004}
    kubernetes:
      default: {cpu_hour: 0.03, memory_gb_hour: 0.004, gpu_hour: 1.50}
CARD
	if "$hb" report --state "$db" --from 2026-11 --to 2026-12 \
		--ratecard "$tmp/card-$how.yaml" --format csv >"$tmp/idle.csv" &&
		"$hb" report --state "$db" --from 2026-11 --to 2026-12 \
			--ratecard "$tmp/card-$how.yaml" --format json >"$tmp/idle.json" &&
		python3 - "$tmp/idle.csv" "$tmp/idle.json" "$how" <<'PY'; then
import csv, json, sys
from decimal import Decimal

rows = list(csv.DictReader(open(sys.argv[1], newline="")))
rep = json.load(open(sys.argv[2]))
how = sys.argv[3]
idle = [int(r["idle_micros"]) for r in rows]
assert sum(idle) == 3782884670, sum(idle)
assert rep["total"]["idle_micros"] == 3782884670 and rep["total"]["idle"] == "3782.884670"
for r in rows:
    assert Decimal(r["idle"]) * 1000000 == int(r["idle_micros"]), r
amounts = [int(r["amount_micros"]) for r in rows]
if how == "proportional":
    total = sum(amounts)
    for a, i in zip(amounts, idle):
        assert abs(i * total - 3782884670 * a) < total, (a, i)
else:
    # 8 accounts: 472860583 each, the first 6 one more
    assert idle == [472860584] * 6 + [472860583] * 2, idle
print(how, idle)
PY
		passes=$((passes + 1))
	else
		echo "FAIL: idle column, $how" >&2
		fails=$((fails + 1))
	fi
done
# the table shows it; the configuration's chargeback.ratecard is read; a
# window without an end is refused
printf 'daemon:\n  state: %s\nchargeback:\n  ratecard: %s\n' "$db" "$tmp/card-even.yaml" >"$tmp/hb.yaml"
if "$hb" report --config "$tmp/hb.yaml" --from 2026-11 --to 2026-12 >"$tmp/idle.txt" &&
	head -1 "$tmp/idle.txt" | grep -q ' IDLE ' &&
	grep -Eq '^TOTAL .* 1095\.835330 +3782\.884670  2026\.11$' "$tmp/idle.txt" &&
	! "$hb" report --state "$db" --ratecard "$tmp/card-even.yaml" >"$tmp/out" 2>"$tmp/err" &&
	grep -q 'idle column needs a window' "$tmp/err" && [ ! -s "$tmp/out" ]; then
	passes=$((passes + 1))
else
	echo "FAIL: idle table, config, window: $(cat "$tmp/idle.txt" "$tmp/err" 2>/dev/null | tail -3)" >&2
	fails=$((fails + 1))
fi

# the configuration's card is the daemon's: one the report cannot read,
# or a window without ends, leaves the column out and the report whole
printf 'daemon:\n  state: %s\nchargeback:\n  ratecard: %s\n' "$db" "$tmp/none.yaml" >"$tmp/hb2.yaml"
if "$hb" report --config "$tmp/hb2.yaml" --from 2026-11 --to 2026-12 >"$tmp/out" 2>"$tmp/err" &&
	grep -q 'none.yaml.*no idle column' "$tmp/err" && ! grep -q IDLE "$tmp/out" &&
	grep -Eq '^TOTAL .* 1095\.835330  2026\.11$' "$tmp/out" &&
	"$hb" report --config "$tmp/hb.yaml" >"$tmp/out" && ! grep -q IDLE "$tmp/out"; then
	passes=$((passes + 1))
else
	echo "FAIL: configuration's card: $(cat "$tmp/err")" >&2
	fails=$((fails + 1))
fi

echo "report_csv.test.sh: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
