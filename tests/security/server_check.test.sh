#!/usr/bin/env bash
# server_check.test.sh - the clients check who serves the daemon's socket.
#
#   bash server_check.test.sh BUILD_DIR SOURCE_DIR
#
# The attack: an unprivileged user serves a fake daemon on a socket path
# that root's client is pointed at, and answers whatever root asks: fake
# job listings for the CLI, a fake remote job (its output and exit code)
# for the shadow, fake decisions for the job_submit plugin (which uses the
# same client, gateway/proto/proto.c; plugins.test.sh checks it in slurmctld).
#
#   A  a socket in a directory the user owns;
#   B  a socket the user binds in a root-owned 1777 directory;
#   C  a socket in a root-owned 0755 directory whose listener runs as the
#      user (the peer check alone: SO_PEERCRED);
# each against `hpcbridge jobs --json`, `hpcbridge status` and
# `hpcbridge shadow` run as root.  The damage checked: nothing the fake
# sent is printed or written to the shadow's output, the shadow does not
# take the fake exit code, and the fake never receives root's request.
# Controls: the real daemon run by root is accepted (by root and by the
# user), and the fake is accepted once daemon.user names its user, so the
# test can tell a refusal from a broken fake.
set -uo pipefail

build=$(cd "${1:?BUILD_DIR}" && pwd)
src=$(cd "${2:?SOURCE_DIR}" && pwd)
. "$src/tests/security/lib.sh"
hb=$build/bin/hpcbridge
[ -x "$hb" ] || {
	echo "FAIL: $hb not built" >&2
	exit 1
}

sec_init
mark=FAKE-$$-MARK

# The impostor: answers every op as the daemon would, with the marker in
# every reply; logs each connection and each request it gets.  With
# --listen-as UID GID it binds as the caller (root), then drops to the
# user before listen(), which is when the peer credentials are taken.
cat >"$tmp/fake.py" <<'EOF'
import base64, json, os, socket, struct, sys
args = sys.argv[1:]
drop = None
if args[0] == "--listen-as":
    drop = (int(args[1]), int(args[2]))
    args = args[3:]
path, log, ready, mark = args
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
os.chmod(path, 0o666)
if drop:
    os.setgroups([])
    os.setgid(drop[1])
    os.setuid(drop[0])
s.listen(16)
open(ready, "w").write("ready\n")

def frame(obj):
    b = json.dumps(obj).encode()
    return b"HB\x01\x02" + struct.pack(">I", len(b)) + b

def recv_n(c, n):
    b = b""
    while len(b) < n:
        x = c.recv(n - len(b))
        if not x:
            return None
        b += x
    return b

while True:
    c, _ = s.accept()
    c.settimeout(3)
    with open(log, "a") as f:
        f.write("connection\n")
    try:
        h = recv_n(c, 8)
        body = recv_n(c, struct.unpack(">I", h[4:])[0]) if h else None
    except OSError:
        body = None
    if body is None:
        c.close()
        continue
    with open(log, "a") as f:
        f.write("request " + body.decode("utf-8", "replace") + "\n")
    op = json.loads(body).get("op")
    if op == "remote_poll":
        data = base64.b64encode(("output from " + mark + "\n").encode())
        r = {"ok": True, "phase": "succeeded", "done": True,
             "exit_code": 42, "next": 100, "data": data.decode()}
    else:
        r = {"ok": True, "id": "hb-" + mark, "target": "kubernetes",
             "state": "running", "user": "root",
             "jobs": [{"id": "hb-" + mark, "state": "running",
                       "user": "root", "target": "kubernetes"}]}
    try:
        c.sendall(frame(r))
    except OSError:
        pass
    c.close()
EOF
chmod 644 "$tmp/fake.py"

# A config for root's clients: daemon.user left at its default (root).
printf 'daemon:\n  socket: %s\n  state: %s\nremote:\n  local_dir: %s\n' \
	"$sock" "$db" "$tmp/remote" >"$tmp/hb.yaml"
# The same, naming the attacker as the daemon user (the control).
printf 'daemon:\n  user: %s\n' "$user" >"$tmp/hb-user.yaml"
# Where the impostor, run as the user, writes its log and ready mark.
mkdir "$tmp/uw"
chown "$uid:$gid" "$tmp/uw"
export HPCBRIDGE_CONFIG=$tmp/hb.yaml
unset HPCBRIDGE_SOCKET SLURM_JOB_ID SLURM_ARRAY_TASK_ID

fpid=
# start_fake DIR [root-listen]: the impostor on DIR/api.sock
start_fake() {
	local dir=$1 how=${2:-}
	fsock=$dir/api.sock
	flog=$tmp/uw/fake.log
	rm -f "$tmp/uw/ready" "$flog"
	as_user touch "$flog"
	if [ "$how" = root-listen ]; then
		/usr/bin/python3 "$tmp/fake.py" --listen-as "$uid" "$gid" "$fsock" \
			"$flog" "$tmp/uw/ready" "$mark" 2>"$tmp/fake.err" &
	else
		# setpriv execs python: $! is the impostor's own PID
		setpriv --reuid="$uid" --regid="$gid" --clear-groups -- \
			/usr/bin/python3 "$tmp/fake.py" "$fsock" "$flog" \
			"$tmp/uw/ready" "$mark" 2>"$tmp/fake.err" &
	fi
	fpid=$!
	pids="$pids $fpid"
	for _ in $(seq 100); do
		[ -s "$tmp/uw/ready" ] && break
		sleep 0.05
	done
	[ -S "$fsock" ] && [ -s "$tmp/uw/ready" ] || {
		echo "fake daemon did not start: $(cat "$tmp/fake.err")" >&2
		exit 1
	}
}
stop_fake() {
	[ -n "$fpid" ] && kill -KILL "$fpid" 2>/dev/null
	wait "$fpid" 2>/dev/null
	fpid=
	rm -f "$fsock"
}

