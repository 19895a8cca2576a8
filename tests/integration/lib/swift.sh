# shellcheck shell=bash
# tests/integration/lib/swift.sh - a private OpenStack Swift with its s3api
# middleware on loopback: a real S3 server that checks SigV4 signatures.
#
# Source this file, then:
#
#   swift_up DIR        write the rings and configuration under DIR, start
#                       the account, container and object servers and the
#                       proxy (s3api + tempauth) on free loopback ports,
#                       wait until each answers its healthcheck and the
#                       first user's S3 credentials are accepted, then
#                       export the outputs below.  On failure: prints the
#                       logs, stops what it started, returns 1.
#   swift_down DIR      stop the proxy, then the object, container and
#                       account servers (SIGTERM, then SIGKILL, by the PIDs
#                       recorded in DIR, each checked to be the server of
#                       this DIR first).  Removes nothing.  Safe to call
#                       twice, and from another shell.
#   swift_env DIR       print `export ...` lines of the outputs, for
#                       `eval "$(swift_env DIR)"` in another shell.
#   swift_logs DIR      print the tail of every server's log (on failure).
#   swift_is_up DIR     0 if every server of DIR answers its healthcheck.
#   swift_rss_kib DIR   the summed resident memory (KiB) of DIR's servers.
#
# Typical use in a test:
#
#   . "$src/tests/integration/lib/swift.sh"
#   tmp=$(mktemp -d); chmod 0711 "$tmp"
#   trap 'swift_down "$tmp/swift"; rm -rf "$tmp"' EXIT
#   swift_up "$tmp/swift"
#   aws --endpoint-url "$AWS_ENDPOINT_URL" s3 mb s3://b1
#
# Users.  As root each server is started through setpriv as the
# unprivileged user HB_SWIFT_USER (Debian's package creates `swift`); the
# ports are above 1024, and setpriv execs, so each PID is the server's.
# That user must be able to reach DIR: every directory above DIR needs o+x
# (mktemp -d makes 0700; chmod it 0711), and swift_up says so when it is
# not.  As another user
# everything runs as that user.  Each server calls setsid() as it starts,
# so it leaves the caller's session and outlives it: stop it with
# swift_down (`hpcbridge sandbox` can rely on that).
#
# Storage.  One device, DIR/srv/d1, a plain directory (mount_check off) on
# whatever filesystem DIR is on; it must support user xattrs, which Swift's
# object server keeps its metadata in (swift_up checks).  One replica, one
# zone, rings of 2^HB_SWIFT_PART_POWER partitions.
#
# Inputs (environment variables, all optional):
#   HB_SWIFT_USER           user the servers run as, as root     [swift]
#   HB_SWIFT_ACCOUNT        first user's tempauth account       [hbtest]
#   HB_SWIFT_NAME           first user's name                   [alice]
#   HB_SWIFT_ACCOUNT2       second user's account               [hbother]
#   HB_SWIFT_NAME2          second user's name                  [bob]
#   HB_SWIFT_REGION         s3api's location, AWS_DEFAULT_REGION [us-east-1]
#   HB_SWIFT_PART_POWER     ring partition power                [6]
#   HB_SWIFT_READY_TIMEOUT  seconds to wait for readiness       [30]
#
# Outputs (exported by swift_up, and written by swift_env):
#   AWS_ENDPOINT_URL        http://127.0.0.1:PROXY_PORT
#   AWS_ACCESS_KEY_ID       ACCOUNT:NAME (tempauth's form; contains ':')
#   AWS_SECRET_ACCESS_KEY   random, chosen by swift_up
#   AWS_DEFAULT_REGION      HB_SWIFT_REGION
#   HB_SWIFT_ACCESS_KEY_ID2, HB_SWIFT_SECRET_ACCESS_KEY2
#                           the second user, in its own account: the two
#                           users share no bucket (a bucket of one is
#                           NoSuchBucket to the other; Swift keeps bucket
#                           names per account, not global as AWS does)
#   HB_SWIFT_DIR, HB_SWIFT_PORT (the proxy's)
#   RCLONE_CONFIG_HBSWIFT_*  an rclone remote `hbswift:` for the first user
#   and unsets AWS_SESSION_TOKEN, AWS_SECURITY_TOKEN (a token would be
#   signed in and refused), AWS_PROFILE and AWS_CA_BUNDLE (rclone's
#   env_auth fails on a CA bundle over plain http).
#
# Layout of DIR (created by swift_up):
#   etc/       swift.conf, {account,container,object,proxy}-server.conf,
#              *.builder and *.ring.gz (swift_dir; as root group
#              HB_SWIFT_USER's, no access for others: proxy-server.conf
#              holds the secrets)
#   srv/d1/    the device
#   log/       each server's console log (NAME.log) and ring-builder.log
#   .hbswift/  this library's records (0700): pids/NAME, ports (the
#              first), secret1, secret2, netrc (the first user's, for
#              curl), env
#
# Sourcing this file also sources lib/slurm.sh (its port claims and
# slurm_logs), which defines the slurm_* functions.
#
# Ports.  Five consecutive free ports, claimed host-wide with
# tests/integration/lib/slurm.sh's claims (so a Slurm instance never picks
# them either): proxy, account, container, object, and a sink nothing
# listens on, where Swift's syslog datagrams and memcache lookups go (Swift
# logs to syslog as well as to the console; the sink keeps the host's
# syslog and any memcached out of it).

