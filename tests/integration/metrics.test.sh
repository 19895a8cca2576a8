#!/usr/bin/env bash
# hpcbridged's /metrics and /healthz (metrics.listen), against a real
# Slurm with job_submit/hpcbridge loaded:
#   - /healthz answers 200 "ok"; other paths 404, POST 405, HEAD works;
#   - N jobs submitted with sbatch move hpcbridge_decisions_total and the
#     decision latency histogram's _count by exactly N, as Debian's
#     prometheus_client parser reads the text; the live jobs gauge sees
#     them, the store's commits show, and the plugin's notices (one per
#     job, no connection: it decides in slurmctld);
#   - the account's budget and its spend, the jobs' estimated cost;
#   - every histogram's buckets are cumulative and end at _count;
#   - a non-loopback metrics.listen is refused unless allow_remote says so;
#   - the runbook's alerting rules are YAML and name metrics we serve.
#
# usage: metrics.test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
. "$src/tests/integration/lib/slurm.sh"

hbd=$build/bin/hpcbridged
plugdir=$build/slurm-plugin
py=/usr/bin/python3
N=5
tmp=$(mktemp -d /tmp/hbmetrics.XXXXXX)
chmod 755 "$tmp"
sock=$tmp/hbd.sock
log=$tmp/hbd.log
dpid=
cleanup() {
	[ -n "$dpid" ] && kill "$dpid" 2>/dev/null && wait "$dpid" 2>/dev/null
	slurm_down "$tmp/slurm" >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT

passed=0
ok() { passed=$((passed + 1)); echo "ok $passed - $*"; }
fail() {
	echo "FAIL: $*" >&2
	sed 's/^/    hpcbridged: /' "$log" 2>/dev/null | tail -20 >&2
	exit 1
}

# a free loopback port
port=$($py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
url=http://127.0.0.1:$port

# Slurm only; the account chem has a budget of 100 a month on Slurm.
cat >"$tmp/policy.yaml" <<'EOF'
version: 1
slurm:
  default_partition: debug
  rates: {cpu_hour: 0.10}
  partitions:
    debug:
      max_nodes: 1
      node: {cpus: 16, memory: 64000Mi}
rules:
  - name: chem
    account: chem
    budget: {amount: 100, period: month, sides: [slurm]}
EOF

write_config() { # LISTEN [MORE]
	cat >"$tmp/hpcbridge.yaml" <<EOF
daemon:
  socket: $sock
  state: $tmp/state.db
remote:
  local_dir: $tmp/remote
slurm:
  user: root
  burst_partition: burst
plugin:
  timeout_ms: 2000
placement:
  policy: $tmp/policy.yaml
metrics:
  listen: "$1"
${2:-}
EOF
}

# --- 1. the address is checked before anything starts ------------------
write_config "0.0.0.0:$port"
if "$hbd" --config "$tmp/hpcbridge.yaml" --check >"$tmp/out" 2>&1; then
	fail "a non-loopback metrics.listen was accepted"
fi
grep -q "metrics.listen" "$tmp/out" ||
	fail "the refusal does not name metrics.listen: $(cat "$tmp/out")"
write_config "0.0.0.0:$port" "  allow_remote: true"
"$hbd" --config "$tmp/hpcbridge.yaml" --check >"$tmp/out" 2>&1 ||
	fail "allow_remote: true did not let 0.0.0.0 through: $(cat "$tmp/out")"
write_config "127.0.0.1:99999"
if "$hbd" --config "$tmp/hpcbridge.yaml" --check >"$tmp/out" 2>&1; then
	fail "port 99999 was accepted"
fi
ok "metrics.listen: non-loopback refused without allow_remote, bad port refused"

# --- 2. a daemon with metrics under a real Slurm ------------------------
write_config "127.0.0.1:$port"
export HPCBRIDGE_CONFIG=$tmp/hpcbridge.yaml
export HB_SLURM_PLUGIN_DIR=$plugdir
export HB_SLURM_JOB_SUBMIT_PLUGINS=hpcbridge
export HB_SLURM_PLUGSTACK="required $plugdir/spank_hpcbridge.so"
export HB_SLURM_CPUS=16 HB_SLURM_MEM_MB=64000
slurm_up "$tmp/slurm" >/dev/null || fail "slurm_up"

"$hbd" --config "$tmp/hpcbridge.yaml" --foreground 2>"$log" &
dpid=$!
for _ in $(seq 100); do
	curl -sf "$url/healthz" >"$tmp/health" 2>/dev/null && break
	kill -0 "$dpid" 2>/dev/null || fail "hpcbridged did not start"
	sleep 0.05
done
[ "$(cat "$tmp/health")" = ok ] || fail "/healthz: $(cat "$tmp/health")"
ok "/healthz: 200 ok"

code=$(curl -s -o /dev/null -w '%{http_code}' "$url/nothing")
[ "$code" = 404 ] || fail "/nothing: HTTP $code, want 404"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -d x=1 "$url/metrics")
[ "$code" = 405 ] || fail "POST /metrics: HTTP $code, want 405"
code=$(curl -s -o /dev/null -w '%{http_code}' -I "$url/metrics")
[ "$code" = 200 ] || fail "HEAD /metrics: HTTP $code, want 200"
ctype=$(curl -s -o /dev/null -w '%{content_type}' "$url/metrics")
[ "$ctype" = "text/plain; version=0.0.4; charset=utf-8" ] ||
	fail "content type: $ctype"
ok "404 elsewhere, 405 for POST, HEAD answered, text format 0.0.4"

# read FILE: the samples as "name{labels} value" lines, through Debian's
# parser (which refuses text it cannot read), and the histogram checks
cat >"$tmp/read.py" <<'EOF'
import sys
from prometheus_client.parser import text_string_to_metric_families
fams = list(text_string_to_metric_families(open(sys.argv[1]).read()))
for f in fams:
    if f.type == "histogram":
        # buckets cumulative, ending at +Inf == _count
        by = {}
        for s in f.samples:
            key = tuple(sorted((k, v) for k, v in s.labels.items() if k != "le"))
            by.setdefault(key, []).append(s)
        for key, ss in by.items():
            b = [s.value for s in ss if s.name.endswith("_bucket")]
            c = [s.value for s in ss if s.name.endswith("_count")]
            inf = [s for s in ss if s.labels.get("le") == "+Inf"]
            assert b == sorted(b), (f.name, b)
            assert inf and c and inf[0].value == c[0], (f.name, key)
    for s in f.samples:
        lab = ",".join("%s=%s" % kv for kv in sorted(s.labels.items()))
        print("%s{%s} %r" % (s.name, lab, s.value))
EOF
# total FILE NAME [LABEL_FILTER]: the sum of NAME's samples whose labels
# contain the filter
total() {
	{ grep -F "$2{" "$1" || true; } | { grep -F -- "${3:-}" || true; } |
		awk '{s += $NF} END {printf "%d\n", s}'
}
scrape() { # OUT
	curl -sf "$url/metrics" >"$1.txt" || fail "scrape failed"
	$py "$tmp/read.py" "$1.txt" >"$1" ||
		fail "Debian's parser refused /metrics: $(head -40 "$1.txt")"
}

scrape "$tmp/before"
for f in hpcbridge_decisions_total hpcbridge_decision_duration_seconds \
	hpcbridge_store_commit_duration_seconds hpcbridge_jobs \
	hpcbridge_connections_open hpcbridge_side_errors_total \
	hpcbridge_watch_restarts_total hpcbridge_account_spend; do
	grep -q "^# TYPE $f " "$tmp/before.txt" || fail "no family $f"
done
ok "every family is served; Debian's parser reads it"

cd "$tmp"
for i in $(seq $N); do
	sbatch --hold -A chem -p debug -N 1 -n 1 -t 60 -J "m$i" --wrap=true \
		>out 2>err || fail "sbatch $i: $(cat err)"
done
# the text is made at most once a second; a scrape sooner gets the last
sleep 1.1
scrape "$tmp/after"

d0=$(total "$tmp/before" hpcbridge_decisions_total)
d1=$(total "$tmp/after" hpcbridge_decisions_total)
[ $((d1 - d0)) = $N ] ||
	fail "hpcbridge_decisions_total moved by $((d1 - d0)), want $N"
s=$(total "$tmp/after" hpcbridge_decisions_total 'rule=chem,target=slurm')
[ "$s" = $N ] || fail "decisions for slurm by rule chem: $s, want $N"
c0=$(total "$tmp/before" hpcbridge_decision_duration_seconds_count)
c1=$(total "$tmp/after" hpcbridge_decision_duration_seconds_count)
[ $((c1 - c0)) = $N ] ||
	fail "the latency histogram's _count moved by $((c1 - c0)), want $N"
ok "$N sbatch: decisions +$((d1 - d0)), latency _count +$((c1 - c0))"

j=$(total "$tmp/after" hpcbridge_jobs 'side=slurm')
[ "$j" -ge $N ] || fail "hpcbridge_jobs{side=slurm}: $j, want >= $N"
k0=$(total "$tmp/before" hpcbridge_store_commit_duration_seconds_count)
k1=$(total "$tmp/after" hpcbridge_store_commit_duration_seconds_count)
[ "$k1" -gt "$k0" ] || fail "no store commit was timed ($k0 -> $k1)"
a0=$(total "$tmp/before" hpcbridge_connections_accepted_total)
a1=$(total "$tmp/after" hpcbridge_connections_accepted_total)
# the plugin decides in slurmctld: no connection, one notice per job
[ $((a1 - a0)) = 0 ] || fail "connections accepted: +$((a1 - a0)), want 0"
n0=$(total "$tmp/before" hpcbridge_plugin_notices_total)
n1=$(total "$tmp/after" hpcbridge_plugin_notices_total)
[ $((n1 - n0)) = $N ] || fail "plugin notices: +$((n1 - n0)), want $N"
# the budget, and the N jobs' estimated cost (an hour of a CPU at 0.10
# each) against it
b=$(grep -F 'hpcbridge_account_budget{account=chem,currency=' "$tmp/after" |
	grep -F 'period=month' | awk '{print $NF}')
[ "$b" = 100.0 ] || fail "hpcbridge_account_budget for chem: '$b', want 100"
sp=$(grep -F 'hpcbridge_account_spend{account=chem,' "$tmp/after" |
	awk '{print $NF}')
$py -c "import sys; v = float(sys.argv[1]); assert abs(v - $N * 0.1) < 1e-6, v" \
	"${sp:-x}" || fail "hpcbridge_account_spend for chem: '$sp', want $N x 0.1"
ok "live jobs on slurm $j, commits timed +$((k1 - k0)), connections +$((a1 - a0)), notices +$((n1 - n0))"

# --- 3. the runbook's alerting rules -----------------------------------
# the first ```yaml block after "## Metrics" in docs/runbook.md
awk '/^## Metrics/ {m = 1} m && /^```yaml/ {y = 1; next}
     y && /^```/ {exit} y {print}' "$src/docs/runbook.md" >"$tmp/rules.yaml"
$py - "$tmp/rules.yaml" "$tmp/after.txt" <<'EOF' || fail "runbook rules"
import re, sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
served = set(re.findall(r"^# TYPE (\S+)", open(sys.argv[2]).read(), re.M))
rules = [r for g in doc["groups"] for r in g["rules"]]
assert rules, "no rules"
for r in rules:
    assert r["alert"] and r["expr"], r
    for name in re.findall(r"hpcbridge_[a-z_]+", r["expr"]):
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        assert base in served, "%s names %s, not served" % (r["alert"], name)
print(len(rules), "rules")
EOF
ok "the runbook's alerting rules parse and name served metrics"

# --- 4. stopping ---------------------------------------------------------
kill -TERM "$dpid"
wait "$dpid" || fail "hpcbridged exited $?"
dpid=
if curl -sf -m 2 "$url/healthz" >/dev/null 2>&1; then
	fail "/healthz still answers after the daemon stopped"
fi
ok "the port closes with the daemon"
echo "metrics: $passed checks passed"
