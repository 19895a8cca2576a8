#!/usr/bin/env bash
# scripts/sandbox.sh - hpcbridge's local sandbox, on loopback:
#
#   * a real single-node Slurm 22.05 (munged, slurmctld, slurmd) with
#     hpcbridge's job_submit and SPANK plugins loaded, and a `burst`
#     partition on a node of its own for the proxy jobs;
#   * hpcbridged, its state and its remote jobs in DIR.
#
# Until the Kubernetes side exists, burst jobs run on the daemon's local
# backend (their scripts run on this host as their users): it stands in
# for the cluster.
#
# usage: sandbox.sh up DIR BUILD_DIR     start what is not running; print
#                                        `export` lines
#        sandbox.sh down DIR             stop what `up` started, by PID
#        sandbox.sh env DIR BUILD_DIR    print the `export` lines again
#
# `hpcbridge sandbox up|down` runs this script.  Everything lives in DIR:
#   hpcbridge.yaml      the daemon's and the plugins' configuration
#   hpcbridged.pid .sock .log  state.db  remote/
#   slurm/              the Slurm instance (tests/integration/lib/slurm.sh)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/.." && pwd)
# shellcheck source=../tests/integration/lib/slurm.sh
. "$src/tests/integration/lib/slurm.sh"

say() { printf 'sandbox: %s\n' "$*" >&2; }

# The pid in FILE if it is alive and runs PROGRAM.
pid_of() {
	local file=$1 prog=$2 pid
	[ -r "$file" ] || return 1
	pid=$(head -c 32 "$file" | tr -dc 0-9)
	[ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$prog" || return 1
	printf '%s\n' "$pid"
}

print_env() {
	local dir=$1 build=$2
	printf 'export SLURM_CONF=%q\n' "$dir/slurm/slurm.conf"
	printf 'export HPCBRIDGE_CONFIG=%q\n' "$dir/hpcbridge.yaml"
	printf 'export HPCBRIDGE_SOCKET=%q\n' "$dir/hpcbridged.sock"
	printf 'export PATH=%q:"$PATH"\n' "$build/bin"
}

write_config() {
	local dir=$1 build=$2
	cat >"$dir/hpcbridge.yaml" <<-YAML
	# Written by hpcbridge sandbox up.
	daemon:
	  socket: $dir/hpcbridged.sock
	  state: $dir/state.db
	  log_level: info
	slurm:
	  user: root
	  burst_partition: burst
	  shadow_command: $build/bin/hpcbridge
	remote:
	  backend: local
	  local_dir: $dir/remote
	plugin:
	  timeout_ms: 200
	placement:
	  default_target: slurm
	  partitions:
	    gpu: kubernetes
	YAML
}

up() {
	local dir=${1:?usage: sandbox.sh up DIR BUILD_DIR} build=${2:?BUILD_DIR}
	local t pid
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	build=$(cd "$build" && pwd)
	[ -x "$build/bin/hpcbridged" ] || {
		say "no $build/bin/hpcbridged: build first"
		return 1
	}
	if pid=$(pid_of "$dir/hpcbridged.pid" hpcbridged) &&
		slurm_is_up "$dir/slurm" 2>/dev/null; then
		say "already up in $dir"
		print_env "$dir" "$build"
		return 0
	fi
	write_config "$dir" "$build"
	mkdir -p "$dir/remote"

	export HPCBRIDGE_CONFIG="$dir/hpcbridge.yaml"
	export HB_SLURM_PLUGIN_DIR="$build/slurm-plugin"
	export HB_SLURM_JOB_SUBMIT_PLUGINS=hpcbridge
	export HB_SLURM_PLUGSTACK="required $build/slurm-plugin/spank_hpcbridge.so"
	export HB_SLURM_BURST_NODE=1
	export HB_SLURM_DETACH=1
	export HB_SLURM_NODES=${HB_SLURM_NODES:-1}
	export HB_SLURM_CPUS=${HB_SLURM_CPUS:-8}
	export HB_SLURM_MEM_MB=${HB_SLURM_MEM_MB:-16000}
	export HB_SLURM_GPUS=${HB_SLURM_GPUS-}
	# Start only what is not running: `up` again after the daemon died
	# restarts the daemon alone.
	if slurm_is_up "$dir/slurm" 2>/dev/null; then
		export SLURM_CONF="$dir/slurm/slurm.conf"
	elif ! slurm_up "$dir/slurm" >&2; then
		down "$dir"
		return 1
	fi
	# After Slurm: the daemon's Slurm client reads SLURM_CONF.
	if ! pid_of "$dir/hpcbridged.pid" hpcbridged >/dev/null; then
		rm -f "$dir/hpcbridged.sock"
		setsid "$build/bin/hpcbridged" --config "$dir/hpcbridge.yaml" \
			--foreground --pidfile "$dir/hpcbridged.pid" \
			</dev/null >>"$dir/hpcbridged.log" 2>&1 &
		t=0
		until "$build/bin/hpcbridge" jobs --all \
			--socket "$dir/hpcbridged.sock" --timeout 500 \
			>/dev/null 2>&1; do
			t=$((t + 1))
			if [ "$t" -gt 100 ]; then
				say "hpcbridged did not come up; its log:"
				tail -n 20 "$dir/hpcbridged.log" >&2
				down "$dir"
				return 1
			fi
			sleep 0.1
		done
	fi

	say "up in $dir: Slurm (partitions debug, gpu, long, burst), hpcbridged"
	print_env "$dir" "$build"
}

down() {
	local dir=${1:?usage: sandbox.sh down DIR} pid i
	[ -d "$dir" ] || return 0
	if [ -d "$dir/slurm" ]; then
		slurm_down "$dir/slurm" >&2 || true
	fi
	if pid=$(pid_of "$dir/hpcbridged.pid" hpcbridged); then
		kill -TERM "$pid" 2>/dev/null || true
		for i in $(seq 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$dir/hpcbridged.pid"
	say "down: $dir"
}

case "${1:-}" in
up) shift; up "$@" ;;
down) shift; down "$@" ;;
env) shift; print_env "$(cd "$1" && pwd)" "$(cd "$2" && pwd)" ;;
*)
	printf 'usage: sandbox.sh up DIR BUILD_DIR | down DIR | env DIR BUILD_DIR\n' >&2
	exit 2
	;;
esac
