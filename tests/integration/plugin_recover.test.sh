#!/usr/bin/env bash
# plugin_recover.test.sh - decisions made in slurmctld that the daemon
# never heard of are rebuilt from Slurm's job table.
#
# A private Slurm 22.05 (lib/slurm.sh) runs job_submit/hpcbridge with
# plugin.decide: snapshot; hpcbridged publishes the snapshot and runs
# burst jobs on its local backend.  Then:
#
#   * with the daemon up, a Slurm job and a burst job (--hpcbridge-target=
#     kubernetes) are recorded from the plugin's notices;
#   * the daemon is killed (-9); Slurm and burst jobs are submitted, each
#     decided in slurmctld and tagged "hpcbridge:ID target=T snap=N", the
#     burst ones become proxies whose scripts carry their requests; a held
#     job is tagged by hand (scontrol, as root) with the top id of the
#     lease, as the plugin would tag it;
#   * slurmctld is restarted (SIGTERM, then started again), so that the
#     notices its plugin still queued are gone, as after a crash;
#   * the daemon is started again: every tagged job is recorded by the
#     reconciler (its decide event's peer) under its id, with its target,
#     uid and Slurm job id; the Slurm jobs' ends are followed; the burst
#     jobs run remotely, their proxies end COMPLETED with the remote
#     output, and each ran once.
#
# usage: plugin_recover.test.sh BUILD_DIR SRC_DIR (as root)
set -euo pipefail

build=$(cd "${1:?BUILD_DIR}" && pwd)
src=$(cd "${2:?SRC_DIR}" && pwd)
hbd=$build/bin/hpcbridged
hbcall=$build/tests/hbcall
plugdir=$build/slurm-plugin
for f in "$hbd" "$hbcall" "$build/bin/hpcbridge" \
	"$plugdir/job_submit_hpcbridge.so" "$plugdir/spank_hpcbridge.so"; do
	[ -e "$f" ] || { echo "FAIL: $f not built" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "FAIL: run as root" >&2; exit 1; }
export HB_SLURM_FIX_HOSTS=${HB_SLURM_FIX_HOSTS:-1}
# shellcheck source=lib/slurm.sh
. "$src/tests/integration/lib/slurm.sh"

tmp=$(mktemp -d /tmp/hb-recover.XXXXXX)
chmod 755 "$tmp"
user=hbrec$$
dpid=
fails=0
ok() { printf 'ok: %s\n' "$*"; }
bad() {
	printf 'FAIL: %s\n' "$*"
	fails=$((fails + 1))
}
die() {
	bad "$*"
	tail -n 30 "$tmp/hbd.log" 2>/dev/null || true
	exit 1
}
kill_daemon() {
	if [ -n "$dpid" ]; then
		kill -KILL "$dpid" 2>/dev/null || true
		wait "$dpid" 2>/dev/null || true
		dpid=
	fi
}
cleanup() {
	kill_daemon
	slurm_down "$tmp/slurm" >/dev/null 2>&1 || true
	userdel "$user" 2>/dev/null || true
	if [ "$fails" = 0 ]; then
		slurm_purge "$tmp/slurm" >/dev/null 2>&1 || true
		rm -rf "$tmp"
	else
		echo "plugin_recover: files kept in $tmp" >&2
	fi
}
trap cleanup EXIT

# root never bursts: the jobs are a user's
useradd --system --no-create-home --shell /usr/sbin/nologin "$user" ||
	die "cannot make user $user"
uid=$(id -u "$user")
mkdir -p "$tmp/work" "$tmp/remote"
chown "$user:$(id -g "$user")" "$tmp/work"
printf '%s\n' \
	"daemon:" \
	"  socket: $tmp/hbd.sock" \
	"  state: $tmp/state.db" \
	"  log_level: info" \
	"slurm:" \
	"  user: root" \
	"  burst_partition: burst" \
	"  shadow_command: $build/bin/hpcbridge" \
	"remote:" \
	"  backend: local" \
	"  local_dir: $tmp/remote" \
	"plugin:" \
	"  decide: snapshot" \
	"placement:" \
	"  policy: $tmp/policy.yaml" >"$tmp/hpcbridge.yaml"
