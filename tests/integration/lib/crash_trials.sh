# shellcheck shell=bash
# tests/integration/lib/crash_trials.sh - crash trials of submissions: a
# burst of sbatch calls into the sandbox (scripts/sandbox.sh), with
# hpcbridged or slurmctld killed with SIGKILL at a random submission, then
# restarted; once the sandbox has settled, every submission is accounted
# for.  It looks only at what anyone outside can see: what sbatch printed,
# Slurm's job table (scontrol), the daemon's job table (its state file,
# read-only), the files the jobs themselves write, and the local
# backend's run directories.  So it checks the plugin whichever way it
# decides (a round trip to the daemon, or in slurmctld from a snapshot).
#
# Source tests/integration/lib/sandbox_test.sh first (build, src and tmp
# set), then this file; then:
#
#   ct_header               print the table's header
#   ct_trial T SEED VICTIM JOBS
#                           one trial in a fresh sandbox ($tmp/tT/box):
#                           JOBS submissions as $HB_SANDBOX_USER, VICTIM
#                           (daemon or slurmctld) killed with SIGKILL
#                           before the submission SEED picks, restarted
#                           after 0-2 s (SEED picks too); print the
#                           trial's line; 0 when every invariant holds.
#                           The same T, SEED, VICTIM and JOBS replay it.
#   ct_summary              print the totals over the trials run
#
# The sandbox places by a policy of the trial's own (_ct_policy):
# partition gpu prefers Kubernetes, and account "capped" has a budget
# there of JOBS/20 (at least 1) at 1.00 a job.  Submission I is (I mod 10):
#   0     burst, account free: partition gpu, run by the local backend on
#         this host; it appends a line to $HB_SANDBOX_WORK/ran/I
#   5     burst, account capped, held (sbatch -H): it never runs, so its
#         decided cost stays reserved; once the budget is spent the rest
#         stay on Slurm
#   1, 6  runs on Slurm (partition debug) and appends a line to ran/I
#   else  held (sbatch -H) in partition debug: decided, never run
# Its name is ct-I, so a Slurm job id given out twice (Slurm lost the
# first job when slurmctld was killed, and counted its ids again from its
# last state save) is told apart by the name the id's job has.
#
# The invariants, counted in each trial's line:
#   * every job sbatch printed an id for is Slurm's, under its name.  A
#     job slurmctld acknowledged and lost when it was killed is counted
#     as "lost" and fails the trial only when the daemon was killed.
#     slurmctld writes its job state in the background at most every
#     5 s (SAVE_MAX_WAIT in its state_save.c), so a SIGKILL loses the
#     jobs it acknowledged since, and it gives their ids out again:
#     Slurm's own behaviour, the same without hpcbridge;
#   * every job Slurm tagged (admin comment "hpcbridge:hb-N") is in the
#     daemon's table as hb-N, bound to that Slurm job id;
#   * no gateway id tags two Slurm jobs, and no Slurm job id is bound to
#     two gateway ids in the daemon's table;
#   * no job's script ran twice (ran/I has at most one line), and each
#     job that ended COMPLETED ran; a job Slurm runs itself (not tagged
#     for Kubernetes) that ran twice with slurmctld killed is counted
#     apart ("reran") and not failed: slurmctld recovered it from a
#     state saved before it ended, and ran it again, as it does without
#     hpcbridge (the loss above); a burst job, which the gateway runs,
#     must never run twice, whatever was killed; the local backend made
#     one run directory per burst job at most, each of a tagged job (a
#     burst job Slurm lost may have started its run: with slurmctld
#     killed, such a "stray" run is counted, not failed);
#   * every job that runs reached a final state, and every tagged job
#     was known to the daemon, within the convergence time
#     (HB_CRASH_CONVERGE_S: 60 s plus 1 s per 20 submissions); with
#     slurmctld killed, a batch job whose launch the kill cut short is
#     held by Slurm ("launch_failed_requeued_held": an admin releases
#     it): Slurm's own handling of a launch cut short; it is not waited
#     for (the trial line still shows it among the jobs tagged/known);
#   * after a slurmctld kill, the harness does what an admin would, so
#     that Slurm's own recovery does not outlast the convergence time:
#     25 s after the restart it has the nodes register (Slurm ends the
#     jobs it recovered as running that their node no longer has), then
#     it starts at once the jobs Slurm requeued for later, and resumes a
#     node Slurm set down or drained (counted in the trial's line; a
#     failed trial shows each with its reason).  None of it touches the
#     gateway;
#   * spend: the decided Kubernetes spend of account capped (the chosen
#     side's estimated cost in the latest decision of each of its jobs,
#     rebuilt decisions included) is at most its budget plus the bound
#     the plugin states when it decides from a snapshot: the per-account
#     allowance (plugin.allowance, HB_SANDBOX_ALLOWANCE: 3 units here);
#     with HB_SANDBOX_DECIDE=daemon, the budget itself.  Every account's
#     spend is printed.

