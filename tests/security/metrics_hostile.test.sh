#!/bin/bash
# metrics_hostile.test.sh - an unprivileged user attacks hpcbridged's
# metrics port (metrics.listen, served from the daemon's one loop):
#   - 200 connections held open (past the 16 the port takes);
#   - slow requests: a header line a byte per second (slowloris);
#   - a 200 KiB header, a 1 MiB URL, garbage and a bare CR-LF flood;
#   - POSTs with a 1 GiB Content-Length, 8 MiB of body sent;
#   - scrapes pipelined on every connection the port takes;
# and meanwhile root pings the API.  The damage checked:
#   - every root ping is answered within a second, during every attack;
#   - a slow request is cut off by the request deadline (10 s), not held
#     (MHD's own timeout is for silence: a byte a second resets it);
#   - huge headers and URLs are refused (4xx) or cut, never served;
#   - POST gets 405;
#   - after the attack the daemon's descriptors come back to what they
#     were, /metrics answers 200 with text Debian's parser reads, and the
#     daemon is alive;
#   - the user holds the metrics port before the daemon starts: the
#     daemon starts and decides all the same, and serves /metrics once
#     the port is free (it exited before).
# usage: metrics_hostile.test.sh BUILD_DIR SRC_DIR
build=$1
src=$2
# shellcheck source=tests/security/lib.sh
. "$src/tests/security/lib.sh"
sec_init
py=/usr/bin/python3
port=$($py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
url=http://127.0.0.1:$port
local_config info "metrics:\n  listen: 127.0.0.1:$port"
start_daemon "$tmp/cfg.yaml" || exit 1
nfds() { find "/proc/$dpid/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }
curl -sf "$url/metrics" >/dev/null || bad "/metrics does not answer before"
sleep 1.5 # the scrape's connection closed
fd0=$(nfds)

cat >"$tmp/attack.py" <<'EOF'
# attack.py PORT WHAT: one attack on the metrics port; prints a verdict
import socket, sys, time
port, what = int(sys.argv[1]), sys.argv[2]
A = ("127.0.0.1", port)

def conn(timeout=10):
    s = socket.create_connection(A, timeout=timeout)
    return s

def status(s):
    """the status code of what comes back, 0 for a close or reset"""
    try:
        data = b""
        while b"\r\n" not in data:
            b = s.recv(4096)
            if not b:
                break
            data += b
        parts = data.split(b" ", 2)
        return int(parts[1]) if data.startswith(b"HTTP/") else 0
    except (OSError, ValueError, IndexError):
        return 0

if what == "hold":
    # as many connections as the port lets in, held for 6 s
    held = []
    for _ in range(200):
        try:
            held.append(conn(2))
        except OSError:
            pass
    time.sleep(6)
    print("held", len(held))
elif what == "slow":
    # a header line a byte a second: cut off by the port's timeout
    s = conn(30)
    t0 = time.time()
    msg = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100
    cut = None
    for ch in msg:
        try:
            s.send(bytes([ch]))
            s.settimeout(1)
            if s.recv(1) == b"":
                cut = time.time() - t0
                break
        except socket.timeout:
            continue
        except OSError:
            cut = time.time() - t0
            break
    print("slow_cut", -1 if cut is None else round(cut, 1))
elif what == "bigheader":
    s = conn()
    try:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " +
                  b"h" * (200 * 1024) + b"\r\n\r\n")
    except OSError:
        pass
    print("bigheader", status(s))
elif what == "bigurl":
    s = conn()
    try:
        s.sendall(b"GET /metrics?" + b"u" * (1 << 20) +
                  b" HTTP/1.1\r\nHost: x\r\n\r\n")
    except OSError:
        pass
    print("bigurl", status(s))
elif what == "post":
    s = conn()
    try:
        s.sendall(b"POST /metrics HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Length: 1073741824\r\n\r\n")
        chunk = b"p" * 65536
        for _ in range(128):
            s.sendall(chunk)
    except OSError:
        pass
    print("post", status(s))
elif what == "garbage":
    codes = []
    for junk in (b"\x00\xff" * 5000, b"\r\n" * 20000,
                 b"GET /metrics\r\n\r\n", b"BREW /pot HTCPCP/1.0\r\n\r\n"):
        s = conn()
        try:
            s.sendall(junk)
        except OSError:
            pass
        codes.append(status(s))
    print("garbage", *codes)
elif what == "pipeline":
    # 16 connections, 50 scrapes pipelined on each, answers read
    socks, req = [], b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n" * 50
    for _ in range(16):
        try:
            s = conn(10)
            s.sendall(req)
            socks.append(s)
        except OSError:
            pass
    got = 0
    for s in socks:
        try:
            while True:
                b = s.recv(65536)
                if not b:
                    break
                got += b.count(b"HTTP/1.1 200")
        except OSError:
            pass
    print("pipeline", got)
elif what == "squat":
    # hold the port before the daemon starts, for 3 s
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(A)
    s.listen(1)
    print("squat", flush=True)
    time.sleep(3)
EOF

# attack WHAT: run it as the user in the background while root pings
# the API ten times; the slowest ping goes in $tmp/worst
attack() {
	as_user "$py" "$tmp/attack.py" "$port" "$1" >"$tmp/$1.out" 2>&1 &
	local apid=$! worst=0 ms
	pids="$pids $apid"
	sleep 0.3
	for _ in $(seq 10); do
		ms=$(ping_ms)
		[ "$ms" -gt "$worst" ] && worst=$ms
		sleep 0.2
	done
	wait "$apid"
	if [ "$worst" -lt 1000 ]; then
		ok "$1: root's ping answered, slowest $worst ms"
	else
		bad "$1: root's ping took $worst ms"
	fi
}

attack hold
read -r _ n <"$tmp/hold.out"
[ "${n:-0}" -ge 1 ] && ok "hold: $n connections made" ||
	bad "hold: $(cat "$tmp/hold.out")"

attack slow
read -r _ cut <"$tmp/slow.out"
if [ "${cut%.*}" -ge 3 ] 2>/dev/null && [ "${cut%.*}" -le 15 ]; then
	ok "slow: cut off after $cut s"
else
	bad "slow: not cut off in 3-15 s: $(cat "$tmp/slow.out")"
fi

attack bigheader
read -r _ code <"$tmp/bigheader.out"
case $code in
0 | 4??) ok "bigheader: refused ($code)" ;;
*) bad "bigheader: $(cat "$tmp/bigheader.out")" ;;
esac

