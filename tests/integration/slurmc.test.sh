#!/usr/bin/env bash
# The Slurm client (gateway/slurm/slurmc.c) against a real, private Slurm 22.05.
#
# usage: slurmc.test.sh BUILD_DIR SOURCE_DIR
#
# Drives BUILD_DIR/tests/slurmc_probe (tests/integration/slurmc_probe.c)
# and checks what it says against Slurm's own tools (squeue, sinfo,
# scontrol): opening a bad slurm.conf fails without ending the process;
# partitions and nodes list what lib/slurm.sh configured; a short job is
# seen PENDING/RUNNING/COMPLETED with exit 0 and only the environment it
# was given, its allocation as scontrol's TRES says it (an exclusive job
# with a typed GPU too), and a suspended job's end - start - suspended
# as scontrol's RunTime; `exit 3` ends FAILED with exit code 3; every request field
# reaches Slurm; a held job and a running job cancel to CANCELLED, and a
# second cancel says "already done"; will_run answers for a job that fits
# and refuses one that cannot; a second poll of a quiet queue is Slurm's
# "no change" with no callback; set_comment shows in squeue %k; a
# running job suspends (squeue S) and resumes (R), twice over, and its
# admin comment can be replaced; a job
# submitted for another uid runs as that user, and that user cannot act
# for root.  A job submitted for a user is submitted as that user (the
# RPC made by a child that has become the user): a RootOnly partition
# refuses it, as does one with AllowGroups=root; a job_submit.lua sees
# the user's uid as submit_uid; root still submits there.
set -euo pipefail

build=${1:?usage: slurmc.test.sh BUILD_DIR SOURCE_DIR}
src=${2:?usage: slurmc.test.sh BUILD_DIR SOURCE_DIR}
build=$(cd "$build" && pwd -P)
src=$(cd "$src" && pwd -P)
probe="$build/tests/slurmc_probe"

# shellcheck source=lib/slurm.sh
. "$src/tests/integration/lib/slurm.sh"

fails=0
passes=0
ok() { passes=$((passes + 1)); }
bad() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

[ -x "$probe" ] || { echo "FAIL: $probe not built" >&2; exit 1; }

# Only ever talk to a Slurm of our own.
slurm_clean_env

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hb-slurmc.XXXXXX")
chmod 0755 "$tmp"
user=""
cleanup() {
	local rc=$?
	slurm_down "$tmp/slurm" || true
	if [ -n "$user" ]; then
		userdel "$user" 2>/dev/null || true
	fi
	if [ "$rc" = 0 ] && [ -z "${HB_KEEP_TMP:-}" ]; then
		rm -rf "$tmp"
	else
		echo "slurmc: files kept in $tmp" >&2
	fi
	exit "$rc"
}
trap cleanup EXIT

# libslurm 22.05 leaks a string per job table with GRES: excused by
# tests/integration/lsan.supp, as for every integration test.
export LSAN_OPTIONS="suppressions=$src/tests/integration/lsan.supp:print_suppressions=0"

# run NAME CMD...: run the probe, keep stdout in $tmp/NAME.out and stderr
# in $tmp/NAME.err; $rc gets its exit status.
rc=0
run() {
	local name=$1
	shift
	rc=0
	"$@" >"$tmp/$name.out" 2>"$tmp/$name.err" || rc=$?
}
# field NAME KEY: the value of KEY=... in $tmp/NAME.out (first match).
field() {
	sed -n "s/^\(.* \)\{0,1\}$2=\([^ ]*\).*/\2/p" "$tmp/$1.out" | head -n1
}
# line NAME KEY: the rest of the line KEY=... in $tmp/NAME.out.
line() { sed -n "s/^$2=//p" "$tmp/$1.out" | head -n1; }
show() { sed 's/^/    /' "$tmp/$1.out" "$tmp/$1.err" >&2; }

# expect_rc NAME WANT DESC
expect_rc() {
	if [ "$rc" = "$2" ]; then ok; else
		bad "$3: exit $rc, want $2"
		show "$1"
	fi
}
# expect_eq GOT WANT DESC
expect_eq() {
	if [ "$1" = "$2" ]; then ok; else bad "$3: got '$1', want '$2'"; fi
}

