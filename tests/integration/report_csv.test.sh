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
#  - the amount_micros column adds up to the JSON total.
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

echo "report_csv.test.sh: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