_hbsw_lib_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/integration/lib/slurm.sh
. "$_hbsw_lib_dir/slurm.sh"

_HBSW_SERVERS="account container object proxy"

_hbsw_log() { printf 'swift.sh: %s\n' "$*" >&2; }

# _hbsw_pid_is PID DIR NAME: PID is DIR's NAME server (its command line
# names DIR's NAME-server.conf), so a recycled PID is never signalled.
_hbsw_pid_is() {
	local pid=$1 conf="$2/etc/$3-server.conf"
	[ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
	grep -qzxF -- "$conf" "/proc/$pid/cmdline" 2>/dev/null
}

# _hbsw_pid_of DIR NAME: the recorded PID, or nothing; always 0, so that
# callers under `set -e` (a test's EXIT trap) go on.
_hbsw_pid_of() {
	local f="$1/.hbswift/pids/$2"
	if [ -r "$f" ]; then head -n1 "$f"; fi
	return 0
}

# _hbsw_stop DIR NAME SECONDS: SIGTERM, wait, then SIGKILL.
_hbsw_stop() {
	local dir=$1 name=$2 secs=${3:-10} pid i
	pid=$(_hbsw_pid_of "$dir" "$name")
	_hbsw_pid_is "$pid" "$dir" "$name" || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for i in $(seq 1 $((secs * 10))); do
		_hbsw_pid_is "$pid" "$dir" "$name" || return 0
		sleep 0.1
	done
	_hbsw_log "$name-server (pid $pid) ignored SIGTERM for ${secs}s; SIGKILL"
	kill -KILL "$pid" 2>/dev/null || true
	for i in $(seq 1 50); do
		_hbsw_pid_is "$pid" "$dir" "$name" || return 0
		sleep 0.1
	done
	_hbsw_log "$name-server (pid $pid) survived SIGKILL"
	return 1
}

# _hbsw_port DIR NAME: the port of server NAME (or "sink").
_hbsw_port() {
	local base
	read -r base <"$1/.hbswift/ports" || return 1
	case "$2" in
	proxy) echo "$base" ;;
	account) echo $((base + 1)) ;;
	container) echo $((base + 2)) ;;
	object) echo $((base + 3)) ;;
	sink) echo $((base + 4)) ;;
	esac
}

_hbsw_release_ports() {
	local dir=$1 base owner
	[ -r "$dir/.hbswift/ports" ] || return 0
	read -r base <"$dir/.hbswift/ports" || return 0
	owner=$(cat "$_HBS_CLAIMS/$base/owner" 2>/dev/null) || return 0
	[ "$owner" = "$dir" ] && rm -rf -- "${_HBS_CLAIMS:?}/$base"
	return 0
}

