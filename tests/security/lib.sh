# shellcheck shell=bash
# tests/security/lib.sh - what the attack tests share.  Each attack test
# runs as root under CTest, starts a real hpcbridged, and acts against it
# as an unprivileged user (setpriv), the way a hostile local user would.
# It checks the damage (a root canary unchanged, a root process alive,
# root's ping answered in time), not only the error.
#
# Source it after setting build and src; then:
#
#   sec_init            a private $tmp (0755, so users reach the socket),
#                       the attacker $user ($uid, $gid), cleanup at exit
#                       of every PID in $pids and of the users made
#   sec_user NAME       make one more unprivileged user; prints its uid
#                       (it and root_proc record what they make in files
#                       under $tmp, so they also work inside $(...))
#   as_user CMD...      run CMD as the attacker (uid, gid, no groups)
#   local_config [LEVEL [YAML]]
#                       write $tmp/cfg.yaml: the local remote backend in
#                       $tmp/remote, jobs on Slurm unless a decide says
#                       otherwise, log level LEVEL (info), then YAML (more
#                       top-level sections, e.g. "slurm:\n  user: root")
#   start_daemon CFG [ARGS...]
#                       hpcbridged in the foreground on $sock / $db,
#                       logging to $log; waits for its ping; its PID is
#                       $dpid (and in $pids)
#   call JSON           one request as root: reply in $tmp/reply, $rc
#   call_as JSON        one request as the attacker
#   has REGEX           the last reply matches
#   canary PATH         make a root-owned 0600 file with random bytes and
#                       remember its digest, owner and mode
#   canary_intact PATH  whether PATH still has them
#   root_proc           start a root process (sleep) in its own process
#                       group; prints its PID (in $pids)
#   ping_ms             one root ping; prints its time in ms, or 99999
#   ok MSG / bad MSG    report a check (bad counts in $fails)
#   sec_end             exit 1 with the daemon's log if a check failed
#   closed_cluster      $tmp/kubeconfig naming a closed port (nothing can
#                       be created there) and $tmp/hb.yaml: the kubernetes
#                       backend on it, jobs to kubernetes, requests up to
#                       1 MB
#   decide FILE [JOBSPEC_FILE]
#                       root, as the plugin, stores a job of the attacker's
#                       with that script (and that jobspec, JSON); prints
#                       its id, empty when refused; the reply in $tmp/reply
set -uo pipefail

hbd=$build/bin/hpcbridged
hbcall=$build/tests/hbcall
fails=0
pids=
users=
dpid=

ok() { printf 'ok: %s\n' "$*"; }
bad() {
	printf 'FAIL: %s\n' "$*"
	fails=$((fails + 1))
}

_sec_cleanup() {
	local made_pids made_users
	made_pids=$(cat "$tmp/.pids" 2>/dev/null || true)
	made_users=$(cat "$tmp/.users" 2>/dev/null || true)
	for p in $pids $made_pids; do
		kill -KILL "$p" 2>/dev/null || true
	done
	# reap our own children quietly (no "Killed" notices)
	wait 2>/dev/null || true
	for u in $users $made_users; do
		# the attacker's own leftover processes, by uid; userdel
		# wants none left
		pkill -KILL -U "$u" 2>/dev/null || true
		for _ in $(seq 50); do
			pgrep -U "$u" >/dev/null 2>&1 || break
			sleep 0.1
		done
		userdel "$u" 2>/dev/null || true
	done
	[ -n "${tmp:-}" ] && rm -rf "$tmp"
}

sec_user() {
	local name=$1
	useradd --system --no-create-home --shell /usr/sbin/nologin \
		"$name" >/dev/null 2>&1 || return 1
	users="$users $name"
	echo "$name" >>"$tmp/.users"
	id -u "$name"
}

sec_init() {
	tmp=$(mktemp -d)
	chmod 755 "$tmp"
	trap _sec_cleanup EXIT
	# no Slurm for the daemon, even on a host that has one
	export SLURM_CONF=$tmp/no-slurm.conf
	unset KUBECONFIG
	sock=$tmp/run/api.sock
	db=$tmp/state.db
	log=$tmp/daemon.log
	user=hbsec$$
	uid=$(sec_user "$user") || {
		echo "cannot make user $user" >&2
		exit 1
	}
	gid=$(id -g "$user")
}

as_user() {
	setpriv --reuid="$uid" --regid="$gid" --clear-groups -- "$@"
}

local_config() {
	cat >"$tmp/cfg.yaml" <<-EOF
	daemon:
	  log_level: ${1:-info}
	remote:
	  backend: local
	  local_dir: $tmp/remote
	placement:
	  default_target: slurm
	EOF
	[ -z "${2:-}" ] || printf '%b\n' "$2" >>"$tmp/cfg.yaml"
}

start_daemon() {
	local cfg=$1
	shift
	"$hbd" --config "$cfg" --foreground --socket "$sock" --state "$db" \
		"$@" 2>>"$log" &
	dpid=$!
	pids="$pids $dpid"
	for _ in $(seq 200); do
		[ -S "$sock" ] && "$hbcall" "$sock" '{"op":"ping"}' \
			>/dev/null 2>&1 && return 0
		kill -0 "$dpid" 2>/dev/null || break
		sleep 0.05
	done
	echo "daemon did not start:" >&2
	cat "$log" >&2
	return 1
}

