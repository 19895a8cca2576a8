#!/usr/bin/env bash
# qstat.test.sh - qstat and qdel (hpcbridge qstat / qdel, run by those
# names through links) for a PBS user in the sandbox, with the local
# remote backend standing in for the cluster:
#
#   * the sandbox's unprivileged user submits two jobs with sbatch: one
#     that stays on Slurm (debug) and one that bursts (gpu, a proxy in
#     burst); qstat lists both as NNN.<server> in state R, the long name
#     cut to 16 characters as Torque's table cuts it;
#   * qstat -f of the Slurm job agrees with scontrol: Job_Name, Job_Owner,
#     queue, exec_host, Resource_List.ncpus and .walltime, Output_Path,
#     job_state; the burst job's says hpcbridge_side = kubernetes and
#     its own size (2 nodes of 2), not its 1-CPU proxy's;
#   * qstat -a lists both in the alternative table;
#   * qdel of the Slurm job prints nothing and the job ends CANCELLED;
#     plain qstat no longer lists it, qstat -x shows it F, and qstat of
#     its id without -x says it has finished; a second qdel says the
#     request is invalid for the job's state; qstat -u oneself works;
#   * qdel 1234[] of the burst job cancels the proxy and its remote side;
#   * qdel of an unknown id says "Unknown Job Id ID.<server>", non-zero.
#
# usage: qstat.test.sh BUILD_DIR SRC_DIR
set -euo pipefail

build=$(cd "${1:?BUILD_DIR}" && pwd)
src=$(cd "${2:?SRC_DIR}" && pwd)
tmp=$(mktemp -d /tmp/hb-qstat.XXXXXX)
chmod 755 "$tmp"
export HB_SANDBOX_BACKEND=local
# shellcheck source=lib/sandbox_test.sh
. "$src/tests/integration/lib/sandbox_test.sh"
sandbox_test_up
ok "sandbox up"

# qstat and qdel under their PBS names
mkdir -p "$tmp/pbs"
ln -s "$build/bin/hpcbridge" "$tmp/pbs/qstat"
ln -s "$build/bin/hpcbridge" "$tmp/pbs/qdel"
server=$(hostname)
server=${server%%.*}
u=$HB_SANDBOX_USER
# as_u CMD...: CMD as the sandbox's user, from its work directory
as_u() { (cd "$HB_SANDBOX_WORK" && runuser -u "$u" -- "$@"); }
qs() { as_u "$tmp/pbs/qstat" "$@"; }

cat >"$tmp/stay.sh" <<'EOF'
#!/bin/sh
#SBATCH --job-name=stay_on_slurm_with_a_long_name
#SBATCH --partition=debug
#SBATCH --time=10
#SBATCH --output=/dev/null
sleep 300
EOF
cat >"$tmp/away.sh" <<'EOF'
#!/bin/sh
#SBATCH --job-name=away
#SBATCH --partition=gpu
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=2
#SBATCH --output=/dev/null
sleep 300
EOF
sid=$(submit_user "$tmp/stay.sh")
bid=$(submit_user "$tmp/away.sh")
[ -n "$sid" ] && [ -n "$bid" ] ||
	die "sbatch as $u: $(cat "$tmp/sbatch.err")"
ok "submitted Slurm job $sid and burst job $bid as $u"
[ "$(field "$bid" Partition)" = burst ] && ok "job $bid is a proxy in burst" ||
	bad "job $bid partition $(field "$bid" Partition)"

# both running, as qstat says (60 s at most)
for _ in $(seq 300); do
	qs >"$tmp/q" 2>&1 || true
	grep -q "^$sid\.$server .* R debug$" "$tmp/q" &&
		grep -q "^$bid\.$server .* R " "$tmp/q" && break
	sleep 0.2
done
echo "--- qstat"
cat "$tmp/q"
head -n 2 "$tmp/q" >"$tmp/head"
printf '%-25s %-16s %-15s %-8s %-1s %-5s\n' "Job ID" Name User "Time Use" S \
	Queue "-------------------------" "----------------" \
	"---------------" "--------" "-" "-----" >"$tmp/want"
cmp -s "$tmp/head" "$tmp/want" && ok "qstat: Torque's header" ||
	bad "qstat header: $(cat "$tmp/head")"
grep -q "^$sid\.$server  *stay_on_slurm_wi $u  *[0-9:]* R debug$" "$tmp/q" &&
	ok "qstat: the Slurm job R in debug, its name cut to 16" ||
	bad "qstat: no running row for $sid"
grep -q "^$bid\.$server  *away  *$u  *[0-9:]* R " "$tmp/q" &&
	ok "qstat: the burst job R" || bad "qstat: no running row for $bid"

# qstat -f against scontrol
qs -f "$sid" >"$tmp/f" 2>&1 || bad "qstat -f $sid: rc $?"
echo "--- qstat -f $sid"
cat "$tmp/f"
attr() { sed -n "s/^    $1 = //p" "$tmp/f"; }
# same ATTR FIELD: qstat -f's ATTR is what scontrol shows as FIELD
same() {
	[ "$(attr "$1")" = "$(field "$sid" "$2")" ] &&
		ok "qstat -f: $1 is scontrol's $2" ||
		bad "$1 '$(attr "$1")' vs '$(field "$sid" "$2")'"
}
[ "$(head -n1 "$tmp/f")" = "Job Id: $sid.$server" ] && ok "qstat -f: Job Id" ||
	bad "qstat -f first line: $(head -n1 "$tmp/f")"
same Job_Name JobName
[ "$(attr Job_Owner)" = "$u@$server" ] &&
	field "$sid" UserId | grep -q "^$u(" &&
	ok "qstat -f: Job_Owner $u@$server, scontrol's user" ||
	bad "Job_Owner '$(attr Job_Owner)' vs $(field "$sid" UserId)"