# _hbsw_secret: 32 random hex digits.
_hbsw_secret() { od -An -N16 -tx1 /dev/urandom | tr -d ' \n'; }

# _hbsw_check_reach DIR USER: USER can write DIR's device (as root only).
_hbsw_check_reach() {
	local dir=$1 user=$2
	if ! setpriv --reuid="$user" --regid="$user" --clear-groups \
		test -w "$dir/srv/d1" -a -r "$dir/etc/swift.conf"; then
		_hbsw_log "user $user cannot reach $dir (every directory above" \
			"it needs o+x, e.g. chmod 0711 on a mktemp -d)"
		return 1
	fi
}

# _hbsw_check_xattr DIR: the device's filesystem keeps user xattrs.
_hbsw_check_xattr() {
	local f="$1/srv/d1/.xattr-probe"
	if ! python3 -c 'import os, sys
open(sys.argv[1], "w").close()
os.setxattr(sys.argv[1], "user.swift.probe", b"1")' "$f" 2>/dev/null; then
		rm -f -- "$f"
		_hbsw_log "the filesystem of $1 does not keep user xattrs;" \
			"Swift's object server needs them (use ext4, xfs or tmpfs)"
		return 1
	fi
	rm -f -- "$f"
}

# _hbsw_rings DIR: one ring per kind, one device, one replica.  Written
# with swift-ring-builder's own RingBuilder in one /usr/bin/python3 (the command
# costs 0.6 s a call, nine calls here): create, add, rebalance, then the
# .builder and the .ring.gz the servers read.
_hbsw_rings() {
	local dir=$1
	/usr/bin/python3 - "$dir/etc" "$(_hbsw_port "$dir" account)" \
		"$(_hbsw_port "$dir" container)" "$(_hbsw_port "$dir" object)" \
		"${HB_SWIFT_PART_POWER:-6}" >>"$dir/log/ring-builder.log" 2>&1 <<-'PY' ||
	import sys
	from swift.common.ring import RingBuilder
	etc, pp = sys.argv[1], int(sys.argv[5])
	for kind, port in zip(("account", "container", "object"), sys.argv[2:5]):
	    b = RingBuilder(pp, 1, 1)
	    b.add_dev({"region": 1, "zone": 1, "ip": "127.0.0.1",
	               "port": int(port), "replication_ip": "127.0.0.1",
	               "replication_port": int(port), "device": "d1",
	               "weight": 1, "meta": ""})
	    b.rebalance()
	    b.save("%s/%s.builder" % (etc, kind))
	    b.get_ring().save("%s/%s.ring.gz" % (etc, kind))
	    print("%s ring: 2^%d partitions, 127.0.0.1:%s/d1" % (kind, pp, port))
	PY
		{
			_hbsw_log "writing the rings failed (see $dir/log/ring-builder.log)"
			return 1
		}
}

# _hbsw_common_conf DIR NAME USER: the [DEFAULT] every server shares.
# workers = 0: each server is one process, so its PID is all there is
# (with workers, a root parent forks the children that serve).
_hbsw_common_conf() {
	cat <<-CONF
	# Written by tests/integration/lib/swift.sh.
	[DEFAULT]
	bind_ip = 127.0.0.1
	bind_port = $(_hbsw_port "$1" "$2")
	workers = 0
	user = $3
	swift_dir = $1/etc
	devices = $1/srv
	mount_check = false
	disable_fallocate = true
	log_name = hb-swift-$2
	log_udp_host = 127.0.0.1
	log_udp_port = $(_hbsw_port "$1" sink)
	CONF
}