call() {
	rc=0
	"$hbcall" "$sock" "$1" >"$tmp/reply" 2>"$tmp/call.err" || rc=$?
}
call_as() {
	rc=0
	as_user "$hbcall" "$sock" "$1" >"$tmp/reply" 2>"$tmp/call.err" ||
		rc=$?
}
has() { grep -qE -- "$1" "$tmp/reply"; }

canary() {
	head -c 64 /dev/urandom | base64 >"$1"
	chown root:root "$1"
	chmod 600 "$1"
	sha256sum "$1" | cut -d' ' -f1 >"$1.want"
	stat -c '%u:%g:%a' "$1" >>"$1.want"
	chmod 600 "$1.want"
}
canary_intact() {
	[ -f "$1" ] && [ ! -L "$1" ] &&
		[ "$(sha256sum "$1" | cut -d' ' -f1; stat -c '%u:%g:%a' "$1")" = \
			"$(cat "$1.want")" ]
}

root_proc() {
	setsid sleep 600 >/dev/null 2>&1 </dev/null &
	local p=$!
	pids="$pids $p"
	echo "$p" >>"$tmp/.pids"
	echo "$p"
}

ping_ms() {
	local t0 t1
	t0=$(date +%s%N)
	if "$hbcall" --timeout 5000 "$sock" '{"op":"ping"}' >/dev/null 2>&1; then
		t1=$(date +%s%N)
		echo $(((t1 - t0) / 1000000))
	else
		echo 99999
	fi
}

sec_end() {
	if [ "$fails" != 0 ]; then
		echo "--- daemon log (last 40 lines)"
		tail -n 40 "$log" 2>/dev/null || true
		exit 1
	fi
	exit 0
}

closed_cluster() {
	cat >"$tmp/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: none
  cluster:
    server: https://127.0.0.1:1
    insecure-skip-tls-verify: true
users:
- name: u
  user:
    token: not-a-token
contexts:
- name: c
  context: {cluster: none, user: u, namespace: default}
current-context: c
EOF
	chmod 644 "$tmp/kubeconfig"
	cat >"$tmp/hb.yaml" <<EOF
daemon:
  max_request: 1048576
remote:
  backend: kubernetes
  kubeconfig: $tmp/kubeconfig
  local_dir: $tmp/remote
placement:
  default_target: kubernetes
EOF
}

# The request is sent by a few lines of Python, as hbcall takes it in
# argv, too small for a 1 MB script.
decide() {
	[ -f "$tmp/decide.py" ] || cat >"$tmp/decide.py" <<'EOF'
import json, socket, struct, sys
sock, user, uid, path = sys.argv[1:5]
req = {"op": "decide", "user": user, "uid": int(uid),
       "target": "kubernetes", "cwd": "/tmp",
       "script": open(path).read()}
if len(sys.argv) > 5:
    req["jobspec"] = json.loads(open(sys.argv[5]).read())
req = json.dumps(req).encode()
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sock)
s.settimeout(60)
s.sendall(b"HB\x01\x01" + struct.pack(">I", len(req)) + req)
buf = b""
while len(buf) < 8 or len(buf) < 8 + struct.unpack(">I", buf[4:8])[0]:
    chunk = s.recv(65536)
    if not chunk:
        break
    buf += chunk
sys.stdout.buffer.write(buf[8:])
EOF
	python3 "$tmp/decide.py" "$sock" "$user" "$uid" "$@" >"$tmp/reply" \
		2>"$tmp/call.err"
	grep -oE '"id":"hb-[0-9]+"' "$tmp/reply" | cut -d'"' -f4
}

# sec_slurm_daemon: a real Slurm in $tmp/slurm, stopped on exit with the
# rest of sec_init's cleanup, and hpcbridged with the local backend and
# root as Slurm's user ($tmp/cfg.yaml); the test ends when either does
# not start.  The caller sources tests/integration/lib/slurm.sh, and may
# export HB_SLURM_EXTRA_CONF first.
sec_slurm_daemon() {
	trap _sec_slurm_cleanup EXIT
	export HB_SLURM_FIX_HOSTS=${HB_SLURM_FIX_HOSTS:-1}
	slurm_up "$tmp/slurm" >"$tmp/slurm-up.log" 2>&1 || {
		cat "$tmp/slurm-up.log"
		bad "Slurm did not come up"
		sec_end
	}
	export LSAN_OPTIONS="suppressions=$src/tests/integration/lsan.supp:print_suppressions=0"
	mkdir -p "$tmp/remote"
	local_config info 'slurm:\n  user: root'
	start_daemon "$tmp/cfg.yaml" || {
		bad "the daemon did not start"
		sec_end
	}
}
_sec_slurm_cleanup() {
	slurm_down "$tmp/slurm" >/dev/null 2>&1 || true
	_sec_cleanup
}