# ---------------------------------------------------------------- 1. open
# Before any Slurm exists: a missing or malformed slurm.conf is an error,
# and the process lives to say so (libslurm itself would exit).
run open_missing "$probe" open "$tmp/no-such.conf"
expect_rc open_missing 3 "open of a missing slurm.conf"
expect_eq "$(field open_missing error)" ENOENT "missing slurm.conf"
grep -q 'no such file' "$tmp/open_missing.err" && ok ||
	bad "missing slurm.conf: message"

printf 'ClusterName=x\nthis is not slurm.conf syntax ===\n' >"$tmp/bad.conf"
run open_bad "$probe" open "$tmp/bad.conf"
expect_rc open_bad 1 "open of a malformed slurm.conf"
expect_eq "$(field open_bad error)" EINVAL "malformed slurm.conf"
grep -q 'libslurm refuses it' "$tmp/open_bad.err" && ok ||
	{ bad "malformed slurm.conf: libslurm's reason"; show open_bad; }

run open_dir "$probe" open "$tmp"
expect_eq "$(field open_dir error)" EINVAL "a directory as slurm.conf"

# NULL means $SLURM_CONF.
rc=0
SLURM_CONF="$tmp/no-such.conf" "$probe" open >"$tmp/open_env.out" \
	2>"$tmp/open_env.err" || rc=$?
expect_rc open_env 3 "open(NULL) with SLURM_CONF naming a missing file"

# ------------------------------------------------------------ 2. Slurm up
# Partitions a user may not submit to (section 11): RootOnly (checked by
# slurmctld against the submitting uid) and AllowGroups=root (against the
# job's user); and a site policy that shows the submitting uid it saw.
export HB_SLURM_EXTRA_CONF="PartitionName=rootonly Nodes=hb1 MaxTime=INFINITE State=UP RootOnly=YES
PartitionName=admins Nodes=hb1 MaxTime=INFINITE State=UP AllowGroups=root
PartitionName=policed Nodes=hb1 MaxTime=INFINITE State=UP"
export HB_SLURM_JOB_SUBMIT_LUA='
function slurm_job_submit(job_desc, part_list, submit_uid)
	if job_desc.partition == "policed" then
		job_desc.comment = "submit_uid=" .. submit_uid
	end
	return slurm.SUCCESS
end
function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
	return slurm.SUCCESS
end'
HB_SLURM_READY_TIMEOUT=60 slurm_up "$tmp/slurm"
mkdir -p "$tmp/work"
chmod 0777 "$tmp/work"

run open_ok "$probe" open
expect_rc open_ok 0 "open(NULL) with SLURM_CONF set"
expect_eq "$(field open_ok conf)" "$(cd "$tmp/slurm" && pwd -P)/slurm.conf" \
	"open(NULL): the file used"
run reopen "$probe" reopen
expect_rc reopen 0 "open twice, close, open again"
cp "$SLURM_CONF" "$tmp/other.conf"
run conflict "$probe" conflict "$tmp/other.conf"
expect_rc conflict 0 "a second slurm.conf in one process is ECONFLICT"

# ------------------------------------------------ 3. partitions and nodes
run parts "$probe" partitions
expect_rc parts 0 "partitions"
expect_eq "$(grep -c '^partition=' "$tmp/parts.out")" \
	"$(sinfo -h -o '%R' | sort -u | wc -l)" "partition count"
while read -r name avail nnodes nodelist; do
	l=$(grep "^partition=$name " "$tmp/parts.out" || true)
	[ -n "$l" ] || { bad "partition $name missing"; continue; }
	case "$avail" in up) want=UP ;; down) want=DOWN ;; *) want=$avail ;; esac
	[[ "$l" == *" state=$want "* ]] && ok || bad "$name: state: $l"
	[[ "$l" == *" nodes=$nnodes "* ]] && ok || bad "$name: nodes: $l"
	[[ "$l" == *" list=$nodelist" ]] && ok || bad "$name: list: $l"
	[[ "$l" == *" max_time=UNLIMITED "* ]] && ok || bad "$name: time: $l"
	cpus=$(scontrol show partition "$name" |
		sed -n 's/.*TotalCPUs=\([0-9]*\).*/\1/p')
	[[ "$l" == *" cpus=$cpus "* ]] && ok || bad "$name: cpus $cpus: $l"
