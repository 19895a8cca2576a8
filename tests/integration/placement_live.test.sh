#!/usr/bin/env bash
# The daemon decides with the placement engine, against a real Slurm with
# job_submit/hpcbridge loaded:
#   - placement.policy: a job no side can run is rejected and sbatch says
#     why; a job that goes where it is cheaper carries the engine's reason;
#   - each decision is stored with its explanation, and `hpcbridge status`
#     prints it;
#   - the daemon's Slurm estimates come from Slurm itself (will_run and
#     idle nodes), and `hpcbridge explain` without --state asks the live
#     daemon and agrees with what it decided;
#   - SIGHUP loads a new policy; a policy with an error is refused with
#     its FILE:LINE and the running one stays.
#
# usage: placement_live.test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
. "$src/tests/integration/lib/slurm.sh"

hb=$build/bin/hpcbridge
hbd=$build/bin/hpcbridged
plugdir=$build/slurm-plugin
tmp=$(mktemp -d /tmp/hbplace.XXXXXX)
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

# Slurm's batch partition is debug (1 real node of 16 CPUs); Kubernetes is
# cheaper, and nothing may use more than 1 node on Slurm or 2 on
# Kubernetes.
cat >"$tmp/policy.yaml" <<'EOF'
version: 1
defaults:
  prefer: cheapest
  fallback: reject
slurm:
  default_partition: debug
  rates: {cpu_hour: 0.10}
  partitions:
    debug:
      max_nodes: 1
      node: {cpus: 16, memory: 64000Mi}
kubernetes:
  namespace: hpc
  max_nodes: 2
  node: {cpus: 16, memory: 64000Mi}
  startup: 0s
  rates: {cpu_hour: 0.01}
EOF
# Data on the shared file system whose size the policy leaves to the
# daemon: 3,000 + 5,000 bytes, and a hard link to one of them.
mkdir -p "$tmp/data/sub"
head -c 3000 /dev/zero >"$tmp/data/a"
head -c 5000 /dev/zero >"$tmp/data/sub/b"
ln "$tmp/data/sub/b" "$tmp/data/b-again"
printf 'data:\n  - prefix: %s\n    side: slurm\n    bandwidth: 10Gb/s\n' \
	"$tmp/data" >>"$tmp/policy.yaml"
# The same, but Slurm is now the cheaper side.
sed -e 's/cpu_hour: 0.10/cpu_hour: 0.001/' "$tmp/policy.yaml" \
	>"$tmp/policy2.yaml"
printf 'version: 1\ndefaults:\n  prefer: nowhere\n' >"$tmp/bad.yaml"

write_config() { # POLICY
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
  policy: $1
  refresh_s: 1
  data_refresh_s: 1
EOF
}
write_config "$tmp/policy.yaml"

export HPCBRIDGE_CONFIG=$tmp/hpcbridge.yaml
export HB_SLURM_PLUGIN_DIR=$plugdir
export HB_SLURM_JOB_SUBMIT_PLUGINS=hpcbridge
export HB_SLURM_PLUGSTACK="required $plugdir/spank_hpcbridge.so"
export HB_SLURM_CPUS=16 HB_SLURM_MEM_MB=64000
slurm_up "$tmp/slurm" >/dev/null || fail "slurm_up"

"$hbd" --config "$tmp/hpcbridge.yaml" --foreground 2>"$log" &
dpid=$!
for _ in $(seq 100); do
	[ -S "$sock" ] && "$hb" jobs --socket "$sock" >/dev/null 2>&1 && break
	kill -0 "$dpid" 2>/dev/null || fail "hpcbridged did not start"
	sleep 0.05
done
slurm_wait_snapshot "$tmp/slurm" || fail "the plugin has no snapshot"
cd "$tmp"

# --- 1. a job no side can run is rejected, and sbatch says why ----------
if sbatch --hold -p debug -N 3 -t 10 -J too-wide --wrap=true >out 2>err; then
	fail "a 3-node job was accepted: $(cat out)"
