#!/usr/bin/env bash
# burst_kube_preempt.test.sh - Kueue's preemption of a burst job, end to end
# on the real Slurm and the emulated cluster (the sandbox: hb-kubemu in
# execute mode, hpcbridged with remote.backend kubernetes).  Kueue preempts
# an admitted MPIJob by setting spec.runPolicy.suspend back to true.  Where
# the emulator runs Kueue (LocalQueue burst of the sandbox's ClusterQueue
# hpc, 4 CPUs), the test makes it preempt: a high-priority MPIJob that
# needs the whole quota; deleting it lets Kueue admit the job again.
# Elsewhere it does what Kueue does, with kubectl patch of the suspend
# flag.  Jobs are submitted as the sandbox's user where it has one (root
# never bursts there):
#
#   * a running burst job whose MPIJob is suspended: its proxy is
#     suspended in Slurm (squeue ST=S), the job's state is suspended, one
#     audit event "preempted";
#   * unsuspended (admitted again): the proxy runs again, one "resumed",
#     and the job runs to its end;
#   * with kubernetes.preempted_replace_after set, a job left suspended
#     that long is placed on Slurm once: the MPIJob is deleted, a new
#     Slurm job in the job's own partition runs the script to completion,
#     and the proxy ends saying so, with one audit event "replaced";
#   * with kubernetes.queues.default set, the queue's wait is read from
#     Kueue's visibility API, or, where the cluster serves none (404), the
#     policy's default wait stands and the daemon's log says why.
#
# usage: burst_kube_preempt.test.sh BUILD_DIR SRC_DIR
set -euo pipefail

build=$(cd "${1:?BUILD_DIR}" && pwd)
src=$(cd "${2:?SRC_DIR}" && pwd)
tmp=$(mktemp -d /tmp/hb-preempt.XXXXXX)
chmod 755 "$tmp"
export HB_SANDBOX_BACKEND=kubernetes
# shellcheck source=lib/sandbox_test.sh
. "$src/tests/integration/lib/sandbox_test.sh"
sandbox_test_up
ok "sandbox up"
kube() { /usr/bin/python3 "$src/tests/integration/lib/kube.py" "$@"; }

k() { /usr/bin/kubectl --request-timeout=10s "$@"; }

# Where and as whom burst jobs are submitted: the sandbox's user, from the
# directory the cluster mounts, where the sandbox has them; else the
# caller from $tmp.  Scripts are written in $tmp/src.
mkdir -p "$tmp/src"
if declare -F submit_user >/dev/null && [ -n "${HB_SANDBOX_WORK:-}" ]; then
	wk=$HB_SANDBOX_WORK
	sub() { submit_user "$@"; }
else
	wk=$tmp
	sub() {
		local s=$1
		shift
		cp "$s" "$tmp/"
		(cd "$tmp" && sbatch --parsable "$@" "${s##*/}" \
			2>>"$tmp/sbatch.err") | cut -d';' -f1
	}
fi

# Whether the emulator runs Kueue with the sandbox's queue.
kueue=0
k get localqueue burst >/dev/null 2>&1 && kueue=1

# Preempt MPIJob $1 (as Kueue does), or let it be admitted again.
preempt() {
	if [ "$kueue" = 1 ]; then
		preemptor_create
	else
		k patch mpijob "$1" --type=merge \
			-p '{"spec":{"runPolicy":{"suspend":true}}}' >/dev/null
	fi
}
readmit() {
	if [ "$kueue" = 1 ]; then
		k delete mpijob preemptor --wait=false >/dev/null
	else
		k patch mpijob "$1" --type=merge \
			-p '{"spec":{"runPolicy":{"suspend":false}}}' >/dev/null
	fi
}

# squeue's state code of a job ("" once it is gone from squeue).
st_of() { squeue -h -j "$1" -o %t 2>/dev/null || true; }

# Wait (up to 30 s) until job $1's squeue state is $2.
wait_st() {
	local _
	for _ in $(seq 150); do
		[ "$(st_of "$1")" = "$2" ] && return 0
		sleep 0.2
	done
	return 1
}

# Wait until FILE holds TEXT.
wait_output() {
	local _
	for _ in $(seq 300); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.2
	done
	return 1
}

# The store, read as the daemon wrote it.
db() { sqlite3 -cmd '.timeout 5000' "$box/state.db" "$1"; }
# How many audit events ACTION job $1 has.
events() {
	db "SELECT count(*) FROM events WHERE job_id = '$1' AND action = '$2'"
}
job_col() { db "SELECT $2 FROM jobs WHERE id = '$1'"; }