same queue Partition
same exec_host NodeList
same Resource_List.ncpus NumCPUs
[ "$(attr job_state)" = R ] && [ "$(field "$sid" JobState)" = RUNNING ] &&
	ok "qstat -f: job_state R, scontrol RUNNING" ||
	bad "job_state '$(attr job_state)' vs $(field "$sid" JobState)"
same Resource_List.walltime TimeLimit
same Output_Path StdOut
[ "$(attr hpcbridge_side)" = slurm ] && [ -n "$(attr ctime)" ] &&
	ok "qstat -f: hpcbridge_side slurm, ctime set" ||
	bad "hpcbridge_side '$(attr hpcbridge_side)' ctime '$(attr ctime)'"
qs -f "$bid.$server" >"$tmp/f" 2>&1 || bad "qstat -f $bid: rc $?"
echo "--- qstat -f $bid.$server"
cat "$tmp/f"
[ "$(attr hpcbridge_side)" = kubernetes ] && [ "$(attr job_state)" = R ] &&
	ok "qstat -f: the burst job's side is kubernetes, R" ||
	bad "burst job: side '$(attr hpcbridge_side)' state '$(attr job_state)'"
# its size is the job's, not its 1-CPU proxy's
[ "$(attr Resource_List.nodect)" = 2 ] &&
	[ "$(attr Resource_List.nodes)" = 2:ppn=2 ] &&
	[ "$(field "$bid" NumNodes)" = 1 ] &&
	ok "qstat -f: the burst job asks 2:ppn=2 (its proxy: 1 node)" ||
	bad "burst job size: nodect '$(attr Resource_List.nodect)' nodes '$(attr Resource_List.nodes)' proxy $(field "$bid" NumNodes)"

qs -a >"$tmp/a" 2>&1 || bad "qstat -a: rc $?"
echo "--- qstat -a"
cat "$tmp/a"
grep -q "^Job ID  *Username  *Queue  *Jobname  *SessID  *NDS  *TSK  *Memory  *Time  *S  *Time$" "$tmp/a" &&
	grep -q "^$sid\.$server  *$u  *debug .* R " "$tmp/a" &&
	grep -q "^$bid\.$server  *$u " "$tmp/a" &&
	ok "qstat -a: the alternative table with both jobs" ||
	bad "qstat -a"

# qdel the Slurm job: silent, and it ends
out=$(as_u "$tmp/pbs/qdel" "$sid.$server" 2>&1) && [ -z "$out" ] &&
	ok "qdel $sid.$server: silent, exit 0" || bad "qdel $sid: '$out'"
st=$(wait_final "$sid")
[ "$st" = CANCELLED ] && ok "qdel: Slurm job $sid CANCELLED" ||
	bad "after qdel: $st"
for _ in $(seq 100); do
	qs -x >"$tmp/x" 2>&1 || true
	grep -q "^$sid\.$server .* F debug$" "$tmp/x" && break
	sleep 0.2
done
echo "--- qstat -x"
cat "$tmp/x"
grep -q "^$sid\.$server .* F debug$" "$tmp/x" && ok "qstat -x: $sid F" ||
	bad "qstat -x: no finished row for $sid"
qs >"$tmp/q" 2>&1 || true
! grep -q "^$sid\." "$tmp/q" && grep -q "^$bid\." "$tmp/q" &&
	ok "qstat: $sid gone, $bid still listed" || bad "qstat after qdel: $(cat "$tmp/q")"
if out=$(qs "$sid" 2>&1); then
	bad "qstat $sid (finished, no -x) exit 0: $out"
else
	case $out in *"$sid.$server Job has finished, use -x"*)
		ok "qstat $sid: has finished, use -x" ;;
	*) bad "qstat $sid: '$out'" ;;
	esac
fi

if out=$(as_u "$tmp/pbs/qdel" "$sid" 2>&1); then
	bad "qdel of the ended $sid: exit 0"
else
	[ "$out" = "qdel: Request invalid for state of job $sid.$server" ] &&
		ok "qdel $sid again: Request invalid for state, non-zero" ||
		bad "qdel $sid again: '$out'"
fi
qs -u "$u" >"$tmp/q" 2>&1 && grep -q "^$bid\.$server " "$tmp/q" &&
	ok "qstat -u $u (oneself): the burst job" || bad "qstat -u $u: $(cat "$tmp/q")"

# qdel NNN[] of the burst job: the proxy and its remote side
hbid=$(gateway_id "$bid")
out=$(as_u "$tmp/pbs/qdel" "$bid[]" 2>&1) && [ -z "$out" ] &&
	ok "qdel $bid[]: silent, exit 0" || bad "qdel $bid[]: '$out'"
st=$(wait_final "$bid")
[ "$st" = CANCELLED ] && ok "qdel: proxy $bid CANCELLED" ||
	bad "proxy after qdel: $st"
for _ in $(seq 100); do
	hpcbridge status "$hbid" 2>/dev/null | grep -q cancelled && break
	sleep 0.2
done
hpcbridge status "$hbid" 2>&1 | grep -q cancelled &&
	ok "qdel: the burst job $hbid is cancelled remotely" ||
	bad "status $hbid: $(hpcbridge status "$hbid" 2>&1 | head -n 3)"

# an id nobody has
if out=$(as_u "$tmp/pbs/qdel" 99999 2>&1); then
	bad "qdel 99999: exit 0"
else
	[ "$out" = "qdel: Unknown Job Id 99999.$server" ] &&
		ok "qdel 99999: Unknown Job Id, non-zero" || bad "qdel 99999: '$out'"
fi

sandbox_test_end
