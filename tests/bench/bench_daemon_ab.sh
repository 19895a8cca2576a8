#!/usr/bin/env bash
# bench_daemon_ab.sh BEFORE AFTER [ROUNDS] - two builds of hpcbridged side
# by side, each with its state on tmpfs and on the disk: four daemons up at
# once, the benchmarks alternating between them so that the machine's noise
# hits all four alike.
#
#   BEFORE, AFTER  build directories (release) holding bin/hpcbridged;
#                  the load programs come from AFTER
#   ROUNDS         rounds of each measure (default 7)
#
# Per round and daemon: hbload with 256 callers x 80 decisions, then
# bench_decide (one caller, on a kept connection, as the plugin) 2,000
# times.
# Prints the decisions/s of every round with their median, the CPU time
# the daemon's loop thread spent per decision during hbload (user +
# system, from /proc; less at the mercy of the machine's other load than
# the rate), and the round trip percentiles of every round.  Needs no
# Slurm: decisions only.
set -euo pipefail

before=$(cd "$1" && pwd)
after=$(cd "$2" && pwd)
rounds=${3:-7}
# shellcheck source=lib/daemon.sh
. "$(dirname "$0")/lib/daemon.sh"
hb_bench_dirs ab

names="before-tmpfs after-tmpfs before-disk after-disk"
hb_bench_daemon "$before" "$tmp/before-tmpfs" "$shm/before.db"
hb_bench_daemon "$after" "$tmp/after-tmpfs" "$shm/after.db"
hb_bench_daemon "$before" "$tmp/before-disk" "$tmp/before.db"
hb_bench_daemon "$after" "$tmp/after-disk" "$tmp/after.db"

for n in $names; do # warm up
	"$after/tests/hbload" "$tmp/$n/hbd.sock" 256 20 >/dev/null
	"$after/bin/bench_decide" "$tmp/$n/hbd.sock" 200 >/dev/null
done
# CPU ticks of the loop (the daemon's main thread) so far
loop_ticks() {
	awk '{print $14 + $15}' "/proc/$1/task/$1/stat"
}
tick_us=$((1000000 / $(getconf CLK_TCK)))

for _ in $(seq "$rounds"); do
	i=0
	for n in $names; do
		pid=${hb_bench_pids[$i]}
		i=$((i + 1))
		t0=$(loop_ticks "$pid")
		"$after/tests/hbload" "$tmp/$n/hbd.sock" 256 80 |
			sed -n 's/.*: \([0-9]*\)\/s.*/\1/p' >>"$tmp/$n/rate"
		t1=$(loop_ticks "$pid")
		awk -v t=$((t1 - t0)) -v us="$tick_us" \
			'BEGIN {printf "%.1f\n", t * us / 20480}' >>"$tmp/$n/cpu"
		"$after/bin/bench_decide" "$tmp/$n/hbd.sock" 2000 |
			tail -1 >>"$tmp/$n/lat"
	done
done

# TITLE FILE: per daemon, the median of its rounds in FILE, and the rounds
table() {
	local n
	echo "$1"
	echo "| daemon | median | runs |"
	echo "|---|---:|---|"
	for n in $names; do
		echo "| $n | $(sort -n "$tmp/$n/$2" | awk '{a[NR] = $1}
			END {print a[int((NR + 1) / 2)]}') |" \
			"$(tr '\n' ' ' <"$tmp/$n/$2")|"
	done
	echo
}

table "decisions/s, hbload 256 callers x 80, $rounds rounds:" rate
table "the loop thread's CPU per decision during hbload, µs:" cpu
echo "round trip, bench_decide 2,000, one line per round:"
echo "| daemon | decisions | p50 µs | p90 µs | p99 µs | max µs | failures | over 20 ms |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for n in $names; do
	sed "s/^|/| $n |/" "$tmp/$n/lat"
done