# refused NAME: root's CLI and shadow against the impostor at $fsock
refused() {
	local name=$1 rc out
	# jobs --json: the old build prints the fake's reply whole
	rc=0
	timeout 20 "$hb" jobs --socket "$fsock" --json >"$tmp/out" \
		2>"$tmp/err" || rc=$?
	if [ "$rc" != 0 ] && ! grep -q "$mark" "$tmp/out" "$tmp/err"; then
		ok "$name: root's 'hpcbridge jobs' refused: $(head -c 300 "$tmp/err")"
	else
		bad "$name: root's 'hpcbridge jobs' took the impostor's reply (exit $rc): $(head -c 300 "$tmp/out")"
	fi
	if grep -qE "uid $uid\b|uid $uid," "$tmp/err" ||
		{ [ "$name" = B ] && grep -q "writable by others" "$tmp/err"; }; then
		ok "$name: the refusal names what was found"
	else
		bad "$name: the refusal does not name uid $uid: $(cat "$tmp/err")"
	fi
	rc=0
	timeout 20 "$hb" status --socket "$fsock" --json hb-000001 >"$tmp/out" \
		2>"$tmp/err" || rc=$?
	if [ "$rc" != 0 ] && ! grep -q "$mark" "$tmp/out"; then
		ok "$name: root's 'hpcbridge status' refused"
	else
		bad "$name: root's 'hpcbridge status' printed the impostor's reply (exit $rc): $(head -c 300 "$tmp/out")"
	fi
	# the shadow: the fake says the remote job wrote MARK and exited 42
	rc=0
	timeout 30 "$hb" shadow --socket "$fsock" --poll 10 hb-000001 \
		>"$tmp/shadow.out" 2>"$tmp/shadow.err" || rc=$?
	if [ "$rc" != 42 ] && [ "$rc" != 124 ] &&
		! grep -q "$mark" "$tmp/shadow.out"; then
		ok "$name: root's shadow refused (exit $rc, $(wc -c <"$tmp/shadow.out") bytes of output): $(head -c 200 "$tmp/shadow.err")"
	else
		bad "$name: root's shadow wrote the impostor's output or took its exit code (exit $rc): $(head -c 200 "$tmp/shadow.out")"
	fi
	# nothing of root's requests reached the impostor
	if grep -q '^request ' "$flog"; then
		bad "$name: the impostor got root's requests: $(grep -c '^request ' "$flog") ($(grep '^request ' "$flog" | head -n 1 | head -c 200))"
	else
		ok "$name: the impostor got no request ($(grep -c '^connection' "$flog") connections)"
	fi
}

# ---------------------------------------------------------------- A
mkdir "$tmp/evil"
chown "$uid:$gid" "$tmp/evil"
chmod 755 "$tmp/evil"
start_fake "$tmp/evil"
refused A

# the control: with daemon.user naming this user, the same fake is
# believed (so a refusal above is the check's doing, not a broken fake)
rc=0
HPCBRIDGE_CONFIG=$tmp/hb-user.yaml timeout 20 "$hb" jobs --socket "$fsock" \
	--json >"$tmp/out" 2>"$tmp/err" || rc=$?
if [ "$rc" = 0 ] && grep -q "$mark" "$tmp/out"; then
	ok "control: with daemon.user: $user the same socket is believed"
else
	bad "control: daemon.user: $user, yet refused (exit $rc): $(cat "$tmp/err")"
fi
stop_fake

# ---------------------------------------------------------------- B
mkdir "$tmp/pub"
chmod 1777 "$tmp/pub"
start_fake "$tmp/pub"
refused B
stop_fake

# ---------------------------------------------------------------- C
mkdir "$tmp/rootdir"
chmod 755 "$tmp/rootdir"
start_fake "$tmp/rootdir" root-listen
refused C
stop_fake

# ---------------------------------------------------------------- real
mkdir -p "$tmp/remote"
start_daemon "$tmp/hb.yaml" || exit 1
rc=0
"$hb" jobs --socket "$sock" --json >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" = 0 ] && ok "the real daemon (root) is believed by root's CLI" ||
	bad "root's CLI refused the real daemon (exit $rc): $(cat "$tmp/err")"
rc=0
as_user "$hb" jobs --socket "$sock" >"$tmp/out" \
	2>"$tmp/err" || rc=$?
[ "$rc" = 0 ] && ok "the real daemon (root) is believed by the user's CLI" ||
	bad "the user's CLI refused the real daemon (exit $rc): $(cat "$tmp/err")"
ms=$(ping_ms)
[ "$ms" -lt 1000 ] && ok "root's ping answered in ${ms} ms" ||
	bad "root's ping: ${ms} ms"

sec_end