attack bigurl
read -r _ code <"$tmp/bigurl.out"
case $code in
0 | 4??) ok "bigurl: refused ($code)" ;;
*) bad "bigurl: $(cat "$tmp/bigurl.out")" ;;
esac

attack post
read -r _ code <"$tmp/post.out"
case $code in
405 | 0 | 413) ok "post: refused ($code)" ;;
*) bad "post: $(cat "$tmp/post.out")" ;;
esac

attack garbage
if grep -qE '^garbage( (0|4[0-9][0-9]|505))+$' "$tmp/garbage.out"; then
	ok "garbage: refused ($(cut -d' ' -f2- "$tmp/garbage.out"))"
else
	bad "garbage: $(cat "$tmp/garbage.out")"
fi

attack pipeline
read -r _ n <"$tmp/pipeline.out"
[ "${n:-0}" -ge 1 ] && ok "pipeline: $n scrapes answered" ||
	bad "pipeline: $(cat "$tmp/pipeline.out")"

# --- the damage ---------------------------------------------------------
kill -0 "$dpid" 2>/dev/null && ok "the daemon is alive" ||
	bad "the daemon died"
fd1=$(nfds)
for _ in $(seq 100); do
	[ "$fd1" -le "$fd0" ] && break
	sleep 0.1
	fd1=$(nfds)
done
[ "$fd1" -le "$fd0" ] && ok "descriptors back to $fd1 (were $fd0)" ||
	bad "descriptors: $fd1, were $fd0: $(ls -l "/proc/$dpid/fd" | tail -n +2)"
if curl -sf -m 5 "$url/metrics" >"$tmp/after.txt" &&
	$py -c 'import sys
from prometheus_client.parser import text_string_to_metric_families as p
n = len(list(p(open(sys.argv[1]).read())))
assert n >= 10, n' "$tmp/after.txt"; then
	ok "/metrics answers and parses after the attacks"
else
	bad "/metrics after the attacks: $(head -c 300 "$tmp/after.txt")"
fi
ms=$(ping_ms)
[ "$ms" -lt 1000 ] && ok "root's ping: $ms ms" || bad "root's ping: $ms ms"

# --- the port held before the daemon starts ------------------------------
kill -TERM "$dpid"
wait "$dpid" 2>/dev/null
as_user "$py" "$tmp/attack.py" "$port" squat >"$tmp/squat.out" 2>&1 &
spid=$!
pids="$pids $spid"
for _ in $(seq 100); do
	[ -s "$tmp/squat.out" ] && break
	sleep 0.05
done
start_daemon "$tmp/cfg.yaml" && ok "the daemon starts with its port held" ||
	bad "the daemon did not start while a user held its metrics port"
call '{"op":"decide","user":"'"$user"'","uid":'"$uid"',"partition":"x"}'
[ "$rc" = 0 ] && has '"target"' && ok "it decides with its port held" ||
	bad "decide with the port held: $(cat "$tmp/reply")"
grep -q 'not serving /metrics yet' "$log" && ok "the held port is logged" ||
	bad "no warning about the held port"
wait "$spid"
served=0
for _ in $(seq 150); do
	curl -sf -m 2 "$url/metrics" 2>/dev/null | grep -q '^hpcbridge_decisions_total' &&
		served=1 && break
	sleep 0.1
done
[ "$served" = 1 ] && ok "/metrics served once the port is free" ||
	bad "/metrics not served after the user let the port go"
sec_end
