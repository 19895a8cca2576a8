#!/usr/bin/env bash
# crash.test.sh - kill -9 hpcbridged at random points of a burst job's life
# (between the decision and the remote start, while the remote job runs,
# while its output streams), restart it, and check the job converges:
# the Slurm proxy ends with the remote exit code, the output arrives whole,
# and the remote job ran exactly once.
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
# shellcheck source=lib/sandbox_test.sh
. "$src/tests/integration/lib/sandbox_test.sh"
sandbox_test_up

daemon_pid() { head -c 32 "$box/hpcbridged.pid" | tr -dc 0-9; }
# `sandbox.sh up` again starts only what is not running: the daemon.
start_daemon() {
	bash "$src/scripts/sandbox.sh" up "$box" "$build" >/dev/null \
		2>>"$tmp/up.err" || die "daemon restart: $(tail -n 5 "$tmp/up.err")"
}
for r in $(seq "$rounds"); do
	cat >"$tmp/job$r.sh" <<EOF
#!/bin/sh
#SBATCH --partition=gpu
#SBATCH --output=job$r-%j.out
echo started >>"$tmp/ran$r"
i=0
while [ \$i -lt 20 ]; do echo "line \$i"; i=\$((i + 1)); sleep 0.1; done
exit $((r + 10))
EOF
	id=$( (cd "$tmp" && sbatch --parsable "job$r.sh") 2>>"$tmp/sbatch.err")
	[ -n "$id" ] || die "sbatch: $(cat "$tmp/sbatch.err")"
	# A random kill point in the first 3 s: before the proxy starts,
	# during the remote start, or while the output streams.
	sleep "$(awk -v s="$RANDOM" 'BEGIN { srand(s); printf "%.2f", rand() * 3 }')"
	pid=$(daemon_pid)
	kill -KILL "$pid"
	while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
	sleep 0.5
	start_daemon
	st=
	for _ in $(seq 300); do
		st=$(field "$id" JobState)
		case $st in COMPLETED | FAILED | CANCELLED | TIMEOUT) break ;; esac
		sleep 0.2
	done
	want=$((r + 10)):0
	[ "$st" = FAILED ] && [ "$(field "$id" ExitCode)" = "$want" ] &&
		ok "round $r: proxy ended FAILED $want after a kill -9" ||
		bad "round $r: proxy $st $(field "$id" ExitCode), want FAILED $want"
	out=$tmp/job$r-$id.out
	[ "$(grep -c '^line ' "$out" 2>/dev/null)" = 20 ] &&
		grep -qx 'line 19' "$out" && ok "round $r: whole output, once" ||
		bad "round $r: output: $(tr '\n' ' ' <"$out" 2>&1)"
	[ "$(wc -l <"$tmp/ran$r" 2>/dev/null)" = 1 ] &&
		ok "round $r: the remote job ran exactly once" ||
		bad "round $r: ran $(wc -l <"$tmp/ran$r" 2>/dev/null) times"
done
n=$(hpcbridge jobs --all --json | grep -c '"id": "hb-')
[ "$n" = "$rounds" ] && ok "one gateway job per submission ($n)" ||
	bad "$n gateway jobs for $rounds submissions: $(hpcbridge jobs --all)"

sandbox_test_end
echo "all crash checks passed"