done < <(sinfo -h -o '%R %a %D %N' | sort -u)
grep -q '^partition=debug .* default=1 ' "$tmp/parts.out" && ok ||
	bad "debug is the default partition"
grep -q '^partition=gpu .* default=0 ' "$tmp/parts.out" && ok ||
	bad "gpu is not the default partition"

run nodes "$probe" nodes
expect_rc nodes 0 "nodes"
expect_eq "$(grep -c '^node=' "$tmp/nodes.out")" 4 "node records (hb1..hb4)"
while read -r name state cpus mem; do
	l=$(grep "^node=$name " "$tmp/nodes.out" || true)
	[ -n "$l" ] || { bad "node $name missing"; continue; }
	[[ "$l" == *" state=$state "* ]] && ok || bad "$name: state $state: $l"
	[[ "$l" == *" cpus=$cpus "* ]] && ok || bad "$name: cpus $cpus: $l"
	[[ "$l" == *" mem=$mem "* ]] && ok || bad "$name: mem $mem: $l"
	[[ "$l" == *" gres=gpu:a100:4,gpu:h100:4" ]] && ok || bad "$name: gres: $l"
done < <(sinfo -h -N -o '%N %T %c %m' | sort -u)
grep -q '^node=hb1 state=idle cpus=64 alloc_cpus=0 mem=512000 ' \
	"$tmp/nodes.out" && ok || { bad "hb1 idle, 64 CPUs"; show nodes; }

# ------------------------------------------------------- 4. a short job
export HB_PROBE_LEAK=from-the-caller
run sub_ok "$probe" submit --name hb-ok --workdir "$tmp/work" \
	--output "$tmp/work/ok.out" --time 5 --env HB_PROBE_VAR=given \
	--wrap 'echo "var=$HB_PROBE_VAR leak=${HB_PROBE_LEAK:-unset}"; sleep 3'
unset HB_PROBE_LEAK
expect_rc sub_ok 0 "submit a short job"
id_ok=$(field sub_ok job)
expect_eq "$(squeue -h -j "$id_ok" -o '%j %l')" "hb-ok 5:00" \
	"name and time limit in squeue"
run watch_ok "$probe" watch "$id_ok" 60
expect_rc watch_ok 0 "poll until the short job ends"
expect_eq "$(field watch_ok state)" COMPLETED "short job state"
expect_eq "$(field watch_ok exit)" 0 "short job exit code"
expect_eq "$(line watch_ok nodes)" hb1 "short job nodes"
[[ ",$(line watch_ok states)," == *,RUNNING,COMPLETED,* ]] && ok ||
	bad "short job seen RUNNING then COMPLETED: $(line watch_ok states)"
expect_eq "$(cat "$tmp/work/ok.out" 2>/dev/null)" "var=given leak=unset" \
	"the job gets the given environment, not the caller's"
run job_ok "$probe" job "$id_ok"
expect_rc job_ok 0 "one job"
expect_eq "$(field job_ok state) $(field job_ok exit)" "COMPLETED 0" \
	"hb_slurmc_job of the short job"
expect_eq "$(line job_ok name)" hb-ok "hb_slurmc_job: name"
# its allocation, as scontrol's TRES says it (memory in M, G or T)
tres_of() { scontrol show job -o "$1" | sed -n 's/.* TRES=\([^ ]*\).*/\1/p'; }
tres_get() { printf '%s\n' "$1" | tr , '\n' | sed -n "s/^$2=//p"; }
mib() {
	case $1 in
	*T) echo $((${1%T} * 1048576)) ;;
	*G) echo $((${1%G} * 1024)) ;;
	*M) echo "${1%M}" ;;
	*) echo "${1:-0}" ;;
	esac
}
tres=$(tres_of "$id_ok")
expect_eq "$(field job_ok alloc_cpus)" "$(tres_get "$tres" cpu)" \
	"short job: CPUs as TRES=$tres"
