#!/usr/bin/env bash
# ckpt_bill.test.sh - checkpoint storage measured and charged, against a
# real S3 server (the private Swift with s3api of lib/swift.sh):
#
#   * hb_mirror_usage() (tests/integration/ckpt_bill.c usage) counts what
#     the aws CLI lists under the location's prefix, objects and
#     manifests, and nothing of a location beside it whose name starts
#     the same; after retention it equals the bytes `hpcbridge ckpt
#     retain` says stay;
#   * the storage meter as the daemon runs it (ckpt_bill meter): the
#     first measurement charges nothing, the next charges the hour in
#     between at the bytes the first found, to the micro-unit of the
#     card's storage_gb_month; once the prefix is emptied, its last hour
#     is charged and then nothing more;
#   * `hpcbridge report` shows the storage: JSON storage_mib_s and
#     storage_gb_months, the CSV column, the table's STORE-GB-MO.
#
# Usage: ckpt_bill.test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail

build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
hb=$build/bin/hpcbridge
bill=$build/tests/ckpt_bill

fails=0
ok() { printf 'ok: %s\n' "$*"; }
bad() {
	printf 'FAIL: %s\n' "$*"
	fails=$((fails + 1))
}

# shellcheck source=tests/integration/lib/swift.sh
. "$src/tests/integration/lib/swift.sh"

swift_test_start ckptbill

b=hb-bill-test
U=s3://$b/jobs/1000/count-c9724427
aws s3 mb "s3://$b" >/dev/null

# ---- what a location holds -------------------------------------------------
t=$tmp/tree
mkdir -p "$t/rank-0"
head -c 1048576 /dev/urandom >"$t/rank-0/w.pt"
head -c 2097152 /dev/urandom >"$t/opt.bin"
printf 'step 30\n' >"$t/train.state"
"$hb" ckpt push "$t" "$U" --job 7 --json --progress none >"$tmp/p1.json"
# beside it, a location whose name starts with this one's
"$hb" ckpt push "$t" "${U}x" --job 8 --json --progress none >/dev/null
read -r bytes keys < <("$bill" usage "$U")
listed=$(aws s3 ls --recursive --summarize "$U/" |
	awk '/Total Size:/ {print $3}')
nlisted=$(aws s3 ls --recursive "$U/" | wc -l)
if [ "$bytes" = "$listed" ] && [ "$keys" = "$nlisted" ] && [ "$keys" = 4 ] &&
	[ "$bytes" -gt 3145728 ]; then
	ok "usage: $bytes bytes in $keys keys, as the aws CLI lists them (3 objects, 1 manifest)"
else
	bad "usage: $bytes bytes $keys keys; aws: $listed bytes $nlisted keys"
fi

# a second checkpoint with one file changed, then keep only it
printf 'step 60\n' >"$t/train.state"
"$hb" ckpt push "$t" "$U" --job 7 --json --progress none >/dev/null
"$hb" ckpt retain "$U" --keep 1 --grace 0 --json >"$tmp/r.json"
kept=$(jq -r .prefix_bytes "$tmp/r.json")
read -r bytes keys < <("$bill" usage "$U")
if [ "$bytes" = "$kept" ] && [ "$keys" = 4 ]; then
	ok "after retain --keep 1: $bytes bytes, what retain says stay"
else
	bad "after retain: usage $bytes ($keys keys), retain $kept"
fi

# ---- the meter -------------------------------------------------------------
card=$tmp/card.yaml
cat >"$card" <<'YAML'
currency: {code: EUR}
versions:
  - version: "2026.11"
    effective: 2026-11-01
    kubernetes:
      default: {cpu_hour: 0.03, storage_gb_month: 0.02}
      burst: {cpu_hour: 0.03, storage_gb_month: 1000}
YAML
state=$tmp/state.db
t0=1793577600 # 2026-11-02T00:00:00Z
out=$("$bill" meter "$state" "$card" "$U" "$t0" burst)
if [[ $out == "bytes $bytes entries 0 seconds 0 amount 0 job -" ]]; then
	ok "first measurement: nothing charged ($out)"
else
	bad "first measurement: $out"
fi
out=$("$bill" meter "$state" "$card" "$U" $((t0 + 3600)))
# bytes x 3600 s at 1000 a GB-month (10^9 bytes, 30 days), half up
want=$(python3 -c "b=$bytes; n=b*3600*1000*10**6; d=10**9*2592000; q,r=divmod(n,d); print(q+(2*r>=d))")
if [[ $out == "bytes $bytes entries 1 seconds 3600 amount $want job hb-000001" ]]; then
	ok "an hour later: one entry of $want micro-units to hb-000001"
else
	bad "an hour later: $out (want amount $want)"
fi

"$hb" report --state "$state" --format json >"$tmp/rep.json"
if python3 - "$tmp/rep.json" "$bytes" "$want" <<'PY'; then
import json, sys
from decimal import Decimal, ROUND_HALF_UP
r = json.load(open(sys.argv[1]), parse_float=Decimal)
b, want = int(sys.argv[2]), int(sys.argv[3])
mib_s = (b * 3600 * 2 + 2**20) // 2**21  # half up
t = r["total"]
assert t["storage_mib_s"] == mib_s, (t, mib_s)
gbm = Decimal(mib_s) * 2**20 / (Decimal(10**9) * 2592000)
assert t["storage_gb_months"] == gbm.quantize(Decimal("0.000001"), rounding=ROUND_HALF_UP), (t, gbm)
assert t["amount_micros"] == want, t
assert r["lines"][0]["key"] == "physics", r
PY
	ok "report --format json: storage_mib_s, storage_gb_months and the amount"
else
	bad "report json: $(cat "$tmp/rep.json")"
fi
"$hb" report --state "$state" --format csv >"$tmp/rep.csv"
"$hb" report --state "$state" >"$tmp/rep.txt"
if head -1 "$tmp/rep.csv" | grep -q ',egress_bytes,storage_gb_months,amount,' &&
	grep -q 'STORE-GB-MO' "$tmp/rep.txt"; then
	ok "report: the CSV column and the table's STORE-GB-MO"
else
	bad "report csv/table: $(head -1 "$tmp/rep.csv"); $(head -1 "$tmp/rep.txt")"
fi

# the prefix emptied: its last hour at the old bytes, then nothing
aws s3 rm --recursive --quiet "$U/"
out=$("$bill" meter "$state" "$card" "$U" $((t0 + 7200)))
out2=$("$bill" meter "$state" "$card" "$U" $((t0 + 10800)))
if [[ $out == "bytes 0 entries 1 seconds 3600 amount $want job hb-000001" ]] &&
	[[ $out2 == "bytes 0 entries 0 seconds 0 amount 0 job -" ]]; then
	ok "prefix gone: its last hour charged, then nothing"
else
	bad "prefix gone: $out; then $out2"
fi

if [ "$fails" -ne 0 ]; then
	echo "$fails check(s) failed"
	exit 1
fi
echo "all checks passed"
