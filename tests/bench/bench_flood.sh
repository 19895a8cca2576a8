#!/usr/bin/env bash
# bench_flood.sh - how fast hpcbridged answers root while an unprivileged
# user floods it (tests/integration/hbflood.c: connection churn, slow
# senders, oversized and held 1 MiB frames).  Side by side: root's ping (a
# connection each, as `hpcbridge` and lib.sh's ping_ms do), ping on a kept
# connection, and decide on a kept connection (as the job_submit plugin
# keeps one), each N times 20 ms apart, first with no flood, then during
# one; p50 and p99 in ms, and the daemon's RSS before and at the flood's
# end.  The flood runs as `nobody`.
#
# usage: bench_flood.sh BUILD_DIR [SECONDS] [NICE]
#   SECONDS  the flood's length (60); N follows from it
#   NICE     the daemon's nice value (0; -10 as a unit's Nice= would set)
set -uo pipefail

build=$(cd "${1:?BUILD_DIR}" && pwd)
secs=${2:-60}
nice=${3:-0}
ping=$build/tests/hbping
flood=$build/tests/hbflood
tmp=$(mktemp -d /tmp/hb-bench-flood.XXXXXX)
chmod 755 "$tmp"
dpid=
fpid=
cleanup() {
	[ -n "$fpid" ] && kill -KILL "$fpid" 2>/dev/null
	[ -n "$dpid" ] && kill -KILL "$dpid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
export SLURM_CONF=$tmp/no-slurm.conf

cat >"$tmp/cfg.yaml" <<EOF
daemon:
  log_level: warn
remote:
  backend: local
  local_dir: $tmp/remote
placement:
  default_target: slurm
EOF
"$build/bin/hpcbridged" --config "$tmp/cfg.yaml" --foreground \
	--socket "$tmp/run/api.sock" --state "$tmp/state.db" 2>"$tmp/log" &
dpid=$!
sock=$tmp/run/api.sock
for _ in $(seq 100); do
	[ -S "$sock" ] && "$ping" "$sock" 1 0 >/dev/null 2>&1 && break
	sleep 0.05
done
renice -n "$nice" -p "$dpid" >/dev/null
rss() { awk '/^VmRSS/ {print $2}' "/proc/$dpid/status"; }
n=$(((secs - 2) * 1000 / 20 / 3))
[ "$n" -ge 20 ] || n=20

# three measurements, one after the other, N each
measure() {
	"$ping" --timeout 5000 "$sock" "$n" 20 >"$tmp/$1.ping" 2>/dev/null
	"$ping" --reuse --timeout 5000 "$sock" "$n" 20 >"$tmp/$1.kept" 2>/dev/null
	"$ping" --decide --reuse --timeout 5000 "$sock" "$n" 20 >"$tmp/$1.decide" 2>/dev/null
}
field() { sed -n "s/.* $2=\([0-9.]*\).*/\1/p" "$1"; }
okn() { sed -n 's/.* ok=\([0-9]*\) .*/\1/p' "$1"; }

"$ping" --decide --reuse "$sock" 200 0 >/dev/null # warm up
measure quiet
rss0=$(rss)
setpriv --reuid=65534 --regid=65534 --clear-groups \
	"$flood" "$sock" "$secs" >"$tmp/flood.out" 2>&1 &
fpid=$!
sleep 1
measure flood
wait "$fpid"
fpid=
rss1=$(rss)

printf '%-24s %12s %12s %12s %12s\n' "root request (N=$n)" "quiet p50" \
	"quiet p99" "flood p50" "flood p99"
for k in ping kept decide; do
	case $k in
	ping) name="ping, new connection" ;;
	kept) name="ping, kept connection" ;;
	decide) name="decide, kept conn." ;;
	esac
	printf '%-24s %12s %12s %12s %12s   (flood: %s of %s ok)\n' "$name" \
		"$(field "$tmp/quiet.$k" p50)" "$(field "$tmp/quiet.$k" p99)" \
		"$(field "$tmp/flood.$k" p50)" "$(field "$tmp/flood.$k" p99)" \
		"$(okn "$tmp/flood.$k")" "$n"
done
echo "daemon RSS: $((rss0 / 1024)) MiB before the flood, $((rss1 / 1024)) MiB after ${secs} s"
echo "flood: $(cat "$tmp/flood.out")"
