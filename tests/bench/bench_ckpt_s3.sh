#!/usr/bin/env bash
# bench_ckpt_s3.sh BUILD [ROUNDS] - hpcbridge ckpt push and pull against
# the peers people would use instead, side by side on the tests' private
# Swift (tests/integration/lib/swift.sh), with the trees of
# docs/benchmarks.md's "S3 peers on Swift (issue 21, baseline)": 2 GiB in
# 32 files of 64 MiB, and 10,000 files of 4 KiB in 100 directories.
#
#   BUILD    a build directory holding bin/hpcbridge
#   ROUNDS   default 3
#
# Per round, each to a fresh prefix or directory:
#   push the 2 GiB     hpcbridge ckpt push | rclone copy | aws s3 cp --recursive
#   pull the 2 GiB     hpcbridge ckpt pull | rclone copy
#   first push of the 10,000 files      hpcbridge ckpt push | rclone sync
#   re-push of the 10,000 unchanged     hpcbridge ckpt push | rclone sync |
#                                       rclone sync --checksum --fast-list
# Each command is timed from start to exit; clients run with their
# default settings (hpcbridge: its default --jobs).  Prints each
# measure's times per round as it goes, then a markdown table of the
# medians with the ratio hpcbridge/peer, and whether each of issue 21's
# targets was met.  Swift is stopped by its PIDs and the trees removed
# on exit, whatever happens.
#
# Environment (all optional):
#   HB_BENCH_DIR          where the trees and Swift go            [/tmp]
#   HB_BENCH_BIG_FILES    files of the big tree                   [32]
#   HB_BENCH_BIG_MIB      MiB per big file                        [64]
#   HB_BENCH_SMALL_FILES  files of the small tree (100 a dir)     [10000]
#   HB_BENCH_HB_ARGS      more options for both hpcbridge verbs   []
# (smaller trees are for checking the script itself, not for numbers).
set -uo pipefail

build=$(cd "${1:?usage: bench_ckpt_s3.sh BUILD [ROUNDS]}" && pwd)
rounds=${2:-3}
src=$(cd "$(dirname "$0")/../.." && pwd)
hb=$build/bin/hpcbridge
big_n=${HB_BENCH_BIG_FILES:-32}
big_mib=${HB_BENCH_BIG_MIB:-64}
small_n=${HB_BENCH_SMALL_FILES:-10000}
# shellcheck disable=SC2206
hb_args=(${HB_BENCH_HB_ARGS:-})

die() {
	echo "bench_ckpt_s3: $*" >&2
	exit 1
}
[ -x "$hb" ] || die "$hb missing (build the hpcbridge target)"
for b in /usr/bin/rclone /usr/bin/aws /usr/bin/python3; do
	[ -x "$b" ] || die "$b missing (scripts/setup.sh installs it)"
done
case $rounds in '' | *[!0-9]* | 0) die "ROUNDS must be a positive number" ;; esac

# shellcheck source=tests/integration/lib/swift.sh
. "$src/tests/integration/lib/swift.sh"

