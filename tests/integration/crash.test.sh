#!/usr/bin/env bash
# crash.test.sh - kill -9 hpcbridged at random points of a burst job's life
# (between the decision and the remote start, while the remote job runs,
# while its output streams), restart it, and check the job converges:
# the Slurm proxy ends with the remote exit code, the output arrives whole,
# and the remote job ran exactly once.  Then two fixed kill points
# (failpoints): right after a burst decision is committed, before the
# plugin hears it (the job stays on Slurm, untouched), and right after it
# heard it, before anything remote exists (the proxy converges).  Last,
# fail-open with the real daemon hung (SIGSTOP) and not running.
#
# usage: crash.test.sh BUILD_DIR SRC_DIR
set -euo pipefail

build=$(cd "${1:?BUILD_DIR}" && pwd)
src=$(cd "${2:?SRC_DIR}" && pwd)
tmp=$(mktemp -d /tmp/hb-crash.XXXXXX)
chmod 755 "$tmp"
rounds=${HB_CRASH_ROUNDS:-4}
# The local backend: this test checks the daemon and shadow mechanics
# (burst_kube.test.sh runs the same path on the emulated cluster).
export HB_SANDBOX_BACKEND=local
# The socket path's crash windows (the failpoints are in the daemon's
# decide op): the plugin asks the daemon.  Decisions made in slurmctld
# are crashed by submit_crash.test.sh and plugin_recover.test.sh.
export HB_SANDBOX_DECIDE=daemon
# shellcheck source=lib/sandbox_test.sh
. "$src/tests/integration/lib/sandbox_test.sh"
sandbox_test_up

daemon_pid() { head -c 32 "$box/hpcbridged.pid" | tr -dc 0-9; }
# `sandbox.sh up` again starts only what is not running: the daemon.
start_daemon() {
	bash "$src/scripts/sandbox.sh" up "$box" "$build" >/dev/null \
		2>>"$tmp/up.err" || die "daemon restart: $(tail -n 5 "$tmp/up.err")"
}
# job R: write job R's script; submit it; its Slurm id in $id
job() {
	cat >"$tmp/job$1.sh" <<EOF
#!/bin/sh
#SBATCH --partition=gpu
#SBATCH --output=job$1-%j.out
echo started >>"$tmp/ran$1"
i=0
while [ \$i -lt 20 ]; do echo "line \$i"; i=\$((i + 1)); sleep 0.1; done
exit $(($1 + 10))
EOF
	id=$( (cd "$tmp" && sbatch --parsable "job$1.sh") 2>>"$tmp/sbatch.err")
	[ -n "$id" ] || die "sbatch: $(cat "$tmp/sbatch.err")"
}
# converged R: job R's Slurm job ended FAILED with exit code R + 10, its
# whole output once, the script run exactly once
converged() {
	local r=$1 st= want out
	for _ in $(seq 300); do
		st=$(field "$id" JobState)
		case $st in COMPLETED | FAILED | CANCELLED | TIMEOUT) break ;; esac
		sleep 0.2
	done
	want=$((r + 10)):0
	[ "$st" = FAILED ] && [ "$(field "$id" ExitCode)" = "$want" ] &&
		ok "round $r: job ended FAILED $want" ||
		bad "round $r: job $st $(field "$id" ExitCode), want FAILED $want"
	out=$tmp/job$r-$id.out
	[ "$(grep -c '^line ' "$out" 2>/dev/null)" = 20 ] &&
		grep -qx 'line 19' "$out" && ok "round $r: whole output, once" ||
		bad "round $r: output: $(tr '\n' ' ' <"$out" 2>&1)"
	[ "$(wc -l <"$tmp/ran$r" 2>/dev/null)" = 1 ] &&
		ok "round $r: the job's script ran exactly once" ||
		bad "round $r: ran $(wc -l <"$tmp/ran$r" 2>/dev/null) times"
}
# untouched WHAT: the last job left on Slurm as it was submitted (its
# partition, no hpcbridge tag): the plugin failed open
untouched() {
	[ "$(field "$id" Partition)" = gpu ] &&
		! scontrol show job "$id" | grep -q "AdminComment=hpcbridge" &&
		ok "round $r: $1: the job stays on Slurm untouched" ||
		bad "round $r: $1: $(scontrol show job "$id" | grep -E 'Partition|Comment')"
}
for r in $(seq "$rounds"); do
	job "$r"
	# A random kill point in the first 3 s: before the proxy starts,
	# during the remote start, or while the output streams.
	sleep "$(awk -v s="$RANDOM" 'BEGIN { srand(s); printf "%.2f", rand() * 3 }')"
	pid=$(daemon_pid)
	kill -KILL "$pid"
	while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
	sleep 0.5
	start_daemon
	converged "$r"