# jobs stay on Slurm unless they ask; each decision has a cost, charged
# to the jobs' account
cat >"$tmp/policy.yaml" <<-EOF
	version: 1
	defaults: {prefer: slurm, time_limit: 5m, mem_per_cpu: 100Mi}
	slurm:
	  rates: {cpu_hour: 1.00}
	  partitions:
	    debug: {node: {cpus: 8, memory: 16Gi}}
	kubernetes:
	  namespace: default
	  node: {cpus: 8, memory: 16Gi}
	  rates: {per_job: 1.00}
EOF
chmod 644 "$tmp/hpcbridge.yaml" "$tmp/policy.yaml"
export HPCBRIDGE_CONFIG=$tmp/hpcbridge.yaml
export HB_SLURM_PLUGIN_DIR=$plugdir
export HB_SLURM_JOB_SUBMIT_PLUGINS=hpcbridge
export HB_SLURM_PLUGSTACK="required $plugdir/spank_hpcbridge.so"
export HB_SLURM_BURST_NODE=1 HB_SLURM_NODES=1 HB_SLURM_CPUS=8
export HB_SLURM_MEM_MB=16000 HB_SLURM_GPUS=
slurm_up "$tmp/slurm" >"$tmp/slurm-up.log" 2>&1 ||
	die "slurm_up: $(tail -n 20 "$tmp/slurm-up.log")"
ok "Slurm up with job_submit/hpcbridge"

start_daemon() {
	rm -f "$tmp/hbd.sock"
	"$hbd" --config "$tmp/hpcbridge.yaml" --foreground \
		</dev/null >>"$tmp/hbd.log" 2>&1 &
	dpid=$!
	for _ in $(seq 200); do
		"$hbcall" "$tmp/hbd.sock" '{"op":"ping"}' >/dev/null 2>&1 &&
			break
		kill -0 "$dpid" 2>/dev/null || die "the daemon died at start"
		sleep 0.05
	done
	# the snapshot was written before it served; the plugin looks for a
	# new one every 100 ms
	sleep 0.5
}
q() { sqlite3 -readonly "$tmp/state.db" "$1" 2>/dev/null || true; }
tag() {
	scontrol show job "$1" 2>/dev/null |
		sed -n 's/.*AdminComment=\(hpcbridge:[^ ]* [^ ]* [^ ]*\).*/\1/p'
}
# submit TARGET N: sbatch as the user, echoing "TARGET-N"; prints its id
submit() {
	local opt=
	[ "$1" = kubernetes ] && opt=--hpcbridge-target=kubernetes
	# shellcheck disable=SC2086
	(cd "$tmp/work" && runuser -u "$user" -- sbatch --parsable $opt -A rec \
		-o "$tmp/work/out-$1-$2.txt" \
		--wrap "echo $1-$2; echo \$\$ >>$tmp/work/ran-$1-$2") \
		2>>"$tmp/sbatch.err" | cut -d';' -f1
}
# recorded ID SLURM_ID: the store has job ID bound to Slurm job SLURM_ID
recorded() {
	[ "$(q "SELECT slurm_job_id FROM jobs WHERE id = '$1'")" = "$2" ]
}
wait_recorded() {
	for _ in $(seq 150); do
		recorded "$1" "$2" && return 0
		sleep 0.2
	done
	return 1
}
# the estimate the tag of Slurm job SLURM_ID says the plugin charged
tag_cost() {
	scontrol show job "$1" 2>/dev/null |
		sed -n 's/.*AdminComment=hpcbridge:[^;]* cost=\([0-9]*\).*/\1/p'
}
# the estimate the store counts for gateway job ID (its decision's
# document, the side chosen), as the budgets read it
stored_cost() {
	q "SELECT json_extract(a.value, '\$.cost_micro') FROM decisions AS d,
	   json_each(d.inputs, '\$.placement.alternatives') AS a
	   WHERE d.job_id = '$1' AND json_extract(a.value, '\$.side') = d.target
	   ORDER BY d.id DESC LIMIT 1"
}
peer() {
	q "SELECT peer FROM events WHERE job_id = '$1' AND action = 'decide'"
}
state() {
	scontrol show job "$1" 2>/dev/null |
		sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'
}
wait_final() {
	local st=
	for _ in $(seq 300); do
		st=$(state "$1")
		case $st in COMPLETED | FAILED | CANCELLED | TIMEOUT) break ;; esac
		sleep 0.2
	done
	printf '%s\n' "$st"
}
# take JOB: submit it; its Slurm id in sid[JOB], its gateway id in
# hid[JOB], its tag checked
declare -A sid hid
take() {
	local j=$1 t
	sid[$j]=$(submit "${j%-*}" "${j#*-}")
	[ -n "${sid[$j]}" ] || die "sbatch $j: $(cat "$tmp/sbatch.err")"
	t=$(tag "${sid[$j]}")
	hid[$j]=$(printf '%s' "$t" | sed -n 's/^hpcbridge:\(hb-[0-9]*\) .*/\1/p')
	case $t in "hpcbridge:hb-"*" target=${j%-*} snap="[1-9]*) ;;
	*) die "job ${sid[$j]} ($j) tagged '$t'" ;;
	esac
}

