#!/usr/bin/env bash
# scripts/sandbox.sh - hpcbridge's local sandbox, on loopback:
#
#   * a real single-node Slurm 22.05 (munged, slurmctld, slurmd) with
#     hpcbridge's job_submit and SPANK plugins loaded, and a `burst`
#     partition on a node of its own for the proxy jobs; with accounting
#     (slurmdbd over a private MariaDB), so sacct works
#     (HB_SLURM_ACCOUNTING=0 leaves it out);
#   * the Kubernetes API emulator (hb-kubemu, docs/emulator.md) over TLS
#     with a bearer token, its emulated MPI Operator in execute mode: the
#     MPIJobs of burst jobs really run their launchers here, with Open MPI;
#   * hpcbridged, its state in DIR, sending burst jobs to the emulated
#     cluster through DIR/kubeconfig.  HB_SANDBOX_BACKEND=local runs them
#     on the daemon's local backend instead (on this host, as their users:
#     a stand-in some tests use).  HB_SANDBOX_KUBEMU_ARGS adds arguments
#     to the emulator's (words split at spaces), such as --node specs.
#     Placement: partition gpu goes to Kubernetes, the rest stays on Slurm;
#     HB_SANDBOX_POLICY=FILE uses that policy file instead.
#     Managed MPIJobs of namespace default may run as any user whose uid
#     is 1000 or more (origin.namespaces {default: ["*"]}, never root);
#     HB_SANDBOX_ORIGIN_NAMESPACES=YAML (a flow mapping) maps others.
#     Namespace default enforces Pod Security "restricted"
#     (HB_SANDBOX_POD_SECURITY=baseline or privileged relaxes it, for
#     hand-made MPIJobs that run as root); Kueue has a ClusterQueue, the
#     LocalQueue burst and priorities low, normal and high
#     (examples/sandbox/kueue.yaml), where burst jobs queue
#     (HB_SANDBOX_KUEUE=0: hpcbridged names no queue).
#     slurmctld's plugin decides from the daemon's snapshot
#     (HB_SANDBOX_DECIDE=daemon: it asks the daemon over its socket;
#     HB_SANDBOX_ALLOWANCE=N sets plugin.allowance, whole units).
#     Finished jobs are metered into the ledger with the rate card
#     config/ratecards/example.yaml (HB_SANDBOX_RATECARD=FILE names
#     another); `hpcbridge report` reads it.
#   * a private S3 server: OpenStack Swift with its s3api middleware
#     (tests/integration/lib/swift.sh) on a loopback port, with the
#     bucket hpcbridge-ckpt for checkpoints; its endpoint and credentials
#     are among the `export` lines (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID,
#     AWS_SECRET_ACCESS_KEY, AWS_DEFAULT_REGION, an rclone remote
#     hbswift:, S3CMD_CONFIG), and hpcbridge.yaml's checkpoints: section
#     names it.  HB_SANDBOX_S3=0 leaves it out.
#   * a user to submit as: root never bursts, so burst jobs need one.
#     Run as root, `up` makes user hbdemo (HB_SANDBOX_USER names another)
#     if it does not exist, and DIR/work, owned by it: the directory the
#     cluster mounts (kubernetes.volumes), where burst jobs are submitted
#     from and write their files.  Run as a user, that user is the one.
#
# usage: sandbox.sh up DIR BUILD_DIR     start what is not running; print
#                                        `export` lines
#        sandbox.sh down DIR             stop what `up` started, by PID
#                                        (and local-backend jobs left
#                                        running, by their pid files)
#        sandbox.sh env DIR BUILD_DIR    print the `export` lines again
#
# `hpcbridge sandbox up|down` runs this script.  Everything lives in DIR:
#   hpcbridge.yaml      the daemon's and the plugins' configuration
#   hpcbridged.pid .sock .log  state.db
#   kubeconfig          the emulated cluster's (also for kubectl or python)
#   kube/               the emulator: pid, port, log, TLS CA, pods' dirs
#   slurm/              the Slurm instance (tests/integration/lib/slurm.sh)
#   swift/              the S3 server (tests/integration/lib/swift.sh)
#   s3cfg               s3cmd's configuration (keys from the environment)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/.." && pwd)
# shellcheck source=../tests/integration/lib/slurm.sh
. "$src/tests/integration/lib/slurm.sh"
# shellcheck source=../tests/integration/lib/swift.sh
. "$src/tests/integration/lib/swift.sh"

