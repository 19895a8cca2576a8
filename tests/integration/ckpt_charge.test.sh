#!/usr/bin/env bash
# ckpt_charge.test.sh - a burst job's checkpoint storage charged by the
# daemon, in the sandbox (real Slurm, hpcbridged, the emulated cluster in
# execute mode, the private Swift with s3api), with a rate card whose
# Kubernetes storage_gb_month is high enough for a few MiB to cost
# micro-units, and checkpoints.bill_interval 2 (set, then SIGHUP):
#
#   * the push before the job starts is measured: its ckpt_push event
#     says how many bytes S3 keeps, and the location's storage meter
#     names the job, with those bytes;
#   * storage entries (part ckpt, side kubernetes, the job's account)
#     keep coming every bill_interval, after the job has ended too, each
#     priced to the micro-unit as bytes x seconds x the card's rate;
#   * `hpcbridge status` shows what the storage has been charged so far
#     (its JSON the ledger's sum); `hpcbridge report` sums the entries'
#     MiB-seconds;
#   * once the location's keys are deleted, one last period is charged
#     and then nothing more.
#
# usage: ckpt_charge.test.sh BUILD_DIR SRC_DIR
set -euo pipefail

build=$(cd "${1:?BUILD_DIR}" && pwd)
src=$(cd "${2:?SRC_DIR}" && pwd)
tmp=$(mktemp -d /tmp/hb-ckchg.XXXXXX)
chmod 755 "$tmp"
export HB_SANDBOX_BACKEND=kubernetes
cat >"$tmp/card.yaml" <<'YAML'
currency: {code: EUR}
versions:
  - version: "2026.1"
    effective: 2026-01-01
    slurm:
      default: {cpu_hour: 0.02, memory_gb_hour: 0.004}
    kubernetes:
      default: {cpu_hour: 0.03, memory_gb_hour: 0.004, storage_gb_month: 100000}
YAML
export HB_SANDBOX_RATECARD=$tmp/card.yaml
# shellcheck source=lib/sandbox_test.sh
. "$src/tests/integration/lib/sandbox_test.sh"
sandbox_test_up
ok "sandbox up"
[ -n "${AWS_ENDPOINT_URL:-}" ] || die "the sandbox printed no S3 endpoint"
aws() { /usr/bin/aws --endpoint-url "$AWS_ENDPOINT_URL" "$@"; }
hb=$build/bin/hpcbridge
db=$box/state.db
q() { sqlite3 -readonly "$db" "$1"; }
u=$HB_SANDBOX_USER
wk=$HB_SANDBOX_WORK

# measure every 2 s
reloads=$(grep -c "configuration reloaded" "$box/hpcbridged.log" || true)
sed -i 's/^  interval: [0-9]*$/&\n  bill_interval: 2/' "$box/hpcbridge.yaml"
grep -q '^  bill_interval: 2$' "$box/hpcbridge.yaml" ||
	die "cannot set checkpoints.bill_interval"
kill -HUP "$(head -c 32 "$box/hpcbridged.pid" | tr -dc 0-9)"
for _ in $(seq 100); do
	[ "$(grep -c "configuration reloaded" "$box/hpcbridged.log" || true)" -gt "$reloads" ] && break
	sleep 0.2
done
[ "$(grep -c "configuration reloaded" "$box/hpcbridged.log" || true)" -gt "$reloads" ] ||
	die "the daemon did not reload its configuration"

mpicc -O1 -o "$wk/hello" "$src/examples/sandbox/hello.c" ||
	die "mpicc examples/sandbox/hello.c"
chmod 755 "$wk/hello"
# the checkpoint directory: 4 MiB, the user's
ck=$tmp/ckpt/run
mkdir -p "$ck"
head -c 4194304 /dev/urandom >"$ck/state.bin"
printf 'step 10\n' >"$ck/step"
chown -R "$u" "$tmp/ckpt"
sed -e "s|@CKPT@|$ck|g" >"$tmp/burst.sh" <<'EOF'
#!/bin/bash
#SBATCH --job-name=stored
#SBATCH --partition=gpu
#SBATCH --account=chemistry
#SBATCH --ntasks=2
#SBATCH --time=5
#SBATCH --output=stored-%j.out
#SBATCH --hpcbridge-checkpoint=@CKPT@
mpirun --oversubscribe -np 2 ./hello
sleep 3
EOF
id=$(submit_user "$tmp/burst.sh")
[ -n "$id" ] || die "sbatch: $(cat "$tmp/sbatch.err" 2>/dev/null)"
st=$(wait_final "$id")
[ "$st" = COMPLETED ] && ok "the burst job $id: $st" || bad "job $id: $st"
g=$(gateway_id "$id")