# _hbsw_write_conf DIR USER: swift.conf and the four servers' files.
_hbsw_write_conf() {
	local dir=$1 user=$2 kind
	cat >"$dir/etc/swift.conf" <<-CONF
	# Written by tests/integration/lib/swift.sh.
	[swift-hash]
	swift_hash_path_suffix = $(_hbsw_secret)
	swift_hash_path_prefix = $(_hbsw_secret)

	[storage-policy:0]
	name = Policy-0
	default = yes

	[swift-constraints]
	CONF
	for kind in account container object; do
		{
			_hbsw_common_conf "$dir" "$kind" "$user"
			cat <<-CONF

			[pipeline:main]
			pipeline = healthcheck $kind-server

			[filter:healthcheck]
			use = egg:swift#healthcheck

			[app:$kind-server]
			use = egg:swift#$kind
			CONF
			# The background daemons are never started; their sections
			# only keep swift-init-style tools quiet.
			case "$kind" in
			account) printf '\n[account-replicator]\n[account-auditor]\n[account-reaper]\n' ;;
			container) printf '\n[container-replicator]\n[container-updater]\n[container-auditor]\n' ;;
			object) printf '\n[object-replicator]\n[object-updater]\n[object-auditor]\n' ;;
			esac
		} >"$dir/etc/$kind-server.conf"
	done
	_hbsw_write_proxy_conf "$dir" "$user"
}

# _hbsw_write_proxy_conf DIR USER: the proxy with s3api before tempauth
# (s3api hands tempauth the signature to check) and slo after them
# (multipart uploads are SLO manifests).
_hbsw_write_proxy_conf() {
	local dir=$1 user=$2 f
	local a1=${HB_SWIFT_ACCOUNT:-hbtest} n1=${HB_SWIFT_NAME:-alice}
	local a2=${HB_SWIFT_ACCOUNT2:-hbother} n2=${HB_SWIFT_NAME2:-bob}
	{
		_hbsw_common_conf "$dir" proxy "$user"
		cat <<-CONF

		[pipeline:main]
		pipeline = catch_errors gatekeeper healthcheck proxy-logging cache listing_formats s3api tempauth copy slo dlo proxy-logging proxy-server

		[app:proxy-server]
		use = egg:swift#proxy
		account_autocreate = true

		[filter:cache]
		use = egg:swift#memcache
		memcache_servers = 127.0.0.1:$(_hbsw_port "$dir" sink)
		# No memcached: tempauth then checks every request's signature
		# afresh, and each lookup's failure is not worth a log line.
		set log_level = CRITICAL

		[filter:s3api]
		use = egg:swift#s3api
		location = ${HB_SWIFT_REGION:-us-east-1}

		[filter:tempauth]
		use = egg:swift#tempauth
		user_${a1}_${n1} = $(cat "$dir/.hbswift/secret1") .admin
		user_${a2}_${n2} = $(cat "$dir/.hbswift/secret2") .admin
		CONF
		# The other filters, as Swift ships them.
		for f in catch_errors gatekeeper healthcheck proxy-logging \
			listing_formats copy slo dlo; do
			printf '\n[filter:%s]\nuse = egg:swift#%s\n' "$f" "${f//-/_}"
		done
	} >"$dir/etc/proxy-server.conf"
}

# _hbsw_write_env DIR: the outputs, as `export` lines, in DIR/.hbswift/env
# (mode 0600: it holds the secrets).
_hbsw_write_env() {
	local dir=$1 port endpoint
	local a1=${HB_SWIFT_ACCOUNT:-hbtest} n1=${HB_SWIFT_NAME:-alice}
	local a2=${HB_SWIFT_ACCOUNT2:-hbother} n2=${HB_SWIFT_NAME2:-bob}
	port=$(_hbsw_port "$dir" proxy)
	endpoint=http://127.0.0.1:$port
	(
		umask 077
		cat >"$dir/.hbswift/env" <<-ENV
		unset AWS_SESSION_TOKEN AWS_SECURITY_TOKEN AWS_PROFILE AWS_CA_BUNDLE
		export AWS_ENDPOINT_URL=$endpoint
		export AWS_ACCESS_KEY_ID=$a1:$n1
		export AWS_SECRET_ACCESS_KEY=$(cat "$dir/.hbswift/secret1")
		export AWS_DEFAULT_REGION=${HB_SWIFT_REGION:-us-east-1}
		export HB_SWIFT_ACCESS_KEY_ID2=$a2:$n2
		export HB_SWIFT_SECRET_ACCESS_KEY2=$(cat "$dir/.hbswift/secret2")
		export HB_SWIFT_DIR=$dir
		export HB_SWIFT_PORT=$port
		export RCLONE_CONFIG_HBSWIFT_TYPE=s3
		export RCLONE_CONFIG_HBSWIFT_PROVIDER=Other
		export RCLONE_CONFIG_HBSWIFT_ENV_AUTH=true
		export RCLONE_CONFIG_HBSWIFT_ENDPOINT=$endpoint
		export RCLONE_CONFIG_HBSWIFT_REGION=${HB_SWIFT_REGION:-us-east-1}
		ENV
		printf 'machine 127.0.0.1 login %s password %s\n' "$a1:$n1" \
			"$(cat "$dir/.hbswift/secret1")" >"$dir/.hbswift/netrc"
	)
}

