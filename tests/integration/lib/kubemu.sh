# shellcheck shell=bash
# tests/integration/lib/kubemu.sh - one hb-kubemu for a test: started in
# the background, stopped by its PID at exit.  The sourcing script sets
# build, src and tmp (its scratch directory, removed at exit too).
#
#   kubemu_start ARGS...   hb-kubemu on a loopback port with the real CRDs
#                          and ARGS, its output in $tmp/emu.out and
#                          $tmp/emu.err; returns once it serves (its port in
#                          $tmp/port), 1 (with its stderr shown) if it did
#                          not start.  Its PID is in $kubemu_pid.
#   kubemu_stop            TERM, then KILL after 10 s, by PID.
#
# kubemu_start registers kubemu_stop and the removal of $tmp on EXIT.

kubemu_pid=
kubemu_crds=${HB_SHARED_DIR:-$src/../shared}/reference/crds

kubemu_stop() {
	local _
	[ -n "$kubemu_pid" ] || return 0
	kill -TERM "$kubemu_pid" 2>/dev/null || true
	for _ in $(seq 100); do
		kill -0 "$kubemu_pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$kubemu_pid" 2>/dev/null || true
	wait "$kubemu_pid" 2>/dev/null || true
	kubemu_pid=
}

_kubemu_exit() {
	kubemu_stop
	rm -rf "$tmp"
}

kubemu_start() {
	local _
	trap _kubemu_exit EXIT
	rm -f "$tmp/port"
	"$build/bin/hb-kubemu" --listen 127.0.0.1:0 --port-file "$tmp/port" \
		--crds "$kubemu_crds" "$@" \
		>>"$tmp/emu.out" 2>>"$tmp/emu.err" &
	kubemu_pid=$!
	for _ in $(seq 100); do
		[ -s "$tmp/port" ] && return 0
		kill -0 "$kubemu_pid" 2>/dev/null || break
		sleep 0.1
	done
	cat "$tmp/emu.err" >&2
	return 1
}