# --- 1. the daemon up: notices bring the decisions
start_daemon
for j in slurm-0 kubernetes-0; do
	take "$j"
	wait_recorded "${hid[$j]}" "${sid[$j]}" ||
		die "$j (${hid[$j]}) not recorded with the daemon up"
	case $(peer "${hid[$j]}") in "notice uid "*) ;;
	*) bad "$j recorded by '$(peer "${hid[$j]}")', not a notice" ;;
	esac
done
ok "with the daemon up, notices recorded ${hid[slurm-0]} and ${hid[kubernetes-0]}"

# --- 2. the daemon killed: decisions in slurmctld only
kill_daemon
new="slurm-1 slurm-2 kubernetes-1 kubernetes-2"
for j in $new; do
	take "$j"
	[ -z "$(q "SELECT id FROM jobs WHERE id = '${hid[$j]}'")" ] ||
		bad "$j (${hid[$j]}) recorded with the daemon down"
done
ok "with the daemon down, slurmctld decided: $(for j in $new; do
	printf '%s=%s ' "$j" "${hid[$j]}"
done)"
# by hand, as the plugin tags: a held job under the lease's top id
top=$(q "SELECT value FROM seq WHERE name = 'job'")
sid[hand]=$( (cd "$tmp/work" && runuser -u "$user" -- sbatch --parsable \
	--hold -o /dev/null --wrap true) | cut -d';' -f1)
hid[hand]=$(printf 'hb-%06d' "$top")
scontrol update jobid="${sid[hand]}" \
	admincomment="hpcbridge:${hid[hand]} target=slurm snap=1795845206222" ||
	die "scontrol update of job ${sid[hand]}"
# and a burst job's proxy whose request does not read (a target no
# policy knows), under the id below: recorded from what Slurm says, and
# failed, so that nothing waits for it forever
req=$(printf '{"op":"decide","uid":%s,"target":"bogus"}' "$uid" | base64 -w0)
printf '#!/bin/sh\ntrue\n# hpcbridge-request v1 %s\n' "$req" >"$tmp/work/badreq.sh"
chmod 644 "$tmp/work/badreq.sh"
sid[badreq]=$( (cd "$tmp/work" && runuser -u "$user" -- sbatch --parsable \
	--hold -p burst -o /dev/null badreq.sh) | cut -d';' -f1)
hid[badreq]=$(printf 'hb-%06d' $((top - 1)))
scontrol update jobid="${sid[badreq]}" \
	admincomment="hpcbridge:${hid[badreq]} target=kubernetes snap=1795845206222" ||
	die "scontrol update of job ${sid[badreq]}"
new="$new hand badreq"

# --- 3. slurmctld restarted: what its plugin queued is gone
ctld=$(_hbs_pid_of "$tmp/slurm" slurmctld)
_hbs_stop "$ctld" slurmctld 30 || die "slurmctld did not stop"
_hbs_start "$tmp/slurm" slurmctld "$tmp/slurm/log/slurmctld.out" \
	slurmctld -D -f "$tmp/slurm/slurm.conf"
_hbs_verify_pid "$tmp/slurm" slurmctld slurmctld \
	"$tmp/slurm/run/slurmctld.pid" || die "slurmctld did not start again"
for _ in $(seq 300); do
	slurm_is_up "$tmp/slurm" 2>/dev/null && break
	sleep 0.1
