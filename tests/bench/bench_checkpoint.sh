#!/usr/bin/env bash
# bench_checkpoint.sh BUILD [ROUNDS] [PAGES...] - what the checkpoint
# interval (daemon.checkpoint_pages) does to the decision round trip.
# One daemon per interval, with its state on tmpfs and one on the disk,
# all up at once; per round, bench_decide (one caller on a kept connection,
# as the plugin) sends 4,000 decisions to each in turn, so that the
# machine's noise hits all of them alike.  A lone decision writes about 12
# pages, so 4,000 decisions make some 48,000 pages of log: a dozen
# checkpoints at 4,000 pages, four times as many at 1,000.
#
#   BUILD    a build directory holding bin/hpcbridged and bin/bench_decide
#   ROUNDS   default 5
#   PAGES    intervals to compare, default 1000 4000
#
# Prints one markdown row per round and daemon: p50, p90, p99 and maximum
# in µs, failures, and decisions over 20 ms (the plugin's timeout).
set -euo pipefail

build=$(cd "${1:?BUILD}" && pwd)
rounds=${2:-5}
shift $(($# < 2 ? $# : 2))
pages=${*:-1000 4000}
# shellcheck source=lib/daemon.sh
. "$(dirname "$0")/lib/daemon.sh"
hb_bench_dirs ckpt

names=
for p in $pages; do
	hb_bench_daemon "$build" "$tmp/tmpfs-$p" "$shm/$p.db" \
		"checkpoint_pages: $p"
	hb_bench_daemon "$build" "$tmp/disk-$p" "$tmp/$p.db" \
		"checkpoint_pages: $p"
	names="$names tmpfs-$p disk-$p"
done

echo "| state, checkpoint_pages | decisions | p50 µs | p90 µs | p99 µs | max µs | failures | over 20 ms |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for _ in $(seq "$rounds"); do
	for n in $names; do
		printf '| %s ' "$n"
		"$build/bin/bench_decide" "$tmp/$n/hbd.sock" 4000
	done
done
