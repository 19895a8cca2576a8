#!/usr/bin/env bash
# crash_trials.sh - the crash trials of submissions, long version (issue
# 23; tests/integration/submit_crash.test.sh runs a short one in CI): per
# trial a fresh sandbox, JOBS sbatch calls, hpcbridged or slurmctld (in
# turn) killed with SIGKILL at a random submission and restarted after a
# random 0-2 s, then every submission accounted for
# (tests/integration/lib/crash_trials.sh says what is checked and what
# the columns count).  Prints a line per trial and a summary; exits 1 if a
# trial broke an invariant.
#
# Trial T's seed is HB_CRASH_SEED (default: the time) plus T; a trial is
# replayed with the seed and victim its line shows:
#   HB_CRASH_SEED=SEED-T HB_CRASH_FIRST=T crash_trials.sh B S 1 JOBS
# HB_CRASH_VICTIM=daemon|slurmctld kills only that one.
#
# usage: crash_trials.sh BUILD_DIR SRC_DIR [TRIALS=50] [JOBS=1000]
set -euo pipefail

build=$(cd "${1:?BUILD_DIR}" && pwd)
src=$(cd "${2:?SRC_DIR}" && pwd)
trials=${3:-50}
jobs=${4:-1000}
base=${HB_CRASH_SEED:-$(date +%s)}
first=${HB_CRASH_FIRST:-1}
tmp=$(mktemp -d /tmp/hb-crash-trials.XXXXXX)
chmod 755 "$tmp"
export HB_SANDBOX_BACKEND=local HB_SLURM_ACCOUNTING=0 HB_SANDBOX_S3=0
export HB_SLURM_FIX_HOSTS=${HB_SLURM_FIX_HOSTS:-1}
# shellcheck source=../integration/lib/sandbox_test.sh
. "$src/tests/integration/lib/sandbox_test.sh"
# shellcheck source=../integration/lib/crash_trials.sh
. "$src/tests/integration/lib/crash_trials.sh"

printf 'crash trials: %d trials of %d submissions, seeds %d+T\n' \
	"$trials" "$jobs" "$base"
ct_header
t0=$SECONDS
for ((t = first; t < first + trials; t++)); do
	victim=${HB_CRASH_VICTIM:-}
	if [ -z "$victim" ]; then
		victim=daemon
		[ $((t % 2)) = 1 ] || victim=slurmctld
	fi
	ct_trial "$t" $((base + t)) "$victim" "$jobs" || true
done
ct_summary
printf 'took %d s\n' $((SECONDS - t0))
[ "$ct_failed" = 0 ]