done

# Two fixed kill points ($HPCBRIDGE_FAILPOINT), each right after a burst
# decision is committed and synced: before the plugin hears it, and right
# after, before anything remote exists.
# killed_at FAILPOINT: restart the daemon armed with it, submit the next
# job, wait for the daemon to die there, restart it plain
killed_at() {
	local pid
	pid=$(daemon_pid)
	kill -TERM "$pid"
	while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
	HPCBRIDGE_FAILPOINT=$1 start_daemon
	pid=$(daemon_pid)
	r=$((r + 1))
	job "$r"
	for _ in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	! kill -0 "$pid" 2>/dev/null && ok "round $r: the daemon died at $1" ||
		bad "round $r: the daemon did not reach $1"
	grep -q "failpoint $1: the daemon kills itself" "$box/hpcbridged.log" ||
		bad "round $r: no failpoint line in the daemon's log"
}
killed_at burst-committed
# The plugin heard nothing: it failed open, the job runs on Slurm as it
# was submitted, untagged.
untouched "unheard decision"
start_daemon
converged "$r"
# Its decision is kept, pending with no Slurm job: the reconciler gives it
# up as an orphan after 10 minutes (test_daemon: test_orphans_lost).
orphans=$(hpcbridge jobs --all --json | tr -d ' \n' |
	grep -o '"state":"pending","target":"kubernetes","slurm_job_id":null' | wc -l)
[ "$orphans" = 1 ] && ok "round $r: the unheard decision is kept, pending" ||
	bad "round $r: $orphans pending decisions: $(hpcbridge jobs --all)"

killed_at burst-replied
# The plugin had its answer: the job became a proxy, whose shadow waits
# for the daemon, which starts the remote job once back.
[ "$(field "$id" Partition)" = burst ] && ok "round $r: the job became a proxy" ||
	bad "round $r: partition $(field "$id" Partition)"
start_daemon
converged "$r"

n=$(hpcbridge jobs --all --json | grep -c '"id": "hb-')
[ "$n" = "$r" ] && ok "one gateway job per submission ($n)" ||
	bad "$n gateway jobs for $r submissions: $(hpcbridge jobs --all)"

# Fail-open with the real daemon (the sandbox's plugin timeout is 200 ms):
# hung (SIGSTOP), then not running at all.  sbatch comes back within the
# timeout plus Slurm's own time, and the job runs on Slurm as submitted.
# timed_job R: job R, the seconds its sbatch took in $t
timed_job() {
	local t0
	t0=$(date +%s.%N)
	job "$1"
	t=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')
}
# stays_on_slurm WHAT SECONDS: the last job untouched, sbatch quick, and it
# runs to its own end
stays_on_slurm() {
	untouched "$1"
	awk -v t="$2" 'BEGIN { exit !(t < 2.0) }' &&
		ok "round $r: $1: sbatch took ${2}s (< 2 s)" ||
		bad "round $r: $1: sbatch took ${2}s"
	converged "$r"
}
pid=$(daemon_pid)
kill -STOP "$pid"
r=$((r + 1))
timed_job "$r"
kill -CONT "$pid"
stays_on_slurm "daemon hung" "$t"
kill -TERM "$pid"
while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
r=$((r + 1))
timed_job "$r"
stays_on_slurm "no daemon" "$t"
start_daemon

sandbox_test_end
echo "all crash checks passed"