expect_eq "$(field job_ok alloc_mem_mib)" "$(mib "$(tres_get "$tres" mem)")" \
	"short job: memory as TRES=$tres"
expect_eq "$(field job_ok alloc_nodes) $(field job_ok exclusive)" "1 0" \
	"short job: one node, not exclusive"
expect_eq "$(field job_ok suspended)" 0 "short job: never suspended"

# GPUs.  Without slurmdbd no TRES names them (AccountingStorageTRES=
# gres/gpu needs it): they come from what each node holds (scontrol -d:
# GRES=gpu:a100:1(IDX:0)) while the job runs, and the poll remembers them
# for the end, when Slurm drops that detail.
run sub_gpu "$probe" submit --partition gpu --gres gpu:a100:1 \
	--workdir "$tmp/work" --output /dev/null --wrap 'sleep 2'
expect_rc sub_gpu 0 "submit a GPU job"
id_gpu=$(field sub_gpu job)
for _ in $(seq 1 100); do
	[ "$(squeue -h -j "$id_gpu" -o %T)" = RUNNING ] && break
	sleep 0.1
done
run job_gpu "$probe" job "$id_gpu"
expect_eq "$(field job_gpu gpus) $(field job_gpu exclusive)" "a100:1 0" \
	"running GPU job: the typed GPU, shared node"
run watch_gpu "$probe" watch "$id_gpu" 60
expect_eq "$(field watch_gpu state) $(field watch_gpu gpus)" \
	"COMPLETED a100:1" "the GPU job's end carries its GPU"
# A whole node: every CPU and every GPU of hb1 (Slurm gives an
# exclusive job all of a node's GRES).
run sub_excl "$probe" submit --exclusive --workdir "$tmp/work" \
	--output /dev/null --wrap 'sleep 2'
id_excl=$(field sub_excl job)
run watch_excl "$probe" watch "$id_excl" 60
tres=$(tres_of "$id_excl")
expect_eq "$(field watch_excl state) $(field watch_excl exclusive)" \
	"COMPLETED 1" "--exclusive: exclusive"
expect_eq "$(field watch_excl alloc_cpus)" "$(tres_get "$tres" cpu)" \
	"exclusive job: CPUs as TRES=$tres"
expect_eq "$(field watch_excl gpus)" "a100:4,h100:4" \
	"exclusive job: the node's GPUs"

# ------------------------------------------------------------ 5. exit 3
run sub_fail "$probe" submit --workdir "$tmp/work" --output /dev/null \
	--wrap 'exit 3'
id_fail=$(field sub_fail job)
run watch_fail "$probe" watch "$id_fail" 60
expect_rc watch_fail 0 "poll until the failing job ends"
expect_eq "$(field watch_fail state)" FAILED "exit 3: state"
expect_eq "$(field watch_fail exit)" 3 "exit 3: exit code"
expect_eq "$(field watch_fail signal)" 0 "exit 3: no signal"
expect_eq "$(squeue -h -t all -j "$id_fail" -o '%T')" FAILED "squeue agrees"

# ------------------------------------- 6. a held job carries every field
run sub_held "$probe" submit --hold --name hb-held --partition gpu \
	--workdir "$tmp/work" --output "$tmp/work/held.out" \
	--error "$tmp/work/held.err" --time inf --ntasks 4 --cpus-per-task 2 \
	--mem-per-cpu 100 --gres gpu:a100:1 --comment phase=queued \
	--admin-comment hb:42 --wrap 'sleep 300'
expect_rc sub_held 0 "submit a held job"
id_held=$(field sub_held job)
sc=$(scontrol show job -o "$id_held")
for want in JobName=hb-held Partition=gpu Priority=0 TimeLimit=UNLIMITED \
	NumCPUs=8 NumTasks=4 CPUs/Task=2 MinMemoryCPU=100M \
	TresPerNode=gres:gpu:a100:1 Comment=phase=queued AdminComment=hb:42 \
	"StdOut=$tmp/work/held.out" "StdErr=$tmp/work/held.err" \
	"WorkDir=$tmp/work" Reason=JobHeldUser; do
	[[ " $sc " == *" $want "* ]] && ok || bad "held job: $want not in: $sc"