# a small allowance, so that the spend's bound says something
export HB_SANDBOX_ALLOWANCE=${HB_SANDBOX_ALLOWANCE:-3}
ct_trials=0 ct_failed=0
ct_tot_acc=0 ct_tot_lost=0 ct_tot_twice=0 ct_tot_burst=0 ct_tot_ran=0
ct_tot_reran=0
ct_loop_pid='' ct_spend_max=0 ct_spend_bound=0

_ct_cleanup() {
	[ -z "$ct_loop_pid" ] || kill -TERM "$ct_loop_pid" 2>/dev/null || true
	_sandbox_test_cleanup
}

ct_header() {
	printf '%-5s %-10s %-9s %5s %6s %6s %6s %6s %6s %5s %5s %5s %4s %s\n' \
		trial seed killed at sub acc tagged known burst ran twice \
		lost fail verdict
}

# _ct_policy FILE JOBS: the trial's placement policy (see the top)
_ct_policy() {
	cat >"$1" <<-EOF
	# Written by crash_trials.sh: gpu bursts, account capped on a budget.
	version: 1
	defaults:
	  time_limit: 5m
	  mem_per_cpu: 100Mi
	  prefer: slurm
	slurm:
	  rates: {cpu_hour: 0.01}
	  partitions:
	    debug: {node: {cpus: 8, memory: 16Gi}}
	    gpu: {node: {cpus: 8, memory: 16Gi}}
	kubernetes:
	  namespace: default
	  node: {cpus: 8, memory: 16Gi}
	  rates: {per_job: 1.00}
	rules:
	  - name: capped
	    account: capped
	    partition: gpu
	    prefer: kubernetes
	    budget: {amount: $(_ct_budget "$2"), period: month, sides: [kubernetes]}
	  - name: free
	    partition: gpu
	    prefer: kubernetes
	EOF
}

# _ct_budget JOBS: account capped's budget, in whole units
_ct_budget() {
	local b=$(($1 / 20))
	printf '%d\n' $((b > 0 ? b : 1))
}

# _ct_submit I: submission I as the sandbox's user, from its work
# directory; "I KIND RC ID" appended to $ct_dir/subs
_ct_submit() {
	local i=$1 kind out rc=0
	local -a opt
	case $((i % 10)) in
	0) kind=burst opt=(-p gpu -A free --wrap "echo ran >>$ct_ran/$i") ;;
	5) kind=held opt=(-H -p gpu -A capped --wrap true) ;;
	1 | 6) kind=slurm opt=(-p debug -A free --wrap "echo ran >>$ct_ran/$i") ;;
	*) kind=held opt=(-H -p debug -A free --wrap true) ;;
	esac
	out=$(cd "$HB_SANDBOX_WORK" && timeout 60 runuser -u "$HB_SANDBOX_USER" \
		-- sbatch --parsable -J "ct-$i" -t 5 -o /dev/null "${opt[@]}" \
		2>>"$ct_dir/sbatch.err") || rc=$?
	out=${out%%;*}
	case $out in '' | *[!0-9]*) out=- ;; esac
	printf '%s %s %s %s\n' "$i" "$kind" "$rc" "$out" >>"$ct_dir/subs"
}

# _ct_victim_pid VICTIM: its pid now
_ct_victim_pid() {
	case $1 in
	daemon) head -c 32 "$box/hpcbridged.pid" | tr -dc 0-9 ;;
	slurmctld) _hbs_pid_of "$box/slurm" slurmctld ;;
	esac
}