done
for j in $new; do
	[ -n "$(state "${sid[$j]}")" ] ||
		die "job ${sid[$j]} ($j) lost by slurmctld's restart"
done
ok "slurmctld restarted; its jobs kept"

# --- 4. the daemon again: the reconciler rebuilds every decision
start_daemon
for j in $new; do
	if ! wait_recorded "${hid[$j]}" "${sid[$j]}"; then
		bad "$j (${hid[$j]}) not recorded with Slurm job ${sid[$j]}: $(q "SELECT id, target, slurm_job_id FROM jobs WHERE id = '${hid[$j]}'")"
		continue
	fi
	want=${j%-*}
	[ "$j" = hand ] && want=slurm
	[ "$j" = badreq ] && want=kubernetes
	got=$(q "SELECT target || ' ' || uid FROM jobs WHERE id = '${hid[$j]}'")
	[ "$got" = "$want $uid" ] ||
		bad "$j (${hid[$j]}): '$got', want '$want $uid'"
	[ "$(peer "${hid[$j]}")" = reconciler ] ||
		bad "$j (${hid[$j]}) recorded by '$(peer "${hid[$j]}")', not the reconciler"
done
# what the plugin charged counts against the budgets though no notice
# brought it: the tag's cost= is recorded with the rebuilt decision
for j in slurm-1 kubernetes-1; do
	c=$(tag_cost "${sid[$j]}")
	s=$(stored_cost "${hid[$j]}")
	if [ -n "$c" ] && [ "$c" -gt 0 ] && [ "$s" = "$c" ]; then
		ok "$j (${hid[$j]}): its estimate of $c micro-units counted"
	else
		bad "$j (${hid[$j]}): tag cost '$c', counted '$s'"
	fi
done
n=$(grep -c 'decision made in slurmctld recovered from Slurm' \
	"$tmp/hbd.log" || true)
[ "$n" -ge 5 ] &&
	ok "the reconciler recovered $n decisions, each with its Slurm job" ||
	bad "recovered $n decisions, want 5"
n=$(q "SELECT count(*) FROM jobs")
[ "$n" = 8 ] || bad "$n jobs in the store, want 8"
got=$(q "SELECT state || ': ' || coalesce(reason, '') FROM jobs WHERE id = '${hid[badreq]}'")
case $got in
"failed: "*"does not read"*) ok "a proxy whose request does not read is recorded failed: $got" ;;
*) bad "the proxy whose request does not read: '$got'" ;;
esac

# --- 5. the jobs go on: Slurm ones followed, burst ones run remotely
ran="slurm-1 slurm-2 kubernetes-1 kubernetes-2"
for j in $ran; do
	st=$(wait_final "${sid[$j]}")
	[ "$st" = COMPLETED ] || { bad "$j (job ${sid[$j]}): $st"; continue; }
	grep -qx "$j" "$tmp/work/out-$j.txt" 2>/dev/null ||
		bad "$j: output '$(cat "$tmp/work/out-$j.txt" 2>&1)'"
	[ "$(wc -l <"$tmp/work/ran-$j" 2>/dev/null)" = 1 ] ||
		bad "$j ran $(cat "$tmp/work/ran-$j" 2>/dev/null | wc -l) times"
done
ids=$(for j in $ran; do printf "'%s'," "${hid[$j]}"; done)
ids=${ids%,}
for _ in $(seq 50); do
	[ "$(q "SELECT count(*) FROM jobs WHERE id IN ($ids) AND state = 'succeeded'")" = 4 ] &&
		break
	sleep 0.2
done
got=$(q "SELECT group_concat(id || '=' || state, ' ') FROM jobs WHERE id IN ($ids)")
[ "$(q "SELECT count(*) FROM jobs WHERE id IN ($ids) AND state = 'succeeded'")" = 4 ] &&
	ok "recovered jobs ran once and ended succeeded: $got" ||
	bad "recovered jobs did not all end succeeded: $got"
scancel "${sid[hand]}" "${sid[badreq]}" 2>/dev/null || true

[ "$fails" = 0 ] || { tail -n 30 "$tmp/hbd.log"; exit 1; }
echo "plugin_recover: all checks passed"
