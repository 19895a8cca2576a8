#!/bin/bash
# daemon_cancel_loop.test.sh - one user's cancels must not hold the
# daemon's loop.  With the local backend (remote.backend: local) a
# cancel writes and syncs a mark in the job's state directory and forks
# a child that drops to the user to send the signal: a few milliseconds
# each.  Root gives the user $HB_CANCEL_JOBS (40) Kubernetes-target jobs
# (decide), the user starts them (remote_start, as their shadows would),
# then cancels them all at once, pipelined on kept connections (a tight
# loop: no wait between requests), and again for $HB_CANCEL_ROUNDS
# rounds.  Before the fix the backend's cancel ran on the event loop: the
# requests one read brought in ran back to back, and root waited behind
# all of them.  The damage checked:
#   - root's pings on a kept connection (hbping --reuse, one every 5 ms
#     while the cancels run) are all answered, their max under
#     $HB_CANCEL_MAX_MS (100 ms);
#   - every job's reply says cancelled, its state is cancelled, and its
#     processes (the user's sleeps) are gone;
#   - the daemon is alive.
# usage: daemon_cancel_loop.test.sh BUILD_DIR SRC_DIR
build=$1
src=$2
# shellcheck source=tests/security/lib.sh
. "$src/tests/security/lib.sh"
sec_init
njobs=${HB_CANCEL_JOBS:-160}
nconn=${HB_CANCEL_CONNS:-2}
rounds=${HB_CANCEL_ROUNDS:-2}
max_ms=${HB_CANCEL_MAX_MS:-100}
tools=${HB_TOOLS:-$build/tests} # the pre-fix build has no hbping
ping=$tools/hbping

local_config
start_daemon "$tmp/cfg.yaml" || exit 1

# the user's burst jobs, started: each runs a sleep of its own length
: >"$tmp/ids"
for i in $(seq "$njobs"); do
	call '{"op":"decide","user":"'"$user"'","uid":'"$uid"',
	  "partition":"cpu","target":"kubernetes",
	  "script":"#!/bin/sh\nsleep '$((5000 + i))'\n","cwd":"/",
	  "env":["PATH=/usr/bin:/bin"]}'
	id=$(grep -oE '"id":"hb-[0-9]+"' "$tmp/reply" | cut -d'"' -f4)
	if [ -z "$id" ]; then
		bad "decide $i: $(cat "$tmp/reply")"
		sec_end
	fi
	call_as '{"op":"remote_start","id":"'"$id"'"}'
	if [ "$rc" != 0 ]; then
		bad "remote_start $id: $(cat "$tmp/reply")"
		sec_end
	fi
	echo "$id" >>"$tmp/ids"
done
running() { pgrep -U "$uid" -x sleep 2>/dev/null | wc -l; }
for _ in $(seq 50); do
	[ "$(running)" -ge "$njobs" ] && break
	sleep 0.1
done
n=$(running)
[ "$n" -ge "$njobs" ] && ok "$njobs jobs started, $n of the user's processes run" ||
	bad "only $n of $njobs jobs' processes run"

# The user's tight loop: $nconn connections, each sends the cancels of its
# share of the jobs in one write and then reads the replies; rounds
# after the first find the jobs cancelled already.
cat >"$tmp/cancel.py" <<'EOF'
import json, socket, struct, sys, threading
path, rounds, nconn = sys.argv[1], int(sys.argv[2]), int(sys.argv[4])
ids = open(sys.argv[3]).read().split()
out = [None] * len(ids)

def frame(req):
    b = json.dumps(req).encode()
    return b"HB\x01\x01" + struct.pack(">I", len(b)) + b

def reply(s, buf):
    while len(buf) < 8 or len(buf) < 8 + struct.unpack(">I", buf[4:8])[0]:
        c = s.recv(65536)
        if not c:
            raise EOFError("daemon closed")
        buf += c
    n = 8 + struct.unpack(">I", buf[4:8])[0]
    return json.loads(buf[8:n]), buf[n:]

def run(k):
    mine = list(range(k, len(ids), nconn))
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    buf = b""
    for _ in range(rounds):
        s.sendall(b"".join(frame({"op": "cancel", "id": ids[i]})
                           for i in mine))
        for i in mine:
            r, buf = reply(s, buf)
            if out[i] is None or not out[i].get("ok"):
                out[i] = r
    s.close()

ts = [threading.Thread(target=run, args=(k,)) for k in range(nconn)]
for t in ts:
    t.start()
for t in ts:
    t.join()
for i, r in zip(ids, out):
    print(i, json.dumps(r))
EOF
"$ping" --reuse "$sock" 20 0 >/dev/null # warm up
"$ping" --reuse --timeout 5000 "$sock" 400 5 >"$tmp/ping.out" 2>&1 &
ppid=$!
pids="$pids $ppid"
sleep 0.2
t0=$(date +%s%N)
as_user /usr/bin/python3 "$tmp/cancel.py" "$sock" "$rounds" "$tmp/ids" \
	"$nconn" >"$tmp/cancel.out" 2>&1
crc=$?
t1=$((($(date +%s%N) - t0) / 1000000))
wait "$ppid"
prc=$?
[ "$crc" = 0 ] && ok "the user's $((njobs * rounds)) cancels answered in $t1 ms" ||
	bad "the user's cancels: rc $crc: $(tail -n 3 "$tmp/cancel.out")"

# root's pings: all answered, the slowest under max_ms
line=$(tail -n 1 "$tmp/ping.out")
worst=$(sed -n 's/.* max=\([0-9]*\)\..*/\1/p' <<<"$line")
if [ "$prc" = 0 ] && [ -n "$worst" ] && [ "$worst" -lt "$max_ms" ]; then
	ok "root pings while the user cancels: $line"
else
	bad "root pings held while the user cancelled (max under $max_ms ms wanted): $(cat "$tmp/ping.out")"
fi

# every job cancelled: the reply, the state, the processes
nok=$(grep -c '"state": "cancelled"' "$tmp/cancel.out")
[ "$nok" = "$njobs" ] && ok "all $njobs cancels say cancelled" ||
	bad "$nok of $njobs cancels say cancelled: $(grep -v '"state": "cancelled"' "$tmp/cancel.out" | head -n 3)"
nst=0
while read -r id; do
	call '{"op":"status","id":"'"$id"'"}'
	has '"state":"cancelled"' && nst=$((nst + 1))
done <"$tmp/ids"
[ "$nst" = "$njobs" ] && ok "all $njobs jobs' states are cancelled" ||
	bad "only $nst of $njobs jobs' states are cancelled"
for _ in $(seq 100); do
	[ "$(running)" = 0 ] && break
	sleep 0.1
done
n=$(running)
[ "$n" = 0 ] && ok "the cancelled jobs' processes are gone" ||
	bad "$n of the cancelled jobs' processes still run"
kill -0 "$dpid" 2>/dev/null && ok "daemon alive" || bad "daemon died"
sec_end