# 1. Preempted, then admitted again.
cat >"$tmp/src/pre.sh" <<'EOF'
#!/bin/sh
#SBATCH --partition=gpu
#SBATCH --output=pre-%j.out
echo "pre job started"
sleep 6
echo "pre job done"
EOF
id=$(sub "$tmp/src/pre.sh")
[ -n "$id" ] || die "sbatch pre.sh: $(cat "$tmp/sbatch.err")"
hb=$(gateway_id "$id")
[ "$(field "$id" Partition)" = burst ] && ok "preempt: a proxy in burst" ||
	bad "preempt: proxy partition $(field "$id" Partition)"
wait_output "$wk/pre-$id.out" "pre job started" &&
	ok "preempt: the MPIJob runs" ||
	die "preempt: did not start: $(cat "$wk/pre-$id.out" 2>&1)"
preempt "$hb" || die "cannot preempt $hb (Kueue $kueue)"
[ "$kueue" = 1 ] && ok "preempt: by Kueue, for a high-priority MPIJob" ||
	ok "preempt: by kubectl patch (no Kueue in the emulator)"
wait_st "$id" S && ok "preempt: the proxy is suspended (squeue ST=S)" ||
	bad "preempt: proxy state $(st_of "$id"), not S"
[ "$(field "$id" JobState)" = SUSPENDED ] &&
	ok "preempt: scontrol says SUSPENDED" ||
	bad "preempt: JobState $(field "$id" JobState)"
[ "$(job_col "$hb" state)" = suspended ] &&
	ok "preempt: the job's state is suspended" ||
	bad "preempt: job state $(job_col "$hb" state)"
hpcbridge status "$hb" 2>&1 | grep -q suspended &&
	ok "preempt: hpcbridge status says suspended" ||
	bad "preempt status: $(hpcbridge status "$hb" 2>&1)"
[ "$(events "$hb" preempted)" = 1 ] && ok "preempt: one audit event" ||
	bad "preempt: $(events "$hb" preempted) 'preempted' events"
# replacement is off (preempted_replace_after 0): it stays suspended
sleep 3
[ "$(st_of "$id")" = S ] && ok "preempt: still suspended while preempted" ||
	bad "preempt: proxy state $(st_of "$id") while the MPIJob is suspended"
readmit "$hb" || die "cannot readmit $hb (Kueue $kueue)"
wait_st "$id" R && ok "re-admitted: the proxy runs again" ||
	bad "re-admitted: proxy state $(st_of "$id"), not R"
[ "$(events "$hb" resumed)" = 1 ] && ok "re-admitted: one audit event" ||
	bad "re-admitted: $(events "$hb" resumed) 'resumed' events"
st=$(wait_final "$id")
[ "$st" = COMPLETED ] && grep -qx "pre job done" "$wk/pre-$id.out" &&
	ok "re-admitted: the job ran to its end" ||
	bad "re-admitted: $st, $(cat "$wk/pre-$id.out" 2>&1)"
[ "$(job_col "$hb" state)" = succeeded ] &&
	ok "re-admitted: the job succeeded" ||
	bad "re-admitted: job state $(job_col "$hb" state)"

# 2. Left preempted past kubernetes.preempted_replace_after: placed on
# Slurm once.
replace_after 2
cat >"$tmp/src/rp.sh" <<'EOF'
#!/bin/sh
#SBATCH --partition=gpu
#SBATCH --output=rp-%j.out
echo "rp job started"
sleep 4
echo "rp job done"
EOF
# options on the command line, not in the script: the new job has them
id=$(sub "$tmp/src/rp.sh" --job-name=rp-cli --time=7)
[ -n "$id" ] || die "sbatch rp.sh: $(cat "$tmp/sbatch.err")"
hb=$(gateway_id "$id")
wait_output "$wk/rp-$id.out" "rp job started" &&
	ok "replace: the MPIJob runs" ||
	die "replace: did not start: $(cat "$wk/rp-$id.out" 2>&1)"
preempt "$hb" || die "cannot preempt $hb (Kueue $kueue)"
st=$(wait_final "$id")
[ "$st" = COMPLETED ] && ok "replace: the proxy ended ($st)" ||
	bad "replace: proxy $st"
new=$(job_col "$hb" slurm_job_id)
[ -n "$new" ] && [ "$new" != "$id" ] &&
	ok "replace: a new Slurm job $new is recorded" ||
	bad "replace: slurm_job_id $new (proxy $id)"
grep -q "placed on Slurm as job $new" "$wk/rp-$id.out" &&
	ok "replace: the proxy's output says where the job went" ||
	bad "replace: proxy output: $(cat "$wk/rp-$id.out" 2>&1)"
[ "$(field "$new" JobName)" = rp-cli ] &&
	[ "$(field "$new" TimeLimit)" = 00:07:00 ] &&
	ok "replace: the new job has the command line's options" ||
	bad "replace: new job $(field "$new" JobName) $(field "$new" TimeLimit)"
[ "$(field "$new" Partition)" = gpu ] &&
	ok "replace: the new job is in the job's own partition" ||
	bad "replace: new job partition $(field "$new" Partition)"