# _ct_restart VICTIM: start it again.  The daemon as the sandbox does
# (`sandbox.sh up` starts what is not running); slurmctld as slurm.sh
# started it (`up` would start a new Slurm, and a new gateway state with
# it, seeing slurmctld down), recovering its saved state.
_ct_restart() {
	local ctld _
	ctld=$(_ct_victim_pid slurmctld)
	case $1 in
	daemon)
		_hbs_pid_is "$ctld" slurmctld || die "slurmctld is not running"
		bash "$src/scripts/sandbox.sh" up "$box" "$build" >/dev/null \
			2>>"$ct_dir/up.err" ||
			die "daemon restart: $(tail -n 5 "$ct_dir/up.err")"
		# a Slurm started afresh would make every count meaningless
		[ "$(_ct_victim_pid slurmctld)" = "$ctld" ] ||
			die "sandbox up restarted Slurm, not only the daemon"
		;;
	slurmctld)
		HB_SLURM_DETACH=1 _hbs_start "$box/slurm" slurmctld \
			"$box/slurm/log/slurmctld.out" \
			slurmctld -D -f "$box/slurm/slurm.conf"
		_hbs_verify_pid "$box/slurm" slurmctld slurmctld \
			"$box/slurm/run/slurmctld.pid" || die "slurmctld restart"
		for _ in $(seq 300); do
			timeout 5 scontrol ping 2>/dev/null | grep -q 'is UP' &&
				return 0
			sleep 0.1
		done
		die "slurmctld did not answer within 30 s of its restart"
		;;
	esac
}

# _ct_kill VICTIM: SIGKILL, and wait until it is gone.  slurmctld's
# slurmscriptd (a child named slurmctld) is left without its parent:
# it is stopped too, by its pid.
_ct_kill() {
	local pid kids='' p
	pid=$(_ct_victim_pid "$1")
	[ -n "$pid" ] || die "no pid for $1"
	[ "$1" != slurmctld ] || kids=$(_hbs_children_named "$pid" slurmctld)
	kill -KILL "$pid"
	while kill -0 "$pid" 2>/dev/null; do sleep 0.02; done
	for p in $kids; do
		if _hbs_pid_is "$p" slurmctld; then
			kill -KILL "$p" 2>/dev/null || true
		fi
	done
}

# _ct_register: have each slurmd register now (scontrol reconfigure).
# slurmctld recovers the jobs it ran from its last state save: a job that
# ended after that save and before the kill is RUNNING again, and its
# node no longer has it.  Slurm ends such a job when the node next
# registers, if the job started more than BatchStartTimeout plus
# MessageTimeout (20 s) before; slurmctld asks a node to register every
# 20th ping, about every 33 min with the sandbox's SlurmdTimeout of 300 s.
# This brings that registration forward, as an admin would; it changes
# nothing of what the gateway did.
_ct_register() {
	timeout 20 scontrol reconfigure >/dev/null 2>&1 || true
}

# _ct_release: start now each job Slurm requeued after such a
# registration (a batch job missing from its node is requeued, pending
# with reason BeginTime for about CredExpire, 120 s): no submission asks
# for a begin time, so each such job is one.  A burst job's proxy that
# runs again must not run the burst job again (checked).
#
# And resume a node slurmctld set down or drained: its slurmd was never
# stopped, but a kill in the middle of a launch or of a job's end makes
# slurmctld drain the node ("batch job complete failure", "Kill task
# failed") or take it for down, for an admin to look at, and every job
# after it waits.  Each is noted, with its state and reason, in
# $ct_dir/resumed.
_ct_release() {
	local id line
	for id in $(awk '$3 == "PENDING" && $4 == "BeginTime" { print $1 }' \
		"$ct_dir/slurm"); do
		timeout 10 scontrol update "JobId=$id" StartTime=now \
			>/dev/null 2>&1 || true
	done
	timeout 10 sinfo -h -N -o '%N|%T|%E' 2>/dev/null |
		awk -F'|' '$2 ~ /down|drain|fail/ && $3 !~ /^no slurmd/' | sort -u |
		while IFS= read -r line; do
			timeout 10 scontrol update "NodeName=${line%%|*}" \
				State=RESUME >/dev/null 2>&1 &&
				echo "$(date +%T) $line" >>"$ct_dir/resumed"
		done
}