done
run job_held "$probe" job "$id_held"
expect_eq "$(field job_held state) $(field job_held held)" "PENDING 1" \
	"held job: PENDING, held"
expect_eq "$(line job_held reason)" JobHeldUser "held job: reason"
expect_eq "$(line job_held admin_comment)" hb:42 "held job: admin comment"

run sub_mem "$probe" submit --hold --nodes 2 --ntasks-per-node 3 \
	--mem 2048 --comment to-clear --workdir "$tmp/work" --output /dev/null \
	--wrap true
sub_mem_id=$(field sub_mem job)
sc=$(scontrol show job -o "$sub_mem_id")
for want in NumNodes=2-2 NumTasks=6 NumCPUs=6 MinMemoryNode=2G; do
	[[ " $sc " == *" $want "* ]] && ok || bad "per-node job: $want not in: $sc"
done

# ---------------------------------------------------------- 7. comment
run comment "$probe" set-comment "$id_held" "phase=Running pods=3/4"
expect_rc comment 0 "set_comment"
expect_eq "$(squeue -h -o %k -j "$id_held")" "phase=Running pods=3/4" \
	"set_comment shows in squeue %k"
long=$(printf 'x%.0s' $(seq 1 3000))
run comment_long "$probe" set-comment "$id_held" "$long"
expect_eq "$(field comment_long error)" ETOOBIG "a 3000-byte comment"
expect_eq "$(squeue -h -o %k -j "$id_held")" "phase=Running pods=3/4" \
	"a refused comment leaves the old one"
run comment_clear "$probe" set-comment "$sub_mem_id" ""
expect_rc comment_clear 0 "set_comment with an empty text"
expect_eq "$(squeue -h -o '[%k]' -j "$sub_mem_id")" "[]" \
	"an empty text clears the comment"
run comment_gone "$probe" set-comment "$id_fail" x
expect_eq "$(field comment_gone error)" ESTATE "set_comment on an ended job"

# ----------------------------------------------------------- 8. cancel
run cancel_held "$probe" cancel "$id_held"
expect_eq "$(field cancel_held result)" cancelled "cancel a held job"
run watch_held "$probe" watch "$id_held" 60
expect_eq "$(field watch_held state)" CANCELLED "held job after cancel"
run cancel_again "$probe" cancel "$id_held"
expect_rc cancel_again 0 "cancel an ended job"
expect_eq "$(field cancel_again result)" "done" "cancel an ended job: done"
run cancel_none "$probe" cancel 999999
expect_rc cancel_none 3 "cancel an unknown job"
expect_eq "$(field cancel_none error)" ENOENT "cancel an unknown job"
run job_none "$probe" job 999999
expect_rc job_none 3 "an unknown job"

run sub_long "$probe" submit --workdir "$tmp/work" --output /dev/null \
	--wrap 'sleep 300'
id_long=$(field sub_long job)
for _ in $(seq 1 300); do
	[ "$(squeue -h -j "$id_long" -o %T)" = RUNNING ] && break
	sleep 0.1
done
expect_eq "$(squeue -h -j "$id_long" -o %T)" RUNNING "long job runs"
# suspend and resume (slurmc_suspend.c): squeue says S, then R; asking
# again for what is already so is no error; an unknown job is refused
run susp "$probe" suspend "$id_long"
expect_eq "$(field susp result)" suspended "suspend a running job"
expect_eq "$(squeue -h -j "$id_long" -o %t)" S "suspended job: squeue S"
run susp_again "$probe" suspend "$id_long"
expect_rc susp_again 0 "suspend a suspended job"
sleep 2 # suspended for 2 s or more: run time leaves it out
run resume "$probe" resume "$id_long"
expect_eq "$(field resume result)" resumed "resume a suspended job"
expect_eq "$(squeue -h -j "$id_long" -o %t)" R "resumed job: squeue R"
run resume_again "$probe" resume "$id_long"
expect_rc resume_again 0 "resume a running job"
# (slurmctld 22.05 drops the connection for an unknown job: EUNAVAIL)
run susp_none "$probe" suspend 999999
[ "$rc" != 0 ] && ok || bad "suspend an unknown job: exit 0"
run admin_c "$probe" set-admin-comment "$id_long" "hb-replaced:hb-1"
expect_rc admin_c 0 "set_admin_comment"
expect_eq "$(scontrol show job "$id_long" | sed -n 's/.*AdminComment=\([^ ]*\).*/\1/p')" \
	"hb-replaced:hb-1" "set_admin_comment shows in scontrol"