scontrol show job "$new" | grep -q "AdminComment=hpcbridge:$hb target=slurm" &&
	ok "replace: the new job is tagged target=slurm" ||
	bad "replace: new job's admin comment: $(scontrol show job "$new" | grep -o 'AdminComment=.*')"
scontrol show job "$id" | grep -q "AdminComment=hpcbridge-replaced:$hb" &&
	ok "replace: the proxy no longer carries the job's tag" ||
	bad "replace: proxy admin comment: $(scontrol show job "$id" | grep -o 'AdminComment=.*')"
st=$(wait_final "$new")
[ "$st" = COMPLETED ] && ok "replace: the new Slurm job COMPLETED" ||
	bad "replace: new job $st"
grep -qx "rp job started" "$wk/rp-$new.out" &&
	grep -qx "rp job done" "$wk/rp-$new.out" &&
	ok "replace: the script ran on Slurm from its start to its end" ||
	bad "replace: new job output: $(cat "$wk/rp-$new.out" 2>&1)"
grep -q "rp job done" "$wk/rp-$id.out" &&
	bad "replace: the preempted run went on to its end" || true
rc=0
kube get "$hb" >/dev/null 2>&1 || rc=$?
[ "$rc" = 3 ] && ok "replace: the MPIJob is deleted" ||
	bad "replace: MPIJob $hb still there (rc $rc)"
for _ in $(seq 50); do
	[ "$(job_col "$hb" state)" = succeeded ] && break
	sleep 0.2
done
[ "$(job_col "$hb" state)" = succeeded ] &&
	[ "$(job_col "$hb" target)" = slurm ] &&
	ok "replace: the job is recorded succeeded on Slurm" ||
	bad "replace: job $(job_col "$hb" target) $(job_col "$hb" state)"
sleep 3 # a second scan would find it again, if it could
[ "$(events "$hb" replaced)" = 1 ] && ok "replace: one audit event" ||
	bad "replace: $(events "$hb" replaced) 'replaced' events"
n=$(scontrol -o show job | grep -c "AdminComment=hpcbridge:$hb target=slurm" || true)
[ "$n" = 1 ] && ok "replace: exactly one Slurm job runs it" ||
	bad "replace: $n Slurm jobs tagged for $hb"
[ "$kueue" = 0 ] || readmit "$hb" # the preemptor goes

# 3. A queue named (the sandbox's, else team-a): its wait comes from
# Kueue's visibility API; without the API (404) the policy's default wait
# stands, and the log and the decisions say why.
q=$(sed -n 's/^    default: \([a-z0-9-]*\)$/\1/p' "$box/hpcbridge.yaml" | head -n1)
if [ -z "$q" ]; then
	q=team-a
	sed -i 's/^  namespace: default$/&\n  queues:\n    default: team-a/' \
		"$box/hpcbridge.yaml"
fi
sed -i 's/^placement:$/&\n  refresh_s: 1/' "$box/hpcbridge.yaml"
dpid=$(head -c 32 "$box/hpcbridged.pid" | tr -dc 0-9)
kill -HUP "$dpid"
for _ in $(seq 100); do
	[ "$(grep -c "configuration reloaded" "$box/hpcbridged.log")" = 2 ] &&
		break
	sleep 0.2
done
line=
for _ in $(seq 100); do
	line=$(grep -o "Kueue LocalQueue $q: [^\"]*" "$box/hpcbridged.log" |
		tail -n1 || true)
	[ -n "$line" ] && break
	sleep 0.2
done
(cd "$tmp/src" && hpcbridge explain rp.sh >"$tmp/explain.out" 2>&1) || true
case $line in
*"404"*)
	ok "queue: no visibility API: said in the log ($line)"
	grep -q "Kubernetes (queue [^)]*): no estimate" "$tmp/explain.out" &&
		ok "queue: the policy's default wait stands" ||
		bad "queue: explain: $(cat "$tmp/explain.out")"
	# a decision (sbatch --test-only runs job_submit too) says why
	(cd "$tmp/src" && sbatch --test-only rp.sh >/dev/null 2>&1) || true
	db "SELECT explanation FROM decisions ORDER BY id DESC LIMIT 1" |
		grep -q "^note: Kueue LocalQueue $q: not found (404" &&
		ok "queue: the decision's explanation says why" ||
		bad "queue: last decision: $(db "SELECT explanation FROM decisions ORDER BY id DESC LIMIT 1")"
	;;
*"workloads pending"*)
	ok "queue: Kueue's pending workloads read ($line)"
	grep -q "Kubernetes (queue [^)]*): no estimate" "$tmp/explain.out" &&
		bad "queue: explain has no wait: $(cat "$tmp/explain.out")" ||
		ok "queue: the wait comes from the queue"
	;;
*) bad "queue: nothing logged about LocalQueue $q" ;;
esac

sandbox_test_end
echo "all preemption checks passed"
