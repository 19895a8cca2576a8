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
tmp=$(mktemp -d /tmp/hb-ckpt.XXXXXX)
shm=$(mktemp -d /dev/shm/hb-ckpt.XXXXXX)
# shellcheck source=lib/daemon.sh
. "$(dirname "$0")/lib/daemon.sh"

cleanup() {
	hb_bench_daemons_stop
	rm -rf "$tmp" "$shm"
}
trap cleanup EXIT

# hb_bench_daemon writes the config and starts the daemon at once: write
# it, stop that daemon, add the interval and start again.
start() { # NAME STATE PAGES
	hb_bench_daemon "$build" "$tmp/$1" "$2"
	kill -TERM "${hb_bench_pids[-1]}"
	wait "${hb_bench_pids[-1]}" 2>/dev/null || true
	unset 'hb_bench_pids[-1]'
	rm -f "$tmp/$1/hbd.sock"
	sed -i "s|^  log_level: warn|  log_level: warn\n  checkpoint_pages: $3|" \
		"$tmp/$1/hpcbridge.yaml"
	"$build/bin/hpcbridged" --config "$tmp/$1/hpcbridge.yaml" \
		--foreground 2>>"$tmp/$1/hbd.log" &
	hb_bench_pids+=("$!")
	for _ in $(seq 100); do
		[ -S "$tmp/$1/hbd.sock" ] && return 0
		sleep 0.05
	done
	echo "hpcbridged did not start; see $tmp/$1/hbd.log" >&2
	return 1
}

names=
for p in $pages; do
	start "tmpfs-$p" "$shm/$p.db" "$p"
	start "disk-$p" "$tmp/$p.db" "$p"
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
