#!/usr/bin/env bash
# bench_cli.sh - `hpcbridge translate` over many scripts, one process, as
# a site converting its script collection runs it; side by side with a
# second build when one is given.
#
# usage: bench_cli.sh BUILD_DIR [BASE_BUILD_DIR] [N] [ROUNDS]
#   N       scripts (20000), copies of tests/corpus/sbatch/*.sh, each with
#           its own job name so no two are the same file
#   ROUNDS  runs per build (5), taken in turns; medians are printed
#
# Each run writes the MPIJobs as JSON to /dev/null (xargs packs the file
# names into as few processes as the argument limit allows); the files are
# read from tmpfs when /dev/shm exists.  Prints each build's median seconds,
# scripts/s, and the ratio of the medians (BUILD over BASE).
set -euo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:?BUILD_DIR}" && pwd)
base=${2:-}
[ -n "$base" ] && base=$(cd "$base" && pwd)
n=${3:-20000}
rounds=${4:-5}
root=/tmp
[ -d /dev/shm ] && root=/dev/shm
tmp=$(mktemp -d "$root/hb-bench-cli.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

corpus=("$src"/tests/corpus/sbatch/*.sh)
for ((i = 0; i < n; i++)); do
	f=${corpus[i % ${#corpus[@]}]}
	{
		head -n 1 "$f"
		echo "#SBATCH --job-name=bench-$i"
		tail -n +2 "$f"
	} >"$tmp/s$i.sh"
done
ls "$tmp"/s*.sh >"$tmp/list"

run() { # BUILD -> seconds
	local t0 t1
	t0=$(date +%s%N)
	xargs -a "$tmp/list" "$1/bin/hpcbridge" translate -q -f json \
		>/dev/null
	t1=$(date +%s%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", (b - a) / 1e9 }'
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

builds=("$build")
[ -n "$base" ] && builds+=("$base")
for b in "${builds[@]}"; do run "$b" >/dev/null; done # warm the cache
for ((r = 0; r < rounds; r++)); do
	for b in "${builds[@]}"; do
		echo "$(run "$b")" >>"$tmp/t.$(echo "$b" | md5sum | cut -c1-8)"
	done
done
declare -A med
for b in "${builds[@]}"; do
	f=$tmp/t.$(echo "$b" | md5sum | cut -c1-8)
	med[$b]=$(median <"$f")
	printf '%s: %d scripts, median %s s (%s scripts/s); runs: %s\n' \
		"$b" "$n" "${med[$b]}" \
		"$(awk -v n="$n" -v t="${med[$b]}" 'BEGIN { printf "%.0f", n / t }')" "$(tr '\n' ' ' <"$f")"
done
if [ -n "$base" ]; then
	printf 'ratio (time, %s / %s): %s\n' "$(basename "$build")" \
		"$(basename "$base")" \
		"$(awk -v a="${med[$build]}" -v b="${med[$base]}" 'BEGIN { printf "%.3f", a / b }')"
fi