# 1. the push was measured, and the location's meter names the job
bytes=$(q "SELECT json_extract(detail, '$.stored_bytes') FROM events
  WHERE job_id = '$g' AND action = 'ckpt_push' ORDER BY id LIMIT 1")
url=$(q "SELECT json_extract(detail, '$.to') FROM events
  WHERE job_id = '$g' AND action = 'ckpt_push' ORDER BY id LIMIT 1")
[ -n "$bytes" ] && [ "$bytes" -gt 4194304 ] && [ -n "$url" ] ||
	die "ckpt_push: stored_bytes '$bytes', to '$url'"
ok "ckpt_push measured: S3 keeps $bytes bytes at $url"
meter=$(q "SELECT job_id, account, bytes FROM storage_meters WHERE url = '$url'")
[ "$meter" = "$g|chemistry|$bytes" ] && ok "the meter: $meter" ||
	bad "the meter of $url: '$meter' (want $g|chemistry|$bytes)"

# 2. entries keep coming after the job ended
n() { q "SELECT count(*) FROM ledger WHERE job_id = '$g' AND part = 'ckpt'"; }
for _ in $(seq 100); do [ "$(n)" -ge 2 ] && break; sleep 0.2; done
n1=$(n)
sleep 6
n2=$(n)
[ "$n1" -ge 2 ] && [ "$n2" -gt "$n1" ] &&
	ok "storage entries after the job ended: $n1, then $n2" ||
	bad "storage entries: $n1, then $n2"
# each one: its MiB-seconds and amount from its bytes (all the same
# here) and seconds, half up: rate 100000 a GB-month = 10^11 micro-units
if q "SELECT (period_end_ms - period_start_ms) / 1000, storage_mib_s,
	amount_micros, side, account, rate_version FROM ledger
	WHERE job_id = '$g' AND part = 'ckpt'" |
	python3 -c '
import sys
b = int(sys.argv[1])
def half_up(n, d):
    q, r = divmod(n, d)
    return q + (2 * r >= d)
rows = [l.strip().split("|") for l in sys.stdin if l.strip()]
assert rows
for s, mib, amt, side, acct, ver in rows:
    s, mib, amt = int(s), int(mib), int(amt)
    assert s > 0, rows
    assert mib == half_up(b * s, 2**20), (b, s, mib)
    assert amt == half_up(b * s * 10**11, 10**9 * 2592000), (b, s, amt)
    assert (side, acct, ver) == ("kubernetes", "chemistry", "2026.1"), rows
print(len(rows), "entries priced exactly")
' "$bytes"; then
	ok "every storage entry priced as bytes x seconds x the rate"
else
	bad "storage entries: $(q "SELECT * FROM ledger WHERE part = 'ckpt'")"
fi

# 3. status and report
status=$("$hb" status "$g" 2>&1 || true)
grep -q "^  storage in S3: [0-9]*\.[0-9]\{6\} GB-months, charged [0-9]*\.[0-9]\{6\} so far\$" <<<"$status" &&
	ok "status: what the storage has been charged so far" ||
	bad "status: $status"
# the reply's figures: no more than the ledger holds a moment later
"$hb" status --json "$g" >"$tmp/status.json" 2>&1 || true
sm=$(jq -r '.job.storage.amount_micros' "$tmp/status.json")
lm=$(q "SELECT sum(amount_micros) FROM ledger WHERE job_id = '$g' AND part = 'ckpt'")
[ "$sm" != null ] && [ "$sm" -gt 0 ] && [ "$sm" -le "$lm" ] &&
	ok "status --json: storage.amount_micros $sm (the ledger: $lm)" ||
	bad "status --json storage: $sm, the ledger $lm: $(cat "$tmp/status.json")"
"$hb" report --state "$db" --by account --format json >"$tmp/rep.json"
want=$(q "SELECT sum(storage_mib_s) FROM ledger WHERE account = 'chemistry'")
got=$(jq -r '.lines[] | select(.key == "chemistry") | .storage_mib_s' "$tmp/rep.json")
[ -n "$want" ] && [ "$got" = "$want" ] &&
	ok "report: chemistry's storage is $got MiB-s" ||
	bad "report: storage_mib_s $got, the ledger's $want"

# 4. the location emptied: one last period, then nothing
aws s3 rm --recursive --quiet "$url/"
for _ in $(seq 100); do
	[ "$(q "SELECT bytes FROM storage_meters WHERE url = '$url'")" = 0 ] && break
	sleep 0.2
done
n3=$(n)
sleep 5
n4=$(n)
[ "$(q "SELECT bytes FROM storage_meters WHERE url = '$url'")" = 0 ] &&
	[ "$n4" = "$n3" ] &&
	ok "the location emptied: charges stop at $n3 entries" ||
	bad "after emptying: meter $(q "SELECT * FROM storage_meters"), entries $n3 then $n4"

sandbox_test_end