# _ct_tables: Slurm's job table as "ID NAME STATE REASON PARTITION GWID
# TARGET" ($ct_dir/slurm), the daemon's as "GWID SLURMID TARGET STATE"
# ($ct_dir/daemon); "-" for what is missing
_ct_tables() {
	timeout 30 scontrol -o show job 2>/dev/null | awk '
	function f(k,   m) {
		if (match($0, "(^| )" k "=[^ ]*")) {
			m = substr($0, RSTART, RLENGTH)
			sub(/^ /, "", m)
			return substr(m, length(k) + 2)
		}
		return "-"
	}
	{
		gw = "-"; tg = "-"
		if (match($0, /AdminComment=hpcbridge:hb-[0-9]+/))
			gw = substr($0, RSTART + 23, RLENGTH - 23)
		if (match($0, /AdminComment=hpcbridge:[^ ]* target=[a-z]+/)) {
			tg = substr($0, RSTART, RLENGTH)
			sub(/.*target=/, "", tg)
		}
		print f("JobId"), f("JobName"), f("JobState"), f("Reason"),
			f("Partition"), gw, tg
	}' >"$ct_dir/slurm.new" || true
	mv "$ct_dir/slurm.new" "$ct_dir/slurm"
	sqlite3 -readonly -cmd '.timeout 5000' -separator ' ' \
		"$box/state.db" "SELECT id, coalesce(slurm_job_id, '-'),
		target, state FROM jobs" >"$ct_dir/daemon.new" 2>/dev/null || true
	mv "$ct_dir/daemon.new" "$ct_dir/daemon"
}

# _ct_waiting VICTIM [list]: how many things the sandbox has still to do:
# jobs that run (kinds 0, 1) not final, and tagged jobs the daemon does
# not know; with "list", the first five of them, one a line
_ct_waiting() {
	awk -v victim="$1" -v list="${2:-}" '
	FILENAME ~ /daemon$/ { d[$1] = $2; next }
	FILENAME ~ /subs$/ { if ($2 != "held") runs["ct-" $1] = 1; next }
	{
		if (($2 in runs) && $3 !~ /^(COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE|PREEMPTED)$/ &&
		    !(victim == "slurmctld" && $3 == "PENDING" && $4 == "launch_failed_requeued_held")) {
			n++
			if (list && n <= 5)
				print "not settled: slurm " $0
		}
		if ($6 != "-" && d[$6] != $1) {
			n++
			if (list && n <= 5)
				print "not known to the daemon: slurm " $1 " " $2 " " $6 " (daemon: " ($6 in d ? d[$6] : "none") ")"
		}
	}
	END { if (!list) print n + 0 }' "$ct_dir/daemon" "$ct_dir/subs" "$ct_dir/slurm"
}

# _ct_count: the trial's counts, as "NAME=VALUE" words
_ct_count() {
	local dirs
	dirs=$(cd "$box/remote" && ls -d hb-* 2>/dev/null | tr '\n' ' ')
	awk -v ran="$ct_ran" -v dirs="$dirs" '
	FILENAME ~ /daemon$/ {
		dgw[$1] = $2
		if ($2 != "-" && bound[$2]++) dupbind++
		next
	}
	FILENAME ~ /subs$/ {
		sub_n++; kind[$1] = $2
		if ($3 == 0 && $4 != "-") { acc++; want[$4, "ct-" $1] = 1 }
		else refused["ct-" $1] = 1
		next
	}
	{
		id = $1; name = $2; st[name] = $3; tgt[name] = $7
		known[id, name] = 1
		# sbatch failed, yet Slurm has the job: its reply was lost
		if (name in refused) phantom++
		if ($6 != "-") {
			tagged++
			if (gwuse[$6]++) dupgw++
			if (dgw[$6] == id) kd++
			else unknown++
			tagged_gw[$6] = 1
			if ($7 == "kubernetes") burst++
		}
	}
	END {
		for (k in want) if (!(k in known)) lost++
		for (i in kind) {
			n = 0; f = ran "/" i
			while ((getline l < f) > 0) n++
			close(f)
			if (n) ran_n++
			if (n > 1 && tgt["ct-" i] == "kubernetes") twice++
			else if (n > 1) reran++
			if (st["ct-" i] == "COMPLETED" && n == 0) missing++
			if (kind[i] != "held" && st["ct-" i] ~ /^(FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL)$/)
				failed++
		}
		nd = split(dirs, dl, " ")
		for (j = 1; j <= nd; j++)
			if (!(dl[j] in tagged_gw)) stray++
		printf "sub=%d acc=%d tagged=%d known=%d unknown=%d burst=%d", sub_n, acc, tagged, kd, unknown, burst
		printf " ran=%d twice=%d reran=%d missing=%d lost=%d", ran_n, twice, reran, missing, lost
		printf " dupgw=%d dupbind=%d", dupgw, dupbind
		printf " runs=%d stray=%d failed=%d phantom=%d\n", nd, stray, failed, phantom
	}' "$ct_dir/daemon" "$ct_dir/subs" "$ct_dir/slurm"
}