# _hbsw_start DIR NAME USER: start NAME's server, record its PID.  As root
# setpriv becomes USER and execs the server (no fork, so $! is the
# server): with workers = 0 Swift never drops privileges itself.  `-v`
# logs to the console too, which goes to DIR/log/NAME.log.
_hbsw_start() {
	local dir=$1 name=$2 user=$3 cmd
	cmd=("swift-$name-server" "$dir/etc/$name-server.conf" -v)
	if [ "$(id -u)" = 0 ]; then
		cmd=(setpriv "--reuid=$user" "--regid=$(id -g "$user")"
			--init-groups "${cmd[@]}")
	fi
	"${cmd[@]}" </dev/null >>"$dir/log/$name.log" 2>&1 &
	printf '%s\n' "$!" >"$dir/.hbswift/pids/$name"
}

# _hbsw_health DIR NAME: NAME's healthcheck answers OK.
_hbsw_health() {
	[ "$(curl -s --max-time 2 \
		"http://127.0.0.1:$(_hbsw_port "$1" "$2")/healthcheck" \
		2>/dev/null)" = OK ]
}

# _hbsw_s3_ok DIR: an S3 ListBuckets signed with the first user's secret
# answers 200 (tempauth and s3api loaded, the account reachable).  The
# access key holds ':', which `curl -u` would split, so it goes in through
# a netrc file; the x-amz-content-sha256 header is the empty body's.
_hbsw_s3_ok() {
	local dir=$1
	[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 \
		--aws-sigv4 "aws:amz:${HB_SWIFT_REGION:-us-east-1}:s3" \
		-H 'x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' \
		--netrc-file "$dir/.hbswift/netrc" \
		"http://127.0.0.1:$(_hbsw_port "$dir" proxy)/" 2>/dev/null)" = 200 ]
}

_hbsw_fail() { # DIR MESSAGE
	_hbsw_log "$2"
	swift_logs "$1"
	swift_down "$1"
	return 1
}

# ---------------------------------------------------------------- API

# The logs are in DIR/log/, as a private Slurm's are: slurm_logs prints
# their tails.
swift_logs() { slurm_logs "${1:?swift_logs DIR}"; }

# swift_test_start NAME: what an S3 test does first.  A private
# directory $tmp (0711: the swift user must reach the device under it),
# Swift started in $tmp/swift ($sw) and stopped, with $tmp removed, on
# exit (a test with more to stop defines swift_test_before_cleanup), and
# aws() pointed at it.  Exits 1, with Swift's logs, when it does not
# come up.
swift_test_start() {
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/hb-${1:?swift_test_start NAME}.XXXXXX")
	chmod 0711 "$tmp"
	sw=$tmp/swift
	trap _hbsw_test_cleanup EXIT
	swift_up "$sw" || {
		echo "FAIL: swift_up"
		swift_logs "$sw"
		exit 1
	}
	aws() { /usr/bin/aws --endpoint-url "$AWS_ENDPOINT_URL" "$@"; }
}
_hbsw_test_cleanup() {
	if declare -F swift_test_before_cleanup >/dev/null; then
		swift_test_before_cleanup
	fi
	swift_down "$sw"
	rm -rf -- "$tmp"
}

swift_env() {
	local dir=${1:?swift_env DIR}
	cat "$dir/.hbswift/env"
}

