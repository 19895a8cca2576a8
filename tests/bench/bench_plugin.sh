#!/usr/bin/env bash
# bench_plugin.sh - what job_submit/hpcbridge costs a submission, and how
# fast the daemon decides.  Side by side, in one run:
#
#   none       a private Slurm with no job_submit plugin
#   hpcbridge  the same with job_submit/hpcbridge and hpcbridged, the
#              plugin deciding inside slurmctld from the daemon's snapshot
#              (plugin.decide: snapshot, the default), state on disk
#   hpcbridge-socket  the same with plugin.decide: daemon: each sbatch
#              waits for the daemon's decision over its socket, which
#              the daemon syncs to disk before it answers
#   lua        the same routing rule written for job_submit/lua
#              (Debian's), the peer an admin would otherwise write
#
# Each instance takes N held jobs (`sbatch -H`, so nothing runs) per round,
# R rounds.  Within a round the instances take turns job by job, so that
# whatever else the machine does meanwhile falls on all four alike; each
# sbatch is timed.  Printed: per instance, the median over the rounds of
# its throughput (N / the round's summed sbatch times) with the ratio to
# `none`, and the median time of one sbatch with what it adds to `none`'s.
# Then the decision round trip (bench_decide) against the daemon, with its
# state on the disk and on tmpfs, and the throughput with many callers
# (hbload).
#
# With HB_BENCH_BASE=OTHER_BUILD_DIR, a fifth instance "base" runs that
# build's plugin and daemon (state on disk), taking its turns with the
# others, so that a change is measured against the code before it in the
# same run; its decision round trip is timed too.
#
# usage: [HB_BENCH_BASE=DIR] [HB_BENCH_NOOP=1] bench_plugin.sh BUILD_DIR SRC_DIR [N] [R]
set -euo pipefail
export LC_NUMERIC=C # EPOCHREALTIME with a decimal point

build=$(cd "${1:?BUILD_DIR}" && pwd)
src=$(cd "${2:?SRC_DIR}" && pwd)
n=${3:-500}
rounds=${4:-3}
base=
[ -n "${HB_BENCH_BASE:-}" ] && base=$(cd "$HB_BENCH_BASE" && pwd)
modes="none hpcbridge hpcbridge-socket lua${base:+ base}"
[ -z "${HB_BENCH_NOOP:-}" ] || modes="$modes lua-noop route"
tmp=$(mktemp -d /tmp/hb-bench-plugin.XXXXXX)
chmod 755 "$tmp"
# shellcheck source=../integration/lib/slurm.sh
. "$src/tests/integration/lib/slurm.sh"
# shellcheck source=lib/daemon.sh
. "$src/tests/bench/lib/daemon.sh"

cleanup() {
	for m in $modes; do
		slurm_down "$tmp/$m" >/dev/null 2>&1 || true
	done
	hb_bench_daemons_stop
	rm -rf "/dev/shm/hb-bench-$$"
	rm -rf "$tmp"
}
trap cleanup EXIT

# HB_BENCH_NOOP=1 adds two instances that tell the routing's cost from a
# plugin's: "lua-noop", job_submit/lua with a rule that changes nothing,
# and "route", no plugin, its sbatch naming partition burst (where the
# rules send the job) itself
lua_noop='
function slurm_job_submit(job_desc, part_list, submit_uid)
	return slurm.SUCCESS
end
function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
	return slurm.SUCCESS
end
'
lua_rule='
function slurm_job_submit(job_desc, part_list, submit_uid)
	if job_desc.partition == "gpu" then
		job_desc.admin_comment = "lua: target=kubernetes"
		job_desc.partition = "burst"
	else
		job_desc.admin_comment = "lua: target=slurm"
	end
	return slurm.SUCCESS
end
function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
	return slurm.SUCCESS
end
'

export HB_SLURM_FIX_HOSTS=${HB_SLURM_FIX_HOSTS:-1}
export HB_SLURM_NODES=1 HB_SLURM_CPUS=8 HB_SLURM_MEM_MB=16000 HB_SLURM_GPUS=
hb_bench_daemon "$build" "$tmp/hbd" "$tmp/hbd/state.db"
HB_BENCH_DECIDE=daemon hb_bench_daemon "$build" "$tmp/hbd-sock" \
	"$tmp/hbd-sock/state.db"
mkdir -p /dev/shm/hb-bench-$$
hb_bench_daemon "$build" "$tmp/hbd-shm" "/dev/shm/hb-bench-$$/state.db"
[ -z "$base" ] || hb_bench_daemon "$base" "$tmp/hbd-base" "$tmp/hbd-base/state.db"
for m in $modes; do
	(
		unset HB_SLURM_JOB_SUBMIT_PLUGINS HB_SLURM_JOB_SUBMIT_LUA
		case $m in
		hpcbridge | hpcbridge-socket)
			export HPCBRIDGE_CONFIG=$tmp/hbd/hpcbridge.yaml
			[ "$m" = hpcbridge ] ||
				export HPCBRIDGE_CONFIG=$tmp/hbd-sock/hpcbridge.yaml
			export HB_SLURM_PLUGIN_DIR=$build/slurm-plugin
			export HB_SLURM_JOB_SUBMIT_PLUGINS=hpcbridge
			;;
		base)
			export HPCBRIDGE_CONFIG=$tmp/hbd-base/hpcbridge.yaml
			export HB_SLURM_PLUGIN_DIR=$base/slurm-plugin
			export HB_SLURM_JOB_SUBMIT_PLUGINS=hpcbridge
			;;
		lua) export HB_SLURM_JOB_SUBMIT_LUA=$lua_rule ;;
		lua-noop) export HB_SLURM_JOB_SUBMIT_LUA=$lua_noop ;;
		esac
		slurm_up "$tmp/$m" >/dev/null
		slurm_env "$tmp/$m" >"$tmp/$m.env"
	)
