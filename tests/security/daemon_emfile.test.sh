#!/bin/bash
# daemon_emfile.test.sh - out of file descriptors.  A user opens
# connections until the daemon's RLIMIT_NOFILE is spent (lowered here
# with prlimit once it runs, as a small limit or a leak would leave it).
# Before the fix accept4() failed with EMFILE on every loop turn: the
# loop spun at 100% CPU writing a warning each time, and root, whose
# connection sat in the backlog, was never answered.  Now a reserve
# descriptor makes room for root's connection, the listening socket
# rests between tries, and the warning is rate-limited.  The damage
# checked: over 3 s of it the daemon uses under 0.6 s of CPU and logs
# under 20 lines, and root's pings are answered.
# usage: daemon_emfile.test.sh BUILD_DIR SRC_DIR
build=$1
src=$2
# shellcheck source=tests/security/lib.sh
. "$src/tests/security/lib.sh"
sec_init

local_config
start_daemon "$tmp/cfg.yaml" || exit 1
nfd=$(ls "/proc/$dpid/fd" | wc -l)
lim=$((nfd + 12))
prlimit --pid "$dpid" --nofile="$lim:$lim" ||
	{ bad "prlimit"; sec_end; }
ok "daemon holds $nfd descriptors; limit now $lim"

# the user holds connections, and keeps opening more
cat >"$tmp/hold.py" <<'EOF'
import socket, sys, time
path, n, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
held = []
end = time.time() + secs
while time.time() < end:
    if len(held) < n:
        s = socket.socket(socket.AF_UNIX)
        s.setblocking(False)
        try:
            s.connect(path)
            held.append(s)
        except (BlockingIOError, OSError):
            s.close()
    time.sleep(0.002)
EOF
as_user /usr/bin/python3 "$tmp/hold.py" "$sock" 200 12 &
hp=$!
pids="$pids $hp"
sleep 3
cpu() { awk '{ print $14 + $15 }' "/proc/$dpid/stat"; }
lines0=$(wc -l <"$log")
c0=$(cpu)
sleep 3
c1=$(cpu)
lines=$(($(wc -l <"$log") - lines0))
hz=$(getconf CLK_TCK)
used=$(((c1 - c0) * 1000 / hz))
grep -q 'Too many open files' "$log" && ok "the daemon ran out of descriptors" ||
	bad "no EMFILE seen: the attack did not bite"
[ "$used" -lt 600 ] && ok "CPU over 3 s: $used ms" ||
	bad "the daemon spun: $used ms of CPU in 3 s"
[ "$lines" -lt 20 ] && ok "log: $lines lines in 3 s" ||
	bad "log grew by $lines lines in 3 s"
for i in 1 2 3; do
	ms=$(ping_ms)
	[ "$ms" -lt 1000 ] && ok "root ping $i: $ms ms" ||
		bad "root ping $i: $ms ms"
done
kill "$hp" 2>/dev/null
kill -0 "$dpid" 2>/dev/null && ok "daemon alive" || bad "daemon died"
sec_end