# _ct_spend: each account's decided Kubernetes spend, in micro-units, as
# "ACCOUNT MICROS" lines (the chosen side's cost in the latest decision)
_ct_spend() {
	sqlite3 -readonly -cmd '.timeout 5000' -separator ' ' \
		"$box/state.db" "SELECT coalesce(j.account, '(none)'),
		sum(coalesce((SELECT json_extract(a.value, '\$.cost_micro')
		 FROM json_each(d.inputs, '\$.placement.alternatives') AS a
		 WHERE json_extract(a.value, '\$.side') = d.target), 0))
		FROM jobs AS j JOIN decisions AS d ON d.id =
		 (SELECT max(id) FROM decisions WHERE job_id = j.id)
		WHERE d.target = 'kubernetes' AND json_valid(d.inputs)
		GROUP BY j.account" 2>/dev/null || true
}

ct_trial() {
	local t=$1 seed=$2 victim=$3 jobs=$4 at delay i w t0 c verdict=pass
	local restarted nudged=
	local limit=${HB_CRASH_CONVERGE_S:-$((60 + jobs / 20))}
	local -A n
	ct_dir=$tmp/t$t
	mkdir -p "$ct_dir" && chmod 755 "$ct_dir"
	box=$ct_dir/box
	_ct_policy "$ct_dir/policy.yaml" "$jobs"
	HB_SANDBOX_POLICY=$ct_dir/policy.yaml sandbox_test_up
	trap _ct_cleanup EXIT
	ct_ran=$HB_SANDBOX_WORK/ran
	mkdir -p "$ct_ran"
	chown "$HB_SANDBOX_USER" "$ct_ran"
	: >"$ct_dir/subs"
	# the kill point: a submission in the middle 80 %, and a delay.
	# The seed is hashed first: bash's generator seeded with neighbours
	# (seed + T) starts out alike.
	RANDOM=$(printf '%s' "$seed" | cksum | cut -d' ' -f1)
	at=$((jobs / 10 + RANDOM % (jobs * 8 / 10 + 1)))
	delay=$(printf '0.%03d' $((RANDOM % 1000)))
	[ $((RANDOM % 2)) = 0 ] || delay=1${delay#0}
	(
		for ((i = 0; i < jobs; i++)); do
			[ "$i" != "$at" ] || : >"$ct_dir/go"
			_ct_submit "$i"
		done
	) &
	ct_loop_pid=$!
	while [ ! -e "$ct_dir/go" ] && kill -0 "$ct_loop_pid" 2>/dev/null; do
		sleep 0.01
	done
	_ct_kill "$victim"
	sleep "$delay"
	_ct_restart "$victim"
	restarted=$SECONDS
	wait "$ct_loop_pid" || die "trial $t: the submission loop failed"
	ct_loop_pid=
	t0=$SECONDS
	while :; do
		_ct_tables
		w=$(_ct_waiting "$victim")
		if [ "$w" = 0 ] || [ $((SECONDS - t0)) -ge "$limit" ]; then
			break
		fi
		if [ "$victim" = slurmctld ] && [ -n "$nudged" ]; then
			_ct_release
		elif [ "$victim" = slurmctld ] &&
			[ $((SECONDS - restarted)) -ge 25 ]; then
			_ct_register
			nudged=1
		fi
		sleep 1
	done
	for c in $(_ct_count); do n[${c%%=*}]=${c#*=}; done
	# Slurm's loss when slurmctld was killed (see the top); the rest are
	# the gateway's, or Slurm's with no crash of its own to explain them
	# (a burst job Slurm lost may have started its run: a run directory
	# of a gateway id no Slurm job carries, "stray", is the same loss)
	if [ "$victim" != slurmctld ]; then
		[ "${n[lost]}" = 0 ] && [ "${n[stray]}" = 0 ] &&
			[ "${n[reran]}" = 0 ] || verdict=FAIL
	fi
	for c in unknown twice missing dupgw dupbind; do
		[ "${n[$c]}" = 0 ] || verdict=FAIL
	done
	[ "$w" = 0 ] || verdict=FAIL
	# at most one run per burst job Slurm still has; the strays (runs of
	# burst jobs Slurm lost, counted above) are not among them
	[ $((n[runs] - n[stray])) -le "${n[burst]}" ] || verdict=FAIL
	local sp capped bound
	bound=$(($(_ct_budget "$jobs") * 1000000))
	[ "${HB_SANDBOX_DECIDE:-snapshot}" != snapshot ] ||
		bound=$((bound + HB_SANDBOX_ALLOWANCE * 1000000))
	sp=$(_ct_spend)
	capped=$(awk '$1 == "capped" { print $2 }' <<<"$sp")
	[ "${capped:-0}" -le "$bound" ] || verdict=FAIL
	[ "${capped:-0}" -le "$ct_spend_max" ] || ct_spend_max=${capped:-0}
	ct_spend_bound=$bound
	printf '%-5s %-10s %-9s %5s %6s %6s %6s %6s %6s %5s %5s %5s %4s %s\n' \
		"$t" "$seed" "$victim" "$at+${delay}s" "${n[sub]}" "${n[acc]}" \
		"${n[tagged]}" "${n[known]}" "${n[burst]}" "${n[ran]}" \
		"$((n[twice] + n[reran]))" "${n[lost]}" "${n[failed]}" "$verdict"
	printf '      burst jobs run twice %s, Slurm jobs Slurm ran again %s, not settled %s, not known %s, missing runs %s, gateway ids on two jobs %s, slurm ids bound twice %s, run dirs %s (stray %s), refused yet in Slurm %s, nodes resumed %s, spend [%s] capped bound %s\n' \
		"${n[twice]}" "${n[reran]}" "$w" "${n[unknown]}" "${n[missing]}" "${n[dupgw]}" \
		"${n[dupbind]}" "${n[runs]}" "${n[stray]}" "${n[phantom]}" \
		"$( (wc -l <"$ct_dir/resumed") 2>/dev/null || echo 0)" \
		"$(tr '\n' ',' <<<"$sp" | sed 's/,$//')" "$bound"
	[ ! -s "$ct_dir/resumed" ] ||
		sed 's/^/      resumed a node: /' "$ct_dir/resumed"
	ct_trials=$((ct_trials + 1))
	ct_tot_acc=$((ct_tot_acc + n[acc]))
	ct_tot_lost=$((ct_tot_lost + n[lost]))
	ct_tot_twice=$((ct_tot_twice + n[twice]))
	ct_tot_reran=$((ct_tot_reran + n[reran]))
	ct_tot_burst=$((ct_tot_burst + n[burst]))
	ct_tot_ran=$((ct_tot_ran + n[ran]))
	if [ "$verdict" != pass ]; then
		ct_failed=$((ct_failed + 1))
		_ct_evidence
	fi
	bash "$src/scripts/sandbox.sh" down "$box" >/dev/null 2>&1 || true
	[ -n "${HB_CRASH_KEEP:-}" ] || [ "$verdict" != pass ] ||
		rm -rf "$ct_dir"
	[ "$verdict" = pass ]
}

# _ct_evidence: what a failed trial got wrong, a few lines of each (in
# ct_trial: its victim)
_ct_evidence() {
	_ct_waiting "$victim" list | sed 's/^/      /' | tee "$ct_dir/unsettled"
	# what slurmctld said of the first two
	for id in $(awk '$1 == "not" && $2 == "settled:" { print $4 }' \
		"$ct_dir/unsettled" | head -n 2); do
		grep -E "JobId=$id( |$)" "$box/slurm/log/slurmctld.log" |
			tail -n 6 | sed 's/^/        /' || true
	done
	awk -v ran="$ct_ran" '{
		n = 0; f = ran "/" $1
		while ((getline l < f) > 0) n++
		close(f)
		if (n > 1 && shown++ < 5)
			print "      ran " n " times: submission " $1 " (" $2 "), Slurm job " $4
	}' "$ct_dir/subs"
	timeout 10 sinfo -h -N -o '%N %T %E' 2>/dev/null |
		sed 's/^/      node now: /' || true
	grep -i error "$ct_dir/sbatch.err" 2>/dev/null | sort | uniq -c |
		sort -rn | head -n 3 | sed 's/^/      sbatch: /' || true
}

ct_summary() {
	printf 'summary: %d trials, %d failed; %d jobs accepted, %d lost by slurmctld, %d burst, %d ran, %d burst jobs ran twice, %d Slurm jobs Slurm ran again; capped spend at most %d of a bound of %d micro-units\n' \
		"$ct_trials" "$ct_failed" "$ct_tot_acc" "$ct_tot_lost" \
		"$ct_tot_burst" "$ct_tot_ran" "$ct_tot_twice" "$ct_tot_reran" \
		"$ct_spend_max" \
		"$ct_spend_bound"
}