done

declare -A rates
for r in $(seq "$rounds"); do
	for i in $(seq "$n"); do
		for m in $modes; do
			t0=$EPOCHREALTIME
			p=gpu
			[ "$m" != route ] || p=burst
			SLURM_CONF=$tmp/$m/slurm.conf sbatch -H -p $p --wrap=true \
				-o /dev/null >/dev/null 2>&1
			t1=$EPOCHREALTIME
			echo "$t0 $t1" >>"$tmp/times.$m"
			echo "$t0 $t1" >>"$tmp/times.$m.$r"
		done
	done
	for m in $modes; do
		SLURM_CONF=$tmp/$m/slurm.conf scancel -u root >/dev/null 2>&1 || true
		rates[$m]="${rates[$m]:-} $(awk -v n="$n" '{ t += $2 - $1 }
			END { printf "%.1f", n / t }' "$tmp/times.$m.$r")"
	done
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
# the median time of one sbatch, in ms
one() { awk '{ printf "%.3f\n", ($2 - $1) * 1000 }' "$tmp/times.$1" | median; }
none=$(echo "${rates[none]}" | median)
none_one=$(one none)
echo "sbatch of $n held jobs, $rounds rounds, the instances taking turns job by job:"
echo "| Slurm with | sbatch/s (median) | runs | vs none | one sbatch, median ms | added ms |"
echo "|---|---:|---|---:|---:|---:|"
for m in $modes; do
	med=$(echo "${rates[$m]}" | median)
	o=$(one "$m")
	printf '| %s | %s | %s | %.3f | %s | %+.2f |\n' "$m" "$med" \
		"${rates[$m]# }" "$(echo "$med $none" | awk '{ print $1 / $2 }')" \
		"$o" "$(echo "$o $none_one" | awk '{ print $1 - $2 }')"
done
# What the plugin itself measured: its time in slurmctld's job write lock
# per decision (it says so every 100 decisions, since slurmctld started).
echo
echo "in the job write lock, measured inside job_submit/hpcbridge (all rounds):"
echo "| Slurm with | decisions | p50 µs | p99 µs | max µs |"
echo "|---|---:|---:|---:|---:|"
for m in $modes; do
	l=$(grep -ho 'in-lock time over .*' "$tmp/$m/log/slurmctld.log" \
		2>/dev/null | tail -n 1 || true)
	[ -n "$l" ] || continue
	echo "$l" | awk -v m="$m" '{ printf "| %s | %s | %s | %s | %s |\n",
		m, $4, $7, $10, $13 }'
done
echo
# The hpcbridge instances' jobs really went through the plugin, and the
# daemon recorded every decision made in slurmctld.
for m in hpcbridge hpcbridge-socket; do
	(
		# shellcheck disable=SC1090
		. "$tmp/$m.env"
		id=$(sbatch -H -p gpu --wrap=true --parsable -o /dev/null \
			2>/dev/null)
		scontrol show job "$id" | grep -q "Partition=burst" ||
			echo "WARNING: the $m instance did not rewrite the job" >&2
		scancel "$id"
	)
done
sleep 2
# (counted in its store: a "jobs" reply lists 1000 by default)
recorded=$(sqlite3 -readonly -cmd '.timeout 5000' "$tmp/hbd/state.db" \
	"SELECT count(*) FROM jobs" 2>/dev/null || echo "?")
echo "jobs the snapshot instance decided: $((n * rounds + 1)); recorded by its daemon: $recorded"

echo
echo "decision round trip (bench_decide, one caller, on a kept connection as the plugin):"
echo "| state on | decisions | p50 µs | p90 µs | p99 µs | max µs | failures | over 20 ms |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
printf '| disk (%s) ' "$(df --output=fstype "$tmp" | tail -n 1)"
"$build/bin/bench_decide" "$tmp/hbd/hbd.sock" 2000
printf '| tmpfs '
"$build/bin/bench_decide" "$tmp/hbd-shm/hbd.sock" 2000
if [ -n "$base" ]; then
	printf '| disk, base build '
	"$build/bin/bench_decide" "$tmp/hbd-base/hbd.sock" 2000
	printf '| disk (again, after base) '
	"$build/bin/bench_decide" "$tmp/hbd/hbd.sock" 2000
fi
echo
echo "decisions per second with many callers (hbload, one request in flight each, waiting in poll() as the plugin does):"
for t in 1 64 256; do
	printf '%s callers, state on disk: ' "$t"
	"$build/tests/hbload" "$tmp/hbd/hbd.sock" "$t" $((20000 / t + 1))
done
printf '256 callers, state on tmpfs: '
"$build/tests/hbload" "$tmp/hbd-shm/hbd.sock" 256 80
printf '256 callers, state on tmpfs, waiting in a blocking recv(): '
"$build/tests/hbload" "$tmp/hbd-shm/hbd.sock" 256 80 blocking
