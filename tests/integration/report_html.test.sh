#!/usr/bin/env bash
# hpcbridge report --format html on a store filled by report_fill (eight
# accounts, one named like a script tag, twelve users, both sides,
# October and November), rendered by Debian's headless Chromium:
#  - the page is self-contained: no script, no outside URL, no link;
#  - every store string is escaped: the script-named account is text;
#  - the table has the JSON report's lines and total, exactly;
#  - the time chart's bars add up to the total, one bar per account in a
#    one-day window, each with a <title> holding its exact amount;
#  - the side chart and the top-10 users chart agree with --by side/user;
#  - the screenshot exists and is not blank (PNG decoded with zlib).
#
# usage: report_html.test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
hb=$build/bin/hpcbridge
fill=$build/tests/report_fill
tmp=$(mktemp -d)
chrome_pid=
cleanup() {
	if [ -n "$chrome_pid" ] && kill -0 "$chrome_pid" 2>/dev/null; then
		kill -- -"$chrome_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
fails=0
passes=0
ok() { passes=$((passes + 1)); }
bad() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

db=$tmp/state.db
"$fill" "$db"

# html FILE ARGS...: the page for ARGS, and the JSON report beside it.
html() {
	local out=$1
	shift
	"$hb" report --state "$db" "$@" --format html >"$out" || {
		bad "report --format html $*"
		return 1
	}
	"$hb" report --state "$db" "$@" --format json >"$out.json"
	"$hb" report --state "$db" "$@" --by user --format json >"$out.user.json"
	"$hb" report --state "$db" "$@" --by side --format json >"$out.side.json"
	ok
}

# check_page FILE BUCKETS: the checks above on one page; BUCKETS the
# number of day or month buckets its time chart must have.
check_page() {
	python3 - "$1" "$2" <<'PY'
import json, re, sys
from decimal import Decimal
from html.parser import HTMLParser

path, want_buckets = sys.argv[1], int(sys.argv[2])
text = open(path, encoding="utf-8").read()
rep = json.load(open(path + ".json"))
users = json.load(open(path + ".user.json"))
sides = json.load(open(path + ".side.json"))

class Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.stack, self.svg = [], [], None
        self.bars = {"spend-by-account": [], "spend-by-side": [],
                     "top-users": []}
        self.title, self.titles = None, []
        self.row, self.rows, self.cell = None, [], None
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        self.stack.append(tag)
        if tag == "svg":
            self.svg = a.get("id")
        if tag == "rect" and self.svg and "data-micros" in a:
            self.bars[self.svg].append(a)
        if tag == "title" and "rect" in self.stack:
            self.title = ""
        if tag == "tr":
            self.row = []
        if tag in ("td", "th"):
            self.cell = ""
    def handle_endtag(self, tag):
        while self.stack and self.stack.pop() != tag:
            pass
        if tag == "svg":
            self.svg = None
        if tag == "title" and self.title is not None:
            self.titles.append(self.title)
            self.title = None
        if tag in ("td", "th") and self.row is not None:
            self.row.append(self.cell)
            self.cell = None
        if tag == "tr":
            self.rows.append(self.row)
            self.row = None
    def handle_data(self, d):
        if self.title is not None:
            self.title += d
        if self.cell is not None:
            self.cell += d

p = Page()
p.feed(text)
p.close()

# Self-contained and inert: no script, no external resource of any kind.
names = {t for t, _ in p.tags}
assert not names & {"script", "link", "img", "iframe", "object", "embed"}, names
for t, a in p.tags:
    for k, v in a.items():
        assert k not in ("src", "href", "xlink:href") and not k.startswith("on"), (t, k)
assert "url(" not in text and "@import" not in text
assert not re.search(r"<script", text, re.I), "a raw <script in the page"
assert {"style", "svg", "table"} <= names, names

# The table: the JSON report's lines, then the total, to the micro-unit.
body = [r for r in p.rows if r and r[0] != rep["by"].capitalize()]
assert len(body) == len(rep["lines"]) + 1, (len(body), len(rep["lines"]))
for row, line in zip(body, rep["lines"] + [dict(rep["total"], key="Total")]):
    key = line["key"] if line["key"] is not None else "none"
    assert row[0] == key, (row[0], key)
    assert row[1] == str(line["jobs"]), (row, line)
    assert row[-2] == line["amount"], (row, line)
    assert row[-1] == line["rate_versions"], (row, line)
total = rep["total"]["amount_micros"]

# The time chart: its bars add up to the total; every bar's title ends
# in its exact amount.
tb = p.bars["spend-by-account"]
assert sum(int(b["data-micros"]) for b in tb) == total
buckets = sorted({b["data-bucket"] for b in tb})
assert len(buckets) == want_buckets, buckets
for b in tb + p.bars["spend-by-side"] + p.bars["top-users"]:
    m = int(b["data-micros"])
    assert any(t.endswith(": %s" % (Decimal(m) / 1000000).quantize(Decimal("0.000001")))
               for t in p.titles), b
for bucket in buckets:
    accts = [b["data-account"] for b in tb if b["data-bucket"] == bucket]
    assert len(accts) == len(set(accts)), accts
if want_buckets == 1:
    # one bar per account of the window, no more, no fewer
    want = sorted(l["key"] or "" for l in rep["lines"])
    assert sorted(b["data-account"] for b in tb) == want, (tb, want)

# The sides and the top ten users, as --by side and --by user say.
sb = {b["data-side"]: int(b["data-micros"]) for b in p.bars["spend-by-side"]}
assert sb == {l["key"]: l["amount_micros"] for l in sides["lines"]}, sb
ub = [(b["data-user"], int(b["data-micros"])) for b in p.bars["top-users"]]
top = sorted(((l["key"], l["amount_micros"]) for l in users["lines"]),
             key=lambda x: (-x[1], x[0]))[:10]
assert ub == top, (ub, top)
print("%s: %d time bars, %d buckets, %d users, %d table rows" %
      (path, len(tb), len(buckets), len(ub), len(body)))
PY
}

# The escaped account: as text and attribute, never as markup.
check_escaped() {
	grep -q '&lt;script&gt;alert(1)&lt;/script&gt;' "$1" &&
		grep -q 'data-account="&lt;script&gt;alert(1)&lt;/script&gt;"' "$1" &&
		! grep -qi '<script' "$1"
}

# Two months, cut by month; November, by day; one day: one bucket.
html "$tmp/all.html" && { check_page "$tmp/all.html" 2 && ok || bad "two months"; }
html "$tmp/nov.html" --from 2026-11 --to 2026-12 &&
	{ check_page "$tmp/nov.html" 30 && ok || bad "november by day"; }
html "$tmp/day.html" --from 2026-11-06 --to 2026-11-07 &&
	{ check_page "$tmp/day.html" 1 && ok || bad "one day"; }
if check_escaped "$tmp/day.html" && check_escaped "$tmp/all.html"; then ok; else bad "script-named account not escaped"; fi
# 4 accounts that day, the script-named one and the one without among them
n=$(grep -o 'data-account="[^"]*" data-bucket="2026-11-06"' "$tmp/day.html" | wc -l)
[ "$n" -eq 4 ] && ok || bad "one-day window: $n bars, want 4"
# an empty window: a page that says so, no bars
html "$tmp/empty.html" --from 2025-01 --to 2025-02 &&
	{ grep -q 'No ledger entries in this window' "$tmp/empty.html" &&
		! grep -q 'data-account=' "$tmp/empty.html" && ok || bad "empty window"; }

# Chromium renders the two-month page; killed by PID if it hangs.
if ! command -v chromium >/dev/null 2>&1; then
	bad "chromium is not installed (scripts/setup.sh installs it)"
else
	png=$tmp/report.png
	setsid chromium --headless --no-sandbox --disable-gpu \
		--user-data-dir="$tmp/chromium" --screenshot="$png" \
		--window-size=1200,1600 "file://$tmp/all.html" \
		>"$tmp/chromium.log" 2>&1 &
	chrome_pid=$!
	for _ in $(seq 1 120); do
		kill -0 "$chrome_pid" 2>/dev/null || break
		sleep 0.5
	done
	if kill -0 "$chrome_pid" 2>/dev/null; then
		kill -- -"$chrome_pid" 2>/dev/null || true
		bad "chromium still running after 60 s: killed"
	fi
	wait "$chrome_pid" 2>/dev/null || true
	chrome_pid=
	if [ -n "${HB_REPORT_SCREENSHOT:-}" ] && [ -f "$png" ]; then
		cp "$png" "$HB_REPORT_SCREENSHOT"
	fi
	if python3 - "$png" <<'PY'; then ok; else bad "screenshot: $(tail -3 "$tmp/chromium.log")"; fi
import struct, sys, zlib

data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, w = 8, b"", 0
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
        assert depth == 8 and ctype in (2, 6), (depth, ctype)
        bpp = 3 if ctype == 2 else 4
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
raw = zlib.decompress(idat)
assert (w, h) == (1200, 1600), (w, h)
stride = w * bpp
prev = bytearray(stride)
colours, ink = set(), 0
for y in range(h):
    f = raw[y * (stride + 1)]
    line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        if f == 1:
            line[i] = (line[i] + a) & 255
        elif f == 2:
            line[i] = (line[i] + b) & 255
        elif f == 3:
            line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, bpp):
        px = bytes(line[x:x + 3])
        colours.add(px)
        if px != b"\xff\xff\xff":
            ink += 1
    prev = line
# the chart palette's first colours, drawn as bars
for hexc in ("4e79a7", "f28e2b", "e15759"):
    assert bytes.fromhex(hexc) in colours, hexc
share = ink / (w * h)
assert share > 0.05 and len(colours) > 50, (share, len(colours))
print("screenshot: %dx%d, %.1f%% not white, %d colours" %
      (w, h, 100 * share, len(colours)))
PY
fi

echo "report_html.test.sh: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
