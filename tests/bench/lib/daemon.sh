# daemon.sh - hpcbridged for the benchmarks, sourced.
#
#   hb_bench_daemon BUILD DIR STATE [KEY: VALUE]...
#       start BUILD/bin/hpcbridged with its socket at DIR/hbd.sock, its
#       state at STATE, its log at DIR/hbd.log and the benchmarks' rule
#       (partition gpu goes to Kubernetes, the rest stays on Slurm), and
#       any further daemon.* settings given ("checkpoint_pages: 4000");
#       plugin.decide is $HB_BENCH_DECIDE (left out when unset: the
#       default, snapshot; a build from before it knows no such key);
#       wait for the socket; append its pid to hb_bench_pids.
#   hb_bench_daemons_stop
#       SIGTERM every daemon started, by PID, and wait for each.
#   hb_bench_dirs NAME
#       make the scratch directories tmp (under /tmp) and shm (under
#       /dev/shm, for state on tmpfs), and on exit stop every daemon and
#       remove both.

hb_bench_pids=()

hb_bench_daemon() {
	local build=$1 dir=$2 state=$3 extra=
	shift 3
	for kv in "$@"; do
		extra="$extra  $kv"$'\n'
	done
	mkdir -p "$dir"
	cat >"$dir/hpcbridge.yaml" <<-YAML
	daemon:
	  socket: $dir/hbd.sock
	  state: $state
	  log_level: warn
	${extra}slurm:
	  user: root
	plugin:
	  ${HB_BENCH_DECIDE:+decide: $HB_BENCH_DECIDE}
	  timeout_ms: 200
	placement:
	  default_target: slurm
	  partitions:
	    gpu: kubernetes
	YAML
	"$build/bin/hpcbridged" --config "$dir/hpcbridge.yaml" --foreground \
		2>>"$dir/hbd.log" &
	hb_bench_pids+=("$!")
	for _ in $(seq 100); do
		[ -S "$dir/hbd.sock" ] && return 0
		sleep 0.05
	done
	echo "hpcbridged did not start; see $dir/hbd.log" >&2
	return 1
}

hb_bench_daemons_stop() {
	local p
	for p in "${hb_bench_pids[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
	done
	for p in "${hb_bench_pids[@]}"; do
		wait "$p" 2>/dev/null || true
	done
}

hb_bench_dirs() {
	tmp=$(mktemp -d "/tmp/hb-$1.XXXXXX")
	shm=$(mktemp -d "/dev/shm/hb-$1.XXXXXX")
	trap 'hb_bench_daemons_stop; rm -rf "$tmp" "$shm"' EXIT
}
