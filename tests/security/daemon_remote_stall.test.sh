#!/bin/bash
# daemon_remote_stall.test.sh - one user's remote_start must not hold the
# daemon's loop.  The user's own burst job carries a ~1 MB script whose
# #SBATCH --export list has 100,000 names; remote_start has the backend
# parse it and build the manifest (the kubernetes backend, towards an API
# server that is not there: the build comes first, and is the work).
# Before the fix that ran on the event loop (with a quadratic --export
# check: seconds), and every other caller waited.  The damage checked:
# root's pings while it runs are answered, each in under 500 ms, and the
# plugin's decide too.
# usage: daemon_remote_stall.test.sh BUILD_DIR SRC_DIR
build=$1
src=$2
# shellcheck source=tests/security/lib.sh
. "$src/tests/security/lib.sh"
sec_init

cat >"$tmp/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: none
  cluster: {server: "http://127.0.0.1:9"}
contexts:
- name: none
  context: {cluster: none, user: none, namespace: default}
current-context: none
users:
- name: none
  user: {token: x}
EOF
cat >"$tmp/cfg.yaml" <<EOF
daemon:
  log_level: info
remote:
  backend: kubernetes
  kubeconfig: $tmp/kubeconfig
placement:
  default_target: slurm
EOF
start_daemon "$tmp/cfg.yaml" || exit 1

# root decides the user's job for Kubernetes, with the big script: a
# request of ~1 MB, too long for a command line, so python sends it
/usr/bin/python3 - "$sock" "$user" "$uid" >"$tmp/decide.out" <<'EOF'
import json, socket, struct, sys
path, user, uid = sys.argv[1], sys.argv[2], int(sys.argv[3])
names = ",".join("V%06d=1" % i for i in range(100000))
script = "#!/bin/sh\n#SBATCH --export=%s\ntrue\n" % names
req = json.dumps({"op": "decide", "user": user, "uid": uid,
                  "target": "kubernetes", "script": script, "cwd": "/",
                  "env": ["A=1"]}).encode()
s = socket.socket(socket.AF_UNIX)
s.connect(path)
s.sendall(b"HB\x01\x01" + struct.pack(">I", len(req)) + req)
buf = b""
while len(buf) < 8 or len(buf) < 8 + struct.unpack(">I", buf[4:8])[0]:
    c = s.recv(65536)
    if not c:
        break
    buf += c
print(buf[8:].decode())
EOF
id=$(grep -oE '"id":"hb-[0-9]+"' "$tmp/decide.out" | cut -d'"' -f4)
[ -n "$id" ] && ok "root decided $id for the user ($(wc -c <"$tmp/decide.out") bytes back)" ||
	bad "decide: $(head -c 300 "$tmp/decide.out")"

# the user starts it, and root keeps asking meanwhile
as_user "$hbcall" --timeout 120000 "$sock" \
	'{"op":"remote_start","id":"'"$id"'"}' >"$tmp/start.out" 2>&1 &
spid=$!
pids="$pids $spid"
sleep 0.3
worst=0
for _ in $(seq 20); do
	ms=$(ping_ms)
	[ "$ms" -gt "$worst" ] && worst=$ms
	sleep 0.1
done
[ "$worst" -lt 500 ] && ok "root ping while remote_start runs: worst $worst ms" ||
	bad "root ping stalled while remote_start ran: worst $worst ms"
t0=$(date +%s%N)
call '{"op":"decide","user":"root","uid":0,"partition":"x"}'
t1=$((($(date +%s%N) - t0) / 1000000))
[ "$rc" = 0 ] && [ "$t1" -lt 500 ] && ok "root decide in $t1 ms" ||
	bad "root decide: rc $rc in $t1 ms: $(cat "$tmp/reply")"
kill -0 "$dpid" 2>/dev/null && ok "daemon alive" || bad "daemon died"
kill "$spid" 2>/dev/null
sec_end