run cancel_long "$probe" cancel "$id_long"
expect_eq "$(field cancel_long result)" cancelled "cancel a running job"
run watch_long "$probe" watch "$id_long" 60
expect_eq "$(field watch_long state)" CANCELLED "running job after cancel"
# end - start - suspended is Slurm's own run time (scontrol's RunTime)
run job_long "$probe" job "$id_long"
susp=$(field job_long suspended)
[ "${susp:-0}" -ge 2 ] && ok || bad "suspended job: suspended=$susp, want >= 2"
rt=$(scontrol show job -o "$id_long" | sed -n 's/.* RunTime=\([^ ]*\).*/\1/p')
rt_s=$(echo "$rt" | awk -F'[-:]' '{ s = 0; for (i = 1; i <= NF; i++)
	s = s * (NF == 4 && i == 2 ? 24 : 60) + $i; print s }')
expect_eq "$(($(field job_long end) - $(field job_long start) - susp))" \
	"$rt_s" "end - start - suspended is RunTime=$rt"

# -------------------------------------------------------- 9. will_run
t0=$(date +%s)
run wr_fit "$probe" will-run --ntasks 2 --time 10 --wrap true
expect_rc wr_fit 0 "will_run for a job that fits"
start=$(field wr_fit start)
if [ -n "$start" ] && [ "$start" -ge $((t0 - 5)) ] &&
	[ "$start" -le $((t0 + 120)) ]; then ok; else
	bad "will_run start $start, now $t0"
fi
expect_eq "$(field wr_fit nodes)" hb1 "will_run nodes"
run wr_nofit "$probe" will-run --cpus-per-task 65 --wrap true
expect_rc wr_nofit 1 "will_run for a job no node can hold"
expect_eq "$(field wr_nofit error)" ESLURM "will_run refusal"
grep -q 'configuration is not available' "$tmp/wr_nofit.err" && ok ||
	{ bad "will_run refusal: Slurm's reason"; show wr_nofit; }
run wr_bad "$probe" will-run --mem 10 --mem-per-cpu 10 --wrap true
expect_eq "$(field wr_bad error)" ECONFLICT "two memory kinds"

# ------------------------------------------------------- 10. poll twice
# The queue is quiet now (every job has ended).
run poll "$probe" poll-twice
expect_rc poll 0 "second poll of a quiet queue"
expect_eq "$(field poll second_unchanged)" 1 "second poll: Slurm said no change"
expect_eq "$(field poll second_reported)" 0 "second poll: no callback"
nj=$(squeue -h -t all -o %i | sort -u | wc -l)
expect_eq "$(field poll initial_reported)" "$nj" "first poll reports every job"