fi
grep -q "hpcbridge: job hb-[0-9a-z-]* rejected: " err ||
	fail "sbatch did not say why: $(cat err)"
grep -qi "node" err || fail "the reason does not name the nodes: $(cat err)"
rid=$(sed -n 's/.*hpcbridge: job \(hb-[0-9a-z-]*\) rejected.*/\1/p' err)
ok "a job no side can run is rejected; sbatch says: $(sed -n 's/.*rejected: //p' err | head -1)"

"$hb" status --socket "$sock" "$rid" >st.txt || fail "status $rid"
grep -q "decision: rejected" st.txt || fail "status: $(cat st.txt)"
grep -q "Slurm (partition debug)" st.txt &&
	grep -q "Kubernetes (queue hpc)" st.txt ||
	fail "status lacks the alternatives: $(cat st.txt)"
ok "hpcbridge status shows the stored explanation, every side"

# --- 2. a job goes where it is cheaper, with the engine's reason --------
sbatch --hold -p debug -N 1 -n 4 -t 30 -J cheap --wrap=true >out 2>err ||
	fail "sbatch: $(cat err)"
jid=$(sed -n 's/^Submitted batch job \([0-9]*\)/\1/p' out)
grep -q "runs on Kubernetes (.*cheaper" err ||
	fail "not sent to the cheaper side: $(cat err)"
kid=$(sed -n 's/.*hpcbridge: job \(hb-[0-9a-z-]*\) runs on Kubernetes.*/\1/p' err)
[ "$(scontrol show job "$jid" | tr -s ' ' '\n' | sed -n 's/^Partition=//p')" = burst ] ||
	fail "the proxy is not in burst"
"$hb" status --socket "$sock" --json "$kid" >st.json
python3 - "$tmp/st.json" <<'EOF' || fail "stored decision: $(cat st.json)"
import json, sys
d = json.load(open(sys.argv[1]))["job"]["decision"]
assert d["target"] == "kubernetes", d["target"]
assert d["policy"].endswith("/policy.yaml"), d["policy"]
p = d["inputs"]["placement"]
assert p["why"] == "cheapest", p["why"]
sides = {a["side"]: a for a in p["alternatives"]}
assert sides["kubernetes"]["cost_micro"] < sides["slurm"]["cost_micro"], sides
assert d["explanation"].startswith("decision: kubernetes"), d["explanation"]
EOF
scancel "$jid"
ok "a job goes where it is cheaper; its decision, costs and policy are stored"

# --- 3. the live snapshot comes from Slurm ------------------------------
snapshot_until() { # PYTHON-CONDITION on d, the debug partition
	for _ in $(seq 60); do
		"$hb" explain --socket "$sock" --dump-state --json >state.json \
			2>err || fail "dump-state: $(cat err)"
		python3 -c '
import json, sys
p = json.load(open(sys.argv[1])).get("slurm", {}).get("partitions", {})
d = p.get("debug", {})
sys.exit(0 if eval(sys.argv[2]) else 1)' state.json "$1" && return 0
		sleep 0.5
	done
	return 1
}
snapshot_until '"expected_start" in d'
python3 - state.json <<'EOF' || fail "live snapshot: $(cat state.json)"
import json, sys
d = json.load(open(sys.argv[1]))["slurm"]["partitions"]["debug"]
# one real idle node: a probe would start now, and one node is idle
assert d["expected_start"] == "0s", d
assert d["idle_nodes"] == 1, d
assert d.get("pending", 0) == 0, d
EOF
# the probes are the gateway's own: job_submit/hpcbridge leaves them alone
n=$("$hb" jobs --socket "$sock" --all --json | grep -c '"id": "hb-')
[ "$n" = 2 ] || fail "$n gateway jobs for 2 submissions: $("$hb" jobs --socket "$sock" --all)"
ok "the daemon's Slurm estimates come from Slurm (start now, 1 idle node); its probes are not jobs"