# The bucket checkpoints go to, and the prefix under it (checkpoints.url).
CKPT_BUCKET=hpcbridge-ckpt
CKPT_PREFIX=jobs

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
	printf 'export KUBECONFIG=%q\n' "$dir/kubeconfig"
	printf 'export PATH=%q:"$PATH"\n' "$build/bin"
	printf 'export HB_SANDBOX_USER=%q\n' "$(sandbox_user)"
	printf 'export HB_SANDBOX_WORK=%q\n' "$dir/work"
	if s3_enabled && [ -r "$dir/swift/.hbswift/env" ]; then
		# AWS_*, the rclone remote hbswift: and the HB_SWIFT_* records
		swift_env "$dir/swift"
		printf 'export S3CMD_CONFIG=%q\n' "$dir/s3cfg"
		printf 'export HB_SANDBOX_CKPT_URL=%q\n' \
			"s3://$CKPT_BUCKET/$CKPT_PREFIX"
	fi
}

s3_enabled() { [ "${HB_SANDBOX_S3:-1}" != 0 ]; }

# s3_up DIR: the S3 server in DIR/swift unless it runs (its environment
# loaded either way), the checkpoint bucket, and s3cmd's configuration.
# The bucket is made with curl's SigV4 and the library's netrc (the first
# user's key, which holds ':'), as swift.sh probes it: no CLI to start.
s3_up() {
	local dir=$1 sw=$1/swift code
	if swift_is_up "$sw" 2>/dev/null && [ -r "$sw/.hbswift/env" ]; then
		# shellcheck disable=SC1091
		. "$sw/.hbswift/env"
	else
		swift_down "$sw" >&2 # a stopped instance: release its records
		swift_up "$sw" >&2 || return 1
	fi
	code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 -X PUT \
		--aws-sigv4 "aws:amz:$AWS_DEFAULT_REGION:s3" \
		-H 'x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' \
		--netrc-file "$sw/.hbswift/netrc" \
		"$AWS_ENDPOINT_URL/$CKPT_BUCKET") || code=000
	case $code in
	200 | 409) ;; # made, or there already
	*)
		say "cannot make bucket $CKPT_BUCKET (HTTP $code)"
		return 1
		;;
	esac
	cat >"$dir/s3cfg" <<-CFG
	# Written by hpcbridge sandbox up: s3cmd against the sandbox's S3
	# server; the keys come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.
	[default]
	host_base = ${AWS_ENDPOINT_URL#http://}
	host_bucket = ${AWS_ENDPOINT_URL#http://}
	use_https = False
	bucket_location = $AWS_DEFAULT_REGION
	signature_v2 = False
	CFG
}

# The user burst jobs are submitted as: HB_SANDBOX_USER (root's default
# hbdemo), or the caller when not root.
sandbox_user() {
	if [ "$(id -u)" = 0 ]; then
		printf '%s\n' "${HB_SANDBOX_USER:-hbdemo}"
	else
		id -un
	fi
}

# Make the user (as root, if missing) and DIR/work, owned by it.
user_up() {
	local dir=$1 u
	u=$(sandbox_user)
	if ! id -u "$u" >/dev/null 2>&1; then
		useradd --create-home --user-group --shell /bin/bash "$u" ||
			{ say "cannot make user $u"; return 1; }
	fi
	[ "$(id -u "$u")" != 0 ] || { say "user $u is root"; return 1; }
	mkdir -p "$dir/work"
	chmod 755 "$dir" "$dir/work"
	[ "$(id -u)" != 0 ] || chown "$u:$(id -g "$u")" "$dir/work"
}

write_config() {
	local dir=$1 build=$2
	local origin_ns=${HB_SANDBOX_ORIGIN_NAMESPACES:-'{default: ["*"]}'}
	local kueue=
	if [ "${HB_SANDBOX_KUEUE:-1}" != 0 ]; then
		kueue=$(printf '  %s\n' "queues:" "  default: burst" \
			"priority_classes: {low: low, normal: normal, high: high}" \
			"default_priority_class: normal")
	fi
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
	  backend: ${HB_SANDBOX_BACKEND:-kubernetes}
	  kubeconfig: $dir/kubeconfig
	  local_dir: $dir/remote
	kubernetes:
	  namespace: default
	  volumes:
	    - {path: $dir/work, pvc: work}
	  allowed_images: ["mpioperator/*", "docker.io/mpioperator/*"]
	$kueue
	plugin:
	  decide: ${HB_SANDBOX_DECIDE:-snapshot}
	  allowance: ${HB_SANDBOX_ALLOWANCE:-100}
	  timeout_ms: 200
	origin:
	  namespaces: $origin_ns
	chargeback:
	  ratecard: ${HB_SANDBOX_RATECARD:-$src/config/ratecards/example.yaml}
	YAML
	# Where burst jobs' checkpoints go (docs/configuration.md): the
	# Secret hpcbridge-s3 (s3_secret_up) holds the pods' keys; the
	# checkpoint's trips while a job runs every HB_SANDBOX_CKPT_INTERVAL
	# seconds (60).
	if s3_enabled; then
		printf 'checkpoints:\n  url: %s\n  endpoint: %s\n  region: %s\n  secret: hpcbridge-s3\n  keep: 3\n  interval: %s\n' \
			"s3://$CKPT_BUCKET/$CKPT_PREFIX" "$AWS_ENDPOINT_URL" \
			"$AWS_DEFAULT_REGION" "${HB_SANDBOX_CKPT_INTERVAL:-60}" >>"$dir/hpcbridge.yaml"
	fi
	if [ -n "${HB_SANDBOX_POLICY:-}" ]; then
		printf 'placement:\n  policy: %s\n' "$HB_SANDBOX_POLICY" \
			>>"$dir/hpcbridge.yaml"
	else
		printf 'placement:\n  default_target: slurm\n  partitions:\n    gpu: kubernetes\n' \
			>>"$dir/hpcbridge.yaml"
	fi
}

# The emulated cluster, unless it runs: TLS (its CA kept in kube/tls), one
# token, execute mode.  Waits for its port file (written once serving).
kube_up() {
	local dir=$1 build=$2 t=0
	pid_of "$dir/kube/pid" hb-kubemu >/dev/null && return 0
	[ -x "$build/bin/hb-kubemu" ] || {
		say "no $build/bin/hb-kubemu: build first"
		return 1
	}
	rm -f "$dir/kube/port"
	[ -s "$dir/kube/token" ] ||
		head -c 18 /dev/urandom | base64 | tr -dc A-Za-z0-9 \
			>"$dir/kube/token"
	local -a env=() extra=()
	# burst jobs' pods meet Pod Security "restricted"; their files are
	# on claim "work", DIR/work (emulated claims live in DIR/pvc)
	local ps=pod-security.kubernetes.io/enforce=${HB_SANDBOX_POD_SECURITY:-restricted}
	mkdir -p "$dir/pvc/default"
	ln -sfn "$dir/work" "$dir/pvc/default/work"
	read -r -a extra <<<"${HB_SANDBOX_KUBEMU_ARGS-}"
	if [ "$(id -u)" = 0 ]; then
		env=(--exec-env OMPI_ALLOW_RUN_AS_ROOT=1
			--exec-env OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)
	fi
	# The pods' "image" holds hpcbridge (the checkpoint's init container
	# and the launcher's push run it): this build's, first on PATH.
	env+=(--exec-env "PATH=$build/bin:${PATH:-/usr/bin:/bin}")
	setsid "$build/bin/hb-kubemu" --listen 127.0.0.1:0 \
		--port-file "$dir/kube/port" --pidfile "$dir/kube/pid" \
		--tls-dir "$dir/kube/tls" --token "$(cat "$dir/kube/token")" \
		--kubeconfig-out "$dir/kubeconfig" --workdir "$dir/kube/work" \
		--execute --pod-start-ms 100 "${env[@]}" \
		--namespace "default,$ps" --pvc-root "$dir/pvc" \
		"${extra[@]}" </dev/null >>"$dir/kube/log" 2>&1 &
	until [ -s "$dir/kube/port" ]; do
		t=$((t + 1))
		if [ "$t" -gt 100 ]; then
			say "hb-kubemu did not come up; its log:"
			tail -n 20 "$dir/kube/log" >&2
			return 1
		fi
		sleep 0.1
	done
	printf 'https://127.0.0.1:%s\n' "$(cat "$dir/kube/port")" \
		>"$dir/kube/url"
	kueue_up "$dir" || return 1
	! s3_enabled || s3_secret_up "$dir"
}

# kube_apply DIR FILE: the objects of FILE into the emulated cluster, with
# kubectl (python3-kubernetes where kubectl is missing).
kube_apply() {
	local dir=$1 f=$2
	if command -v kubectl >/dev/null 2>&1; then
		KUBECONFIG=$dir/kubeconfig kubectl apply -f "$f" >&2 && return 0
	else
		KUBECONFIG=$dir/kubeconfig /usr/bin/python3 - "$f" <<-'PY' >&2 && return 0
		import sys, yaml
		from kubernetes import client, config
		config.load_kube_config()
		api = client.CustomObjectsApi()
		for o in yaml.safe_load_all(open(sys.argv[1])):
		    ns = o["metadata"].get("namespace")
		    if o["apiVersion"] == "v1" and o["kind"] == "Secret":
		        client.CoreV1Api().create_namespaced_secret(ns, o)
		        continue
		    g, v = o["apiVersion"].split("/")
		    plural = o["kind"].lower() + "es" if o["kind"].endswith("s") \
		        else o["kind"].lower() + "s"
		    if ns:
		        api.create_namespaced_custom_object(g, v, ns, plural, o)
		    else:
		        api.create_cluster_custom_object(g, v, plural, o)
		PY
	fi
	say "cannot apply $f"
	return 1
}

# Kueue's queue and priorities (examples/sandbox/kueue.yaml).
kueue_up() {
	kube_apply "$1" "$src/examples/sandbox/kueue.yaml"
}

# The Secret hpcbridge-s3 that burst jobs' pods take the S3 keys from
# (checkpoints.secret): the init container pulls a checkpoint with them,
# the launcher pushes it back.  Written 0600 in DIR/kube, never printed.
s3_secret_up() {
	local dir=$1 f=$1/kube/s3-secret.yaml
	(
		umask 077
		cat >"$f" <<-YAML
		apiVersion: v1
		kind: Secret
		metadata: {name: hpcbridge-s3, namespace: default}
		stringData:
		  AWS_ACCESS_KEY_ID: "$AWS_ACCESS_KEY_ID"
		  AWS_SECRET_ACCESS_KEY: "$AWS_SECRET_ACCESS_KEY"
		YAML
	)
	kube_apply "$dir" "$f"
}

# Stop the process of pidfile FILE running PROGRAM: TERM, then KILL.
stop_pid() {
	local file=$1 prog=$2 pid i
	if pid=$(pid_of "$file" "$prog"); then
		kill -TERM "$pid" 2>/dev/null || true
		for i in $(seq 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$file"
}

# stop_remote_jobs DIR: the local backend's jobs still running (their
# daemon died before it could cancel them), each a process group whose
# leader DIR/remote/ID/pid names as "PID STARTTIME": SIGTERM to the group,
# SIGKILL after 5 s.  Only a pid file of the daemon's (owned by this uid,
# in the daemon's own DIR/remote/ID) is believed; a pid whose start time
# differs is another process's now, and is left alone.  The signals are
# sent as the job's user (the owner of DIR/remote/ID/work), so that they
# can reach nothing else.
stop_remote_jobs() {
	local dir=$1 f pid start stat fields left=() alive i
	local -A work=()
	# sig_job SIGNAL PID: to the group of PID, as the job's user
	sig_job() {
		local u g
		u=$(stat -c %u "${work[$2]}") && g=$(stat -c %g "${work[$2]}") ||
			return 1
		if [ "$(id -u)" = 0 ] && [ "$u" != 0 ]; then
			setpriv --reuid="$u" --regid="$g" --clear-groups \
				kill "-$1" -- "-$2" 2>/dev/null
		else
			kill "-$1" -- "-$2" 2>/dev/null
		fi
	}
	for f in "$dir"/remote/*/pid; do
		[ -f "$f" ] && [ ! -L "$f" ] || continue
		[ "$(stat -c %u "$f")" = "$(id -u)" ] &&
			[ "$(stat -c %u "${f%/pid}")" = "$(id -u)" ] &&
			[ -d "${f%/pid}/work" ] || continue
		read -r pid start _ <"$f" || continue
		case $pid in '' | *[!0-9]*) continue ;; esac
		stat=$(cat "/proc/$pid/stat" 2>/dev/null) || continue
		# after the command's closing parenthesis comes field 3, so
		# the start time (field 22) is the 20th
		read -ra fields <<<"${stat##*) }"
		[ "${fields[19]:-}" = "$start" ] || continue
		work[$pid]=${f%/pid}/work
		sig_job TERM "$pid" && left+=("$pid")
	done
	for i in $(seq 50); do
		alive=()
		for pid in "${left[@]}"; do
			kill -0 -- "-$pid" 2>/dev/null && alive+=("$pid")
		done
		[ "${#alive[@]}" -gt 0 ] || return 0
		sleep 0.1
	done
	for pid in "${alive[@]}"; do
		sig_job KILL "$pid" || true
	done
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
		pid_of "$dir/kube/pid" hb-kubemu >/dev/null &&
		slurm_is_up "$dir/slurm" 2>/dev/null &&
		{ ! s3_enabled || swift_is_up "$dir/swift" 2>/dev/null; }; then
		say "already up in $dir"
		print_env "$dir" "$build"
		return 0
	fi
	mkdir -p "$dir/kube" "$dir/remote"
	user_up "$dir" || return 1
	# First: the configuration names its endpoint.
	if s3_enabled && ! s3_up "$dir"; then
		down "$dir"
		return 1
	fi
	write_config "$dir" "$build"

	export HPCBRIDGE_CONFIG="$dir/hpcbridge.yaml"
	export HB_SLURM_PLUGIN_DIR="$build/slurm-plugin"
	export HB_SLURM_JOB_SUBMIT_PLUGINS=hpcbridge
	export HB_SLURM_PLUGSTACK="required $build/slurm-plugin/spank_hpcbridge.so"
	export HB_SLURM_BURST_NODE=1
	export HB_SLURM_DETACH=1
	export HB_SLURM_ACCOUNTING=${HB_SLURM_ACCOUNTING:-1}
	export HB_SLURM_NODES=${HB_SLURM_NODES:-1}
	export HB_SLURM_CPUS=${HB_SLURM_CPUS:-8}
	export HB_SLURM_MEM_MB=${HB_SLURM_MEM_MB:-16000}
	export HB_SLURM_GPUS=${HB_SLURM_GPUS-}
	# Start only what is not running: `up` again after the daemon died
	# restarts the daemon alone.
	if slurm_is_up "$dir/slurm" 2>/dev/null; then
		export SLURM_CONF="$dir/slurm/slurm.conf"
	else
		# a stopped instance (`down` keeps its files): start afresh,
		# and the gateway's state with it (a new Slurm counts its job
		# ids from 1 again)
		if [ -e "$dir/slurm/.hbslurm" ]; then
			slurm_purge "$dir/slurm" >&2 || true
			rm -f "$dir/state.db" "$dir/state.db-wal" \
				"$dir/state.db-shm"
		fi
		slurm_up "$dir/slurm" >&2 || {
			down "$dir"
			return 1
		}
	fi
	if ! kube_up "$dir" "$build"; then
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
		# The daemon wrote its placement snapshot before serving;
		# slurmctld's plugin takes it in within 20 ms and asks for a
		# lease of gateway ids, which the daemon publishes at once.
		t=0
		until [ "$(od -An -t u8 -j 48 -N 8 "$dir/placement.snap" \
			2>/dev/null | tr -d ' ')" -gt 0 ] 2>/dev/null; do
			t=$((t + 1))
			[ "$t" -gt 100 ] && break
			sleep 0.05
		done
		sleep 0.2
	fi

	local s3=
	! s3_enabled || s3=", S3 ($AWS_ENDPOINT_URL, bucket $CKPT_BUCKET)"
	say "up in $dir: Slurm (partitions debug, gpu, long, burst)," \
		"the emulated cluster ($(cat "$dir/kube/url")), hpcbridged$s3"
	print_env "$dir" "$build"
}

down() {
	local dir=${1:?usage: sandbox.sh down DIR}
	[ -d "$dir" ] || return 0
	if [ -d "$dir/slurm" ]; then
		slurm_down "$dir/slurm" >&2 || true
	fi
	stop_pid "$dir/hpcbridged.pid" hpcbridged
	stop_remote_jobs "$dir"
	stop_pid "$dir/kube/pid" hb-kubemu
	# by the PIDs swift_up recorded, each checked to be this DIR's server
	swift_down "$dir/swift" >&2
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