tmp=$(mktemp -d "${HB_BENCH_DIR:-/tmp}/hb-bench-s3.XXXXXX") || die mktemp
chmod 0711 "$tmp" # the swift user must reach the device under it
sw=$tmp/swift
cleanup() {
	swift_down "$sw"
	rm -rf -- "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

aws() { /usr/bin/aws --endpoint-url "$AWS_ENDPOINT_URL" "$@"; }
rc() { /usr/bin/rclone --config /dev/null "$@"; }
ms() { echo $(($(date +%s%N) / 1000000)); }

# The trees: random bytes, so that no store can deduplicate or compress.
echo "building the trees in $tmp ..." >&2
mkdir -p "$tmp/big" "$tmp/small" "$tmp/res" "$tmp/log"
for i in $(seq 0 $((big_n - 1))); do
	head -c $((big_mib << 20)) /dev/urandom >"$tmp/big/f$i" || die "big tree"
done
/usr/bin/python3 - "$tmp/small" "$small_n" <<'EOF' || die "small tree"
import os, sys
top, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = os.path.join(top, "d%d" % (i // 100))
    if i % 100 == 0:
        os.mkdir(d)
    with open(os.path.join(d, "f%d" % i), "wb") as f:
        f.write(os.urandom(4096))
EOF

swift_up "$sw" || die "swift_up"
aws s3 mb s3://bench >/dev/null || die "make the bucket"

load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) cores; load average at start: $(load)"
echo "trees: $big_n files of $big_mib MiB; $small_n files of 4 KiB"
echo "clients: $("$hb" --version 2>&1 | head -n1); $(rc version | head -n1); $(/usr/bin/aws --version 2>&1)"
[ ${#hb_args[@]} = 0 ] || echo "hpcbridge options: ${hb_args[*]}"

# t NAME CMD...: run CMD, append its time in ms to res/NAME; on failure
# say so with the tail of its stderr, and record nothing.
round=0
t() {
	local name=$1 t0 t1 st
	shift
	t0=$(ms)
	"$@" >"$tmp/log/$name.$round.out" 2>"$tmp/log/$name.$round.err"
	st=$?
	t1=$(ms)
	if [ $st != 0 ]; then
		echo "round $round: $name FAILED (exit $st):" >&2
		tail -n 5 "$tmp/log/$name.$round.err" >&2
		return 1
	fi
	echo $((t1 - t0)) >>"$tmp/res/$name"
	printf 'round %d: %-16s %8d ms\n' "$round" "$name" $((t1 - t0)) >&2
}

for round in $(seq "$rounds"); do
	p=s3://bench/r$round
	r=hbswift:bench/r$round
	t hb-push "$hb" ckpt push "$tmp/big" "$p/hb-big" --progress none \
		--json "${hb_args[@]}"
	t rclone-push rc copy "$tmp/big" "$r/rclone-big"
	t aws-push aws s3 cp --recursive --quiet "$tmp/big" "$p/aws-big"
	if t hb-pull "$hb" ckpt pull "$p/hb-big" "$tmp/pull-hb" \
		--progress none --json "${hb_args[@]}"; then
		diff -rq "$tmp/big" "$tmp/pull-hb" >&2 ||
			echo "round $round: hpcbridge's pull differs" >&2
	fi
	t rclone-pull rc copy "$r/rclone-big" "$tmp/pull-rclone"
	rm -rf -- "$tmp/pull-hb" "$tmp/pull-rclone"
	t hb-first "$hb" ckpt push "$tmp/small" "$p/hb-small" --progress none \
		--json "${hb_args[@]}"
	t rclone-first rc sync "$tmp/small" "$r/rclone-small"
	if t hb-repush "$hb" ckpt push "$tmp/small" "$p/hb-small" \
		--progress none --json "${hb_args[@]}"; then
		grep -q '"unchanged": *true' "$tmp/log/hb-repush.$round.out" ||
			echo "round $round: the re-push did not say unchanged" >&2
	fi
	t rclone-repush rc sync "$tmp/small" "$r/rclone-small"
	t rclone-cksum rc sync --checksum --fast-list "$tmp/small" \
		"$r/rclone-small"
done
echo "load average at the end: $(load); $(date -u '+%H:%M UTC')"

# med NAME: the median of NAME's times in ms (the lower middle of an
# even count), or nothing when every run failed.
med() {
	[ -s "$tmp/res/$1" ] || return 0
	sort -n "$tmp/res/$1" | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'
}
sec() { [ -n "$1" ] && awk -v v="$1" 'BEGIN {printf "%.2f s", v / 1000}' || echo failed; }
runs() { [ -s "$tmp/res/$1" ] && wc -l <"$tmp/res/$1" || echo 0; }
row() { # MEASURE HB PEER PEERNAME
	local h p ratio=-
	h=$(med "$2")
	p=$(med "$3")
	[ -n "$h" ] && [ -n "$p" ] &&
		ratio=$(awk -v h="$h" -v p="$p" 'BEGIN {printf "%.2f", h / p}')
	echo "| $1 | $(sec "$h") ($(runs "$2")) | $4 | $(sec "$p") ($(runs "$3")) | $ratio |"
}

echo
echo "Medians over $rounds rounds (runs that succeeded in brackets):"
echo
echo "| measure | hpcbridge | peer | peer's time | hpcbridge/peer |"
echo "|---|---:|---|---:|---:|"
row "push $big_n x $big_mib MiB" hb-push rclone-push "rclone copy"
row "push $big_n x $big_mib MiB" hb-push aws-push "aws s3 cp --recursive"
row "pull the same" hb-pull rclone-pull "rclone copy"
row "first push of $small_n x 4 KiB" hb-first rclone-first "rclone sync"
row "re-push, unchanged" hb-repush rclone-repush "rclone sync"
row "re-push, unchanged" hb-repush rclone-cksum "rclone sync --checksum --fast-list"

# lt A B: A and B are known and A < B.
lt() { [ -n "$1" ] && [ -n "$2" ] && [ "$1" -lt "$2" ]; }
# verdict STATUS HB: met, not met, or not measured when hpcbridge failed.
verdict() {
	if [ -z "$2" ]; then
		echo "not measured (hpcbridge failed every round)"
	elif [ "$1" = 0 ]; then
		echo met
	else
		echo "NOT met"
	fi
}
push=$(med hb-push) repush=$(med hb-repush) pull=$(med hb-pull)
lt "$push" "$(med rclone-push)" && lt "$push" "$(med aws-push)"
v_push=$?
lt "$repush" 1000 && lt "$repush" "$(med rclone-repush)"
v_repush=$?
lt "$pull" "$(med rclone-pull)"
v_pull=$?
echo
echo "Targets:"
echo "- push faster than both peers: $(verdict $v_push "$push")"
echo "- re-push of the unchanged files under 1 s and faster than rclone sync: $(verdict $v_repush "$repush")"
echo "- pull faster than rclone copy: $(verdict $v_pull "$pull")"