# The queue depth: two jobs wait in debug (not held: they begin in an
# hour); a held one does not count.
waiting=()
for h in "" "" --hold; do
	# shellcheck disable=SC2086
	sbatch $h --hpcbridge-target=slurm -p debug -N 1 -n 1 -t 10 \
		--begin=now+1hour -J waiting --wrap=true >out 2>err ||
		fail "sbatch: $(cat err)"
	waiting+=("$(sed -n 's/^Submitted batch job //p' out)")
done
snapshot_until 'd.get("pending") == 2' ||
	fail "queue depth: $(cat state.json)"
scancel "${waiting[@]}"
snapshot_until 'd.get("pending", 0) == 0' ||
	fail "queue depth after scancel: $(cat state.json)"
ok "the queue depth comes from Slurm: 2 jobs waiting (a held one not counted), then none"

# The data location's size, measured by the daemon (the hard link once).
python3 - state.json "$tmp/data" <<'EOF' || fail "data size: $(cat state.json)"
import json, sys
d = json.load(open(sys.argv[1])).get("data", {})
assert d.get(sys.argv[2]) == "8K", d
EOF
ok "the daemon measured the data location: 8 KB"

# --- 4. explain without --state asks the live daemon --------------------
printf '#!/bin/bash\n#SBATCH -p debug -N 1 -n 4 -t 30\ntrue\n' >job.sh
"$hb" explain --socket "$sock" --no-env job.sh >live.txt 2>err ||
	fail "live explain: $(cat err)"
grep -q "^decision: kubernetes (queue hpc): " live.txt ||
	fail "live explain: $(cat live.txt)"
"$hb" explain --policy "$tmp/policy.yaml" --state state.json --no-env \
	job.sh >offline.txt
diff <(sed 1d live.txt) <(sed 1d offline.txt) >/dev/null ||
	fail "live and --state disagree: $(diff live.txt offline.txt)"
ok "explain without --state uses the daemon's policy and snapshot"

# --- 5. SIGHUP: a new policy; a bad one is refused ----------------------
write_config "$tmp/bad.yaml"
kill -HUP "$dpid"
for _ in $(seq 100); do
	grep -q "reload refused" "$log" && break
	sleep 0.05
done
grep -q "reload refused.*bad.yaml:3: defaults.prefer" "$log" ||
	fail "bad policy not refused with its line"
sbatch --hold -p debug -N 1 -n 4 -t 30 -J still --wrap=true >out 2>err ||
	fail "sbatch: $(cat err)"
grep -q "runs on Kubernetes" err || fail "the running policy changed: $(cat err)"
scancel "$(sed -n 's/^Submitted batch job //p' out)"
write_config "$tmp/policy2.yaml"
kill -HUP "$dpid"
for _ in $(seq 100); do
	grep -q "configuration reloaded" "$log" && break
	sleep 0.05
done
# The daemon publishes the new policy at once; slurmctld's plugin takes
# the snapshot in within 20 ms: the new policy holds within a second.
for _ in $(seq 20); do
	sbatch --hold -p debug -N 1 -n 4 -t 30 -J now-slurm --wrap=true \
		>out 2>err || fail "sbatch: $(cat err)"
	grep -q "runs on Kubernetes" err || break
	scancel "$(sed -n 's/^Submitted batch job //p' out)"
	sleep 0.25
done
grep -q "runs on Kubernetes" err && fail "still bursting 5 s after reload: $(cat err)"
jid=$(sed -n 's/^Submitted batch job //p' out)
scontrol show job "$jid" | grep -q "AdminComment=hpcbridge:hb-[0-9a-z-]* target=slurm" ||
	fail "not tagged for Slurm: $(scontrol show job "$jid")"
scancel "$jid"
ok "SIGHUP loads a new policy; a bad one is refused with FILE:LINE"

echo "placement_live: $passed checks passed"
