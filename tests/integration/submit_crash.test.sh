#!/usr/bin/env bash
# submit_crash.test.sh - crash trials of submissions, short version (the
# long one: tests/bench/crash_trials.sh): six trials of 150 sbatch calls,
# three killing hpcbridged and three slurmctld with SIGKILL at a random
# submission, each restarted after a random 0-2 s.  In every trial each
# job Slurm accepted is accounted for, each tagged job is known to the
# daemon under the same gateway id, no id is used twice, no job ran
# twice, and each one that runs reached its end
# (tests/integration/lib/crash_trials.sh).  A job slurmctld acknowledged
# and then lost when it was killed is printed and does not fail the test:
# slurmctld saves its job state a little after each change, so losing
# the last acknowledged jobs on SIGKILL is Slurm's own behaviour, not
# the gateway's; the same loss with only the daemon killed fails.
#
# The seeds are printed; HB_CRASH_SEED=N replays a run, and trial T of
# seed S alone is replayed by the long version:
#   HB_CRASH_SEED=$((S - T)) HB_CRASH_FIRST=T \
#     tests/bench/crash_trials.sh BUILD_DIR SRC_DIR 1 150
#
# usage: submit_crash.test.sh BUILD_DIR SRC_DIR
set -euo pipefail

build=$(cd "${1:?BUILD_DIR}" && pwd)
src=$(cd "${2:?SRC_DIR}" && pwd)
tmp=$(mktemp -d /tmp/hb-submit-crash.XXXXXX)
chmod 755 "$tmp"
trials=${HB_CRASH_TRIALS:-6}
jobs=${HB_CRASH_JOBS:-150}
seed=${HB_CRASH_SEED:-$(date +%s)}
# The local backend runs the burst jobs on this host; no accounting and
# no S3 server: a trial's sandbox starts in about two seconds.
export HB_SANDBOX_BACKEND=local HB_SLURM_ACCOUNTING=0 HB_SANDBOX_S3=0
# shellcheck source=lib/sandbox_test.sh
. "$src/tests/integration/lib/sandbox_test.sh"
# shellcheck source=lib/crash_trials.sh
. "$src/tests/integration/lib/crash_trials.sh"

printf 'seed %d (HB_CRASH_SEED=%d replays this run)\n' "$seed" "$seed"
ct_header
for ((t = 1; t <= trials; t++)); do
	victim=daemon
	[ $((t % 2)) = 1 ] || victim=slurmctld
	if ct_trial "$t" $((seed + t)) "$victim" "$jobs"; then
		ok "trial $t ($victim killed): every submission accounted for"
	else
		bad "trial $t ($victim killed): an invariant broke (seed $((seed + t)))"
	fi
done
ct_summary
[ "$ct_tot_acc" -gt 0 ] || bad "no submission was accepted"
[ "$fails" = 0 ] || exit 1
echo "all crash trial checks passed"
