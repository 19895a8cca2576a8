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
# bench_decide (one caller, a connection per decision) 2,000 times.
# Prints the decisions/s of every round with their median, and the round
# trip percentiles of every round.  Needs no Slurm: decisions only.
set -euo pipefail

before=$(cd "$1" && pwd)
after=$(cd "$2" && pwd)
rounds=${3:-7}
tmp=$(mktemp -d /tmp/hb-ab.XXXXXX)
shm=$(mktemp -d /dev/shm/hb-ab.XXXXXX)
pids=()

cleanup() {
	for p in "${pids[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
	done
	for p in "${pids[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$tmp" "$shm"
}
trap cleanup EXIT

start() { # NAME BUILD STATE
	local dir=$tmp/$1
	mkdir -p "$dir"
	cat >"$dir/hpcbridge.yaml" <<-YAML
	daemon:
	  socket: $dir/hbd.sock
	  state: $3
	  log_level: warn
	slurm:
	  user: root
	placement:
	  default_target: slurm
	  partitions:
	    gpu: kubernetes
	YAML
	"$2/bin/hpcbridged" --config "$dir/hpcbridge.yaml" --foreground \
		2>>"$dir/hbd.log" &
	pids+=("$!")
	for _ in $(seq 100); do
		[ -S "$dir/hbd.sock" ] && return 0
		sleep 0.05
	done
	echo "hpcbridged ($1) did not start; see $dir/hbd.log" >&2
	exit 1
}

names="before-tmpfs after-tmpfs before-disk after-disk"
start before-tmpfs "$before" "$shm/before.db"
start after-tmpfs "$after" "$shm/after.db"
start before-disk "$before" "$tmp/before.db"
start after-disk "$after" "$tmp/after.db"

for n in $names; do # warm up
	"$after/tests/hbload" "$tmp/$n/hbd.sock" 256 20 >/dev/null
	"$after/bin/bench_decide" "$tmp/$n/hbd.sock" 200 >/dev/null
done
for _ in $(seq "$rounds"); do
	for n in $names; do
		"$after/tests/hbload" "$tmp/$n/hbd.sock" 256 80 |
			sed -n 's/.*: \([0-9]*\)\/s.*/\1/p' >>"$tmp/$n/rate"
		"$after/bin/bench_decide" "$tmp/$n/hbd.sock" 2000 |
			tail -1 >>"$tmp/$n/lat"
	done
done

echo "decisions/s, hbload 256 callers x 80, $rounds rounds:"
echo "| daemon | median | runs |"
echo "|---|---:|---|"
for n in $names; do
	echo "| $n | $(sort -n "$tmp/$n/rate" |
		awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}') |" \
		"$(tr '\n' ' ' <"$tmp/$n/rate")|"
done
echo
echo "round trip, bench_decide 2,000, one line per round:"
echo "| daemon | decisions | p50 µs | p90 µs | p99 µs | max µs | failures |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for n in $names; do
	sed "s/^|/| $n |/" "$tmp/$n/lat"
done