# ---------------------------------------------------- 11. another user
if [ "$(id -u)" = 0 ]; then
	user="hbsc$$"
	useradd -M -r -s /usr/sbin/nologin "$user"
	uid=$(id -u "$user")
	gid=$(id -g "$user")
	run sub_user "$probe" submit --uid "$uid" --gid "$gid" --workdir /tmp \
		--output /dev/null --wrap 'test "$(id -u)" = '"$uid"
	expect_rc sub_user 0 "submit as uid $uid"
	id_user=$(field sub_user job)
	expect_eq "$(squeue -h -t all -j "$id_user" -o %u)" "$user" \
		"the job is the user's (squeue %u)"
	run watch_user "$probe" watch "$id_user" 60
	expect_eq "$(field watch_user state) $(field watch_user uid)" \
		"COMPLETED $uid" "the job ran as the user"

	as_user() {
		setpriv --reuid="$user" --regid="$user" --clear-groups "$@"
	}
	# Submitted for the user, the RPC is the user's: Slurm's checks on
	# the submitting uid apply to the user, not to root.
	run sub_rootonly "$probe" submit --uid "$uid" --gid "$gid" \
		--partition rootonly --workdir /tmp --output /dev/null \
		--hold --wrap true
	expect_rc sub_rootonly 1 "submit for uid $uid into a RootOnly partition"
	expect_eq "$(field sub_rootonly error)" EPERM \
		"RootOnly refuses the user (was accepted when root submitted)"
	grep -q 'as uid '"$uid"'.*Access/permission denied' \
		"$tmp/sub_rootonly.err" && ok ||
		{ bad "RootOnly refusal: Slurm's reason"; show sub_rootonly; }
	expect_eq "$(squeue -h -t all -p rootonly -o %i | wc -l)" 0 \
		"no job of the user's in the RootOnly partition"
	run sub_admins "$probe" submit --uid "$uid" --gid "$gid" \
		--partition admins --workdir /tmp --output /dev/null \
		--hold --wrap true
	expect_eq "$(field sub_admins error)" EPERM \
		"AllowGroups=root refuses the user"
	run sub_policed "$probe" submit --uid "$uid" --gid "$gid" \
		--partition policed --workdir /tmp --output /dev/null \
		--hold --wrap true
	expect_rc sub_policed 0 "submit for the user into a policed partition"
	expect_eq "$(squeue -h -j "$(field sub_policed job)" -o '%u %k')" \
		"$user submit_uid=$uid" \
		"job_submit.lua sees the user as the submitter"
	run root_rootonly "$probe" submit --partition rootonly --hold \
		--workdir /tmp --output /dev/null --admin-comment hb:root \
		--wrap true
	expect_rc root_rootonly 0 "root itself submits into RootOnly"
	expect_eq "$(squeue -h -j "$(field root_rootonly job)" -o '%u %P')" \
		"root rootonly" "root's job in the RootOnly partition"
	run sub_tagged "$probe" submit --uid "$uid" --gid "$gid" --hold \
		--admin-comment hb:user --workdir /tmp --output /dev/null \
		--wrap true
	expect_rc sub_tagged 0 "submit for the user with an admin comment"
	expect_eq "$(scontrol show job -o "$(field sub_tagged job)" |
		grep -o 'AdminComment=[^ ]*')" AdminComment=hb:user \
		"the admin comment, set as root after the user's submit"
	# not asked held: held only until it is tagged, then released, so
	# even a job that ends at once ends tagged
	run sub_quick "$probe" submit --uid "$uid" --gid "$gid" \
		--admin-comment hb:quick --workdir /tmp --output /dev/null \
		--wrap true
	expect_rc sub_quick 0 "submit a short job for the user, tagged"
	qid=$(field sub_quick job)
	for _ in $(seq 1 100); do
		st=$(scontrol show job -o "$qid" | grep -o 'JobState=[A-Z]*')
		[ "$st" = JobState=COMPLETED ] && break
		sleep 0.2
	done
	expect_eq "$(scontrol show job -o "$qid" |
		grep -o 'JobState=[A-Z]*\|AdminComment=[^ ]*' | tr '\n' ' ')" \
		"JobState=COMPLETED AdminComment=hb:quick " \
		"the short job ran to the end (released) and kept its tag"
	for j in "$(field sub_policed job)" "$(field root_rootonly job)" \
		"$(field sub_tagged job)"; do
		[ -n "$j" ] && scancel "$j" 2>/dev/null || true
	done

	run user_root as_user "$probe" submit --uid 0 --gid 0 --workdir /tmp \
		--output /dev/null --wrap true
	expect_eq "$(field user_root error)" EPERM "a user submits as root"
	run sub_root "$probe" submit --hold --workdir /tmp --output /dev/null \
		--wrap true
	run user_comment as_user "$probe" set-comment "$(field sub_root job)" x
	expect_eq "$(field user_comment error)" EPERM \
		"a user comments root's job"
	run user_cancel as_user "$probe" cancel "$(field sub_root job)"
	expect_eq "$(field user_cancel error)" EPERM "a user cancels root's job"
else
	echo "SKIP: another user (needs root)"
fi

echo "slurmc: $passes passed, $fails failed"
[ "$fails" = 0 ]