swift_is_up() {
	local dir=${1:?swift_is_up DIR} name
	[ -r "$dir/.hbswift/ports" ] || return 1
	for name in $_HBSW_SERVERS; do
		_hbsw_health "$dir" "$name" || return 1
	done
}

swift_rss_kib() {
	local dir=${1:?swift_rss_kib DIR} name pid kib total=0
	for name in $_HBSW_SERVERS; do
		pid=$(_hbsw_pid_of "$dir" "$name")
		_hbsw_pid_is "$pid" "$dir" "$name" || continue
		kib=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null) ||
			kib=0
		total=$((total + ${kib:-0}))
	done
	echo "$total"
}

swift_up() {
	local dir=${1:?swift_up DIR} user base name i t
	for i in swift-ring-builder swift-proxy-server swift-account-server \
		swift-container-server swift-object-server curl; do
		command -v "$i" >/dev/null 2>&1 ||
			{ _hbsw_log "$i not found (run scripts/setup.sh)"; return 1; }
	done
	mkdir -p "$dir" || return 1
	dir=$(cd "$dir" && pwd -P)
	if [ -d "$dir/.hbswift/pids" ] && swift_is_up "$dir"; then
		_hbsw_log "$dir already runs a Swift; swift_down it first"
		return 1
	fi
	user=$(id -un)
	[ "$(id -u)" = 0 ] && user=${HB_SWIFT_USER:-swift}
	getent passwd "$user" >/dev/null ||
		{ _hbsw_log "no user $user (Debian's swift package makes it)"; return 1; }
	mkdir -p "$dir/etc" "$dir/srv/d1" "$dir/log" "$dir/.hbswift/pids" || return 1
	chmod 0700 "$dir/.hbswift"
	_hbsw_check_xattr "$dir" || return 1
	base=$(_hbs_pick_ports "$dir" 5) ||
		{ _hbsw_log "no 5 free consecutive ports"; return 1; }
	printf '%s\n' "$base" >"$dir/.hbswift/ports"
	(
		umask 077
		_hbsw_secret >"$dir/.hbswift/secret1"
		_hbsw_secret >"$dir/.hbswift/secret2"
	)
	if ! { _hbsw_write_conf "$dir" "$user" && _hbsw_rings "$dir" &&
		_hbsw_write_env "$dir"; }; then
		_hbsw_release_ports "$dir"
		return 1
	fi
	if [ "$(id -u)" = 0 ]; then
		chown -R "$user:" "$dir/srv" "$dir/log"
		chgrp -R "$(id -gn "$user")" "$dir/etc"
		chmod -R g+rX,o-rwx "$dir/etc"
		_hbsw_check_reach "$dir" "$user" ||
			{ _hbsw_release_ports "$dir"; return 1; }
	fi
	for name in account container object proxy; do
		_hbsw_start "$dir" "$name" "$user"
	done
	t=${HB_SWIFT_READY_TIMEOUT:-30}
	for i in $(seq 1 $((t * 10))); do
		for name in $_HBSW_SERVERS; do
			_hbsw_pid_is "$(_hbsw_pid_of "$dir" "$name")" "$dir" "$name" ||
				{ _hbsw_fail "$dir" "$name-server exited"; return 1; }
		done
		swift_is_up "$dir" && _hbsw_s3_ok "$dir" && break
		sleep 0.1
	done
	[ "$i" -lt $((t * 10)) ] || _hbsw_s3_ok "$dir" ||
		{ _hbsw_fail "$dir" "Swift did not answer within ${t}s"; return 1; }
	# shellcheck disable=SC1091
	. "$dir/.hbswift/env"
}

swift_down() {
	local dir=${1:?swift_down DIR} name
	[ -d "$dir/.hbswift/pids" ] || return 0
	dir=$(cd "$dir" && pwd -P)
	for name in proxy object container account; do
		_hbsw_stop "$dir" "$name" 10
	done
	rm -f "$dir/.hbswift/pids/"* 2>/dev/null || true
	_hbsw_release_ports "$dir"
	return 0
}
