#!/usr/bin/env bash
# systemd.test.sh - hpcbridged as a systemd service, without systemd:
# (1) `systemd-analyze verify` passes on config/systemd/hpcbridged.service
#     (ExecStart pointed at the build's daemon), with nothing to say; its
#     `systemd-analyze security` exposure stays at 5.5 or below; the unit
#     agrees with the daemon's options and default paths;
# (2) the real daemon talks sd_notify to a datagram socket this test
#     listens on: READY=1 once its socket exists, WATCHDOG=1 at half of
#     WATCHDOG_USEC from its loop (none while the loop is stopped, none
#     when WATCHDOG_PID is another process), RELOADING=1 then READY=1 on
#     SIGHUP (a good and a refused configuration), STOPPING=1 on SIGTERM
#     and exit 0;
# (3) with stderr the stream $JOURNAL_STREAM names, each log line starts
#     with its level's syslog priority; without it, with the JSON.
# (4) under the unit's NoNewPrivileges and CapabilityBoundingSet (put on
#     with setpriv), a local-backend job runs as its user and is
#     cancelled; without CAP_CHOWN its start fails.
#
# usage: systemd.test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "${1:?BUILD_DIR}" && pwd)
src=$(cd "${2:?SOURCE_DIR}" && pwd)
hbd=$build/bin/hpcbridged
py=/usr/bin/python3
unit=$src/config/systemd/hpcbridged.service
tmp=$(mktemp -d /tmp/hb-systemd.XXXXXX)
# No Slurm for this daemon, even on a host that has one.
export SLURM_CONF=$tmp/no-slurm.conf
sock=$tmp/run/api.sock
db=$tmp/state.db
nsock=$tmp/notify.sock
msgs=$tmp/notify.log
pid=
lpid=
user=
made_user=0
fails=0
passes=0

cleanup() {
	for p in $pid $lpid ${lockpid:-} ${cpid:-}; do
		kill -CONT "$p" 2>/dev/null || true
		kill -KILL "$p" 2>/dev/null || true
	done
	for f in "$tmp"/remote/*/pid; do
		[ -f "$f" ] || continue
		read -r p _ <"$f" || continue
		case $p in '' | *[!0-9]*) continue ;; esac
		kill -KILL -- "-$p" 2>/dev/null || true
	done
	[ "$made_user" = 1 ] && userdel "$user" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

ok() { passes=$((passes + 1)); }
bad() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}

# stop_ok WHAT: SIGTERM to the daemon, which exits 0
stop_ok() {
	local rc=0
	kill -TERM "$pid"
	wait "$pid" || rc=$?
	pid=
	[ "$rc" = 0 ] && ok || bad "exit $rc after SIGTERM ($1)"
}

# --- 1. the unit ---------------------------------------------------------
mkdir -p "$tmp/unit"
sed "s#^ExecStart=/usr/sbin/hpcbridged #ExecStart=$hbd #" "$unit" \
	>"$tmp/unit/hpcbridged.service"
grep -q "^ExecStart=$hbd --config" "$tmp/unit/hpcbridged.service" && ok ||
	bad "ExecStart not pointed at the build's daemon"
# The man page is another part's; verify it where it is built, else not.
man=(--man=no)
if [ -f "$src/docs/man/hpcbridged.8" ]; then
	mkdir -p "$tmp/man/man8"
	cp "$src/docs/man/hpcbridged.8" "$tmp/man/man8/"
	man=()
fi
rc=0
MANPATH=$tmp/man systemd-analyze verify "${man[@]}" \
	"$tmp/unit/hpcbridged.service" >"$tmp/verify.out" 2>&1 || rc=$?
[ "$rc" = 0 ] && ! [ -s "$tmp/verify.out" ] && ok || {
	bad "systemd-analyze verify: rc $rc"
	cat "$tmp/verify.out" >&2
}
# The hardening's rating does not get worse unnoticed (5.5 today).
rc=0
systemd-analyze security --offline=yes --man=no --threshold=55 \
	"$tmp/unit/hpcbridged.service" >"$tmp/security.out" 2>&1 || rc=$?
[ "$rc" = 0 ] && ok || {
	bad "systemd-analyze security: exposure above 5.5"
	tail -3 "$tmp/security.out" >&2
}
# ... and the same check does catch a mistake
sed 's/^WatchdogSec=/WatchdogSecs=/' "$tmp/unit/hpcbridged.service" \
	>"$tmp/unit/broken.service"
systemd-analyze verify --man=no "$tmp/unit/broken.service" \
	>"$tmp/verify2.out" 2>&1 || true
grep -q "WatchdogSecs" "$tmp/verify2.out" && ok ||
	bad "verify did not flag an unknown key: $(cat "$tmp/verify2.out")"
# what the unit says agrees with the daemon
for want in '^Type=notify$' '^NotifyAccess=main$' \
	'^ExecReload=/bin/kill -HUP \$MAINPID$' '^WatchdogSec=[0-9]+' \
	'^RuntimeDirectory=hpcbridge$' '^StateDirectory=hpcbridge$' \
	'^Restart=on-failure$' '^NoNewPrivileges=yes$' \
	'^ProtectSystem=full$' '^CapabilityBoundingSet=.*CAP_SETUID' \
	'^CapabilityBoundingSet=.*CAP_SETGID'; do
	grep -qE -- "$want" "$unit" && ok || bad "the unit lacks $want"
done
"$hbd" --help >"$tmp/help"
for o in --config --foreground; do
	grep -q -- "$o" "$tmp/help" && ok || bad "hpcbridged has no $o"
done
# RuntimeDirectory and StateDirectory hold the default socket and store
grep -qE '^  socket: /run/hpcbridge/' "$src/config/hpcbridge.yaml" && ok ||
	bad "daemon.socket is not under /run/hpcbridge"
grep -qE '^  state: /var/lib/hpcbridge/' "$src/config/hpcbridge.yaml" &&
	ok || bad "daemon.state is not under /var/lib/hpcbridge"

# --- 2. sd_notify ---------------------------------------------------------
cat >"$tmp/cfg.yaml" <<EOF
daemon:
  log_level: debug
remote:
  local_dir: $tmp/remote
placement:
  default_target: slurm
EOF

# The listener: each datagram as one line "MONOTONIC_MS MSG" (newlines in
# MSG as '|'); READY=1 also notes whether the API socket existed then.
cat >"$tmp/listen.py" <<'EOF'
import os, socket, sys, time
path, out, api = sys.argv[1:4]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
with open(out, "a", buffering=1) as f:
    while True:
        m = s.recv(4096).decode(errors="replace")
        t = int(time.monotonic() * 1000)
        if "READY=1" in m:
            m += "|SOCKET_EXISTED=%d" % os.path.exists(api)
        f.write("%d %s\n" % (t, m.replace("\n", "|")))
EOF
: >"$msgs"
"$py" "$tmp/listen.py" "$nsock" "$msgs" "$sock" &
lpid=$!
for _ in $(seq 100); do
	[ -S "$nsock" ] && break
	sleep 0.05
done

# count REGEX: notify lines so far matching
count() { grep -cE -- "$1" "$msgs" || true; }
# wait_msg REGEX N: until N lines match (5 s at most)
wait_msg() {
	for _ in $(seq 100); do
		[ "$(count "$1")" -ge "$2" ] && return 0
		sleep 0.05
	done
	return 1
}

# start_notify WATCHDOG_PID_MODE: the daemon, with $NOTIFY_SOCKET and a
# 300 ms watchdog.  "self": WATCHDOG_PID is the daemon's pid (the shell
# sets it to its own and execs); "other": pid 1's.
start_notify() {
	NOTIFY_SOCKET=$nsock WATCHDOG_USEC=300000 MODE=$1 sh -c '
		if [ "$MODE" = self ]; then WATCHDOG_PID=$$; else WATCHDOG_PID=1; fi
		export WATCHDOG_PID
		exec "$@"' hbd "$hbd" --config "$tmp/cfg.yaml" --foreground \
		--socket "$sock" --state "$db" 2>>"$tmp/daemon.log" &
	pid=$!
}

# a pid that is not the daemon's: READY=1, no watchdog
start_notify other
wait_msg '^[0-9]+ READY=1' 1 && ok || bad "no READY=1 (other pid)"
sleep 1
[ "$(count 'WATCHDOG=1')" = 0 ] && ok ||
	bad "WATCHDOG=1 sent for WATCHDOG_PID of another process"
stop_ok "other pid"
: >"$msgs"

start_notify self
wait_msg '^[0-9]+ READY=1' 1 && ok || bad "no READY=1"
grep -qE '^[0-9]+ READY=1\|SOCKET_EXISTED=1$' "$msgs" && ok ||
	bad "READY=1 before the API socket existed: $(cat "$msgs")"
grep -qE '^[0-9]+ STATUS=serving: jobs on Slurm 0, on Kubernetes 0; ' \
	"$msgs" && ok || bad "no STATUS= with the job counts at start"
# 2 s at a 150 ms period: about 13 pings
sleep 2
n=$(count 'WATCHDOG=1')
[ "$n" -ge 8 ] && [ "$n" -le 30 ] && ok || bad "$n WATCHDOG=1 in 2 s"
# the period: the median gap between pings, 150 ms give or take
gap=$(grep -E 'WATCHDOG=1' "$msgs" | awk '{print $1}' |
	awk 'NR > 1 {print $1 - p} {p = $1}' | sort -n |
	awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')
[ "${gap:-0}" -ge 100 ] && [ "${gap:-0}" -le 250 ] && ok ||
	bad "median gap between pings ${gap:-none} ms (want about 150)"

# a stopped loop does not feed the watchdog; it does again once resumed
kill -STOP "$pid"
sleep 0.2
n1=$(count 'WATCHDOG=1')
sleep 1.2
n2=$(count 'WATCHDOG=1')
[ "$n1" = "$n2" ] && ok || bad "pings while stopped: $n1 -> $n2"
kill -CONT "$pid"
sleep 0.6
n3=$(count 'WATCHDOG=1')
[ "$n3" -gt "$n2" ] && ok || bad "no pings after SIGCONT: $n2 -> $n3"

# A loop that is stuck while the process lives: another process holds
# the store's write lock, and a decision's commit waits on the loop (up
# to the store's 5 s busy time-out); the worker threads run on, and no
# ping comes meanwhile.  Then the loop goes on, and so do the pings.
cat >"$tmp/lock.py" <<'EOF2'
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=5)
db.execute("BEGIN IMMEDIATE")
open(sys.argv[2], "w").close()
time.sleep(float(sys.argv[3]))
db.execute("ROLLBACK")
EOF2
"$py" "$tmp/lock.py" "$db" "$tmp/locked" 4 &
lockpid=$!
for _ in $(seq 100); do
	[ -e "$tmp/locked" ] && break
	sleep 0.02
done
"$build/tests/hbcall" "$sock" \
	'{"op":"decide","user":"alice","uid":1000,"partition":"cpu"}' \
	>"$tmp/decide.out" 2>&1 &
cpid=$!
# once the decision reaches the loop, no ping for 0.6 s (4 periods); a
# slow start of the call only delays that (the lock is held for 4 s)
stuck=0
for _ in $(seq 5); do
	n1=$(count 'WATCHDOG=1')
	sleep 0.6
	n2=$(count 'WATCHDOG=1')
	[ "$n1" = "$n2" ] && stuck=1 && break
done
[ "$stuck" = 1 ] && ok ||
	bad "pings went on while the loop waited on the store: $n1 -> $n2"
wait "$lockpid" || bad "the lock holder failed"
rc=0
wait "$cpid" || rc=$?
[ "$rc" = 0 ] && grep -q '"target"' "$tmp/decide.out" && ok ||
	bad "the decision after the lock: rc $rc $(cat "$tmp/decide.out")"
sleep 0.5
n3=$(count 'WATCHDOG=1')
[ "$n3" -gt "$n2" ] && ok || bad "no pings once the loop went on"

# SIGHUP with a good configuration: RELOADING=1, then READY=1
before=$(wc -l <"$msgs")
kill -HUP "$pid"
wait_msg '^[0-9]+ READY=1' 2 && ok || bad "no READY=1 after SIGHUP"
tail -n +"$((before + 1))" "$msgs" | grep -vE 'WATCHDOG=1' |
	awk '{print $2}' | cut -d'|' -f1 >"$tmp/seq"
[ "$(grep -nE '^RELOADING=1$' "$tmp/seq" | head -1 | cut -d: -f1)" = 1 ] &&
	grep -qE '^READY=1$' "$tmp/seq" && ok ||
	bad "SIGHUP: $(tr '\n' ' ' <"$tmp/seq")"
grep -qE 'RELOADING=1\|MONOTONIC_USEC=[0-9]+' "$msgs" && ok ||
	bad "RELOADING=1 without MONOTONIC_USEC"
grep -qE 'STATUS=configuration reloaded' "$msgs" && ok ||
	bad "no STATUS= for the reload"
# the one job decided above is counted on the side it was decided for
side=$(grep -o '"target": *"[a-z]*"' "$tmp/decide.out" | grep -o '[a-z]*"$' |
	tr -d '"')
case $side in
slurm) want='jobs on Slurm 1, on Kubernetes 0' ;;
kubernetes) want='jobs on Slurm 0, on Kubernetes 1' ;;
*) want="a side, not '$side'" ;;
esac
grep -qE "STATUS=configuration reloaded: $want; " "$msgs" && ok ||
	bad "STATUS= after the decision: want '$want': $(grep STATUS= "$msgs" | tail -n 1)"
# ... and a refused one: READY=1 all the same, STATUS says so
cp "$tmp/cfg.yaml" "$tmp/cfg.good"
printf 'daemon:\n  bogus_key: 1\n' >"$tmp/cfg.yaml"
kill -HUP "$pid"
wait_msg '^[0-9]+ READY=1' 3 && ok || bad "no READY=1 after a refused reload"
[ "$(count 'RELOADING=1')" = 2 ] && ok || bad "one RELOADING=1 per SIGHUP"
grep -qE 'STATUS=reload refused' "$msgs" && ok ||
	bad "no STATUS= for the refused reload"
cp "$tmp/cfg.good" "$tmp/cfg.yaml"

# SIGTERM: STOPPING=1, exit 0
stop_ok "notify"
grep -qE '^[0-9]+ STOPPING=1' "$msgs" && ok || bad "no STOPPING=1"
! [ -e "$sock" ] && ok || bad "the API socket is left behind"
kill -TERM "$lpid" 2>/dev/null || true
{ wait "$lpid"; } 2>/dev/null || true
lpid=
# nobody listens any more: the failure is logged once, not per ping
: >"$tmp/daemon.log"
start_notify self
sleep 1
n=$(grep -c '"msg":"sd_notify: ' "$tmp/daemon.log" || true)
[ "$n" = 1 ] && ok || bad "$n sd_notify failures logged (want 1)"
stop_ok "nobody listening"

# --- 3. journald's priority prefix ---------------------------------------
# run_log OUT [JOURNAL_STREAM]: start, reload with a bad configuration
# (an error), stop; stderr into OUT.
run_log() {
	local out=$1 js=${2:-}
	printf 'daemon:\n  log_level: debug\n' >"$tmp/log.yaml"
	: >"$out"
	if [ -n "$js" ]; then
		JOURNAL_STREAM=$js "$hbd" --config "$tmp/log.yaml" --foreground \
			--socket "$sock" --state "$db" 2>>"$out" &
	else
		env -u JOURNAL_STREAM "$hbd" --config "$tmp/log.yaml" \
			--foreground --socket "$sock" --state "$db" 2>>"$out" &
	fi
	pid=$!
	for _ in $(seq 100); do
		grep -q 'hpcbridged serving' "$out" && break
		sleep 0.05
	done
	# a call: its connection's close is a debug line
	"$build/tests/hbcall" "$sock" '{"op":"ping"}' >/dev/null 2>&1 || true
	printf 'daemon:\n  bogus_key: 1\n' >"$tmp/log.yaml"
	kill -HUP "$pid"
	for _ in $(seq 100); do
		grep -q 'reload refused' "$out" && break
		sleep 0.05
	done
	kill -TERM "$pid"
	wait "$pid" || true
	pid=
}

jlog=$tmp/journal.log
: >"$jlog"
run_log "$jlog" "$(stat -c '%d:%i' "$jlog")"
# every line: "<N>{...}" with N the priority of its "level"
bad_lines=$(awk '
	/^<7>\{.*"level":"debug"/ || /^<6>\{.*"level":"info"/ ||
	/^<4>\{.*"level":"warn"/ || /^<3>\{.*"level":"error"/ { next }
	{ print }' "$jlog")
[ -z "$bad_lines" ] && [ -s "$jlog" ] && ok ||
	bad "journal lines without their priority: $bad_lines"
for p in '<6>{' '<3>{' '<4>{' '<7>{'; do
	grep -qF "$p" "$jlog" && ok || bad "no $p line in the journal log"
done
grep -qE '^<6>\{.*hpcbridged serving' "$jlog" && ok || bad "no <6> serving"
grep -qE '^<3>\{.*reload refused' "$jlog" && ok || bad "no <3> refusal"

plain=$tmp/plain.log
run_log "$plain"
[ -s "$plain" ] && ! grep -qvE '^\{' "$plain" && ok ||
	bad "without JOURNAL_STREAM, lines not plain JSON: $(grep -vE '^\{' "$plain" | head -3)"
# a JOURNAL_STREAM naming another file is not this stream
other=$tmp/other.log
: >"$other"
run_log "$plain" "$(stat -c '%d:%i' "$other")"
[ -s "$plain" ] && ! grep -qvE '^\{' "$plain" && ok ||
	bad "JOURNAL_STREAM of another file gave a prefix"

# --- 4. the unit's privileges --------------------------------------------
# NoNewPrivileges and CapabilityBoundingSet, as the unit says them, put on
# the real daemon with setpriv: a local-backend job still runs as its
# user (the drop with setgroups/setresgid/setresuid, its work directory
# chowned and chmodded, its result read as root) and is cancelled.
# Without CAP_CHOWN the same start fails: the job's start does use them.
user=hbsd$$
useradd --system --no-create-home --shell /usr/sbin/nologin "$user" \
	>/dev/null 2>&1 && made_user=1 || bad "cannot make user $user"
uid=$(id -u "$user")
gid=$(id -g "$user")
chmod 755 "$tmp"
caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$unit" | tr 'A-Z' 'a-z' |
	sed 's/cap_/+/g; s/ /,/g')
[ -n "$caps" ] && ok || bad "no CapabilityBoundingSet in the unit"
cat >"$tmp/priv.yaml" <<EOF
daemon:
  log_level: debug
remote:
  backend: local
  local_dir: $tmp/remote
placement:
  default_target: slurm
EOF
# priv_daemon CAPS: the daemon under no_new_privs and bounding set CAPS
priv_daemon() {
	setpriv --no-new-privs --bounding-set "-all,$1" -- \
		"$hbd" --config "$tmp/priv.yaml" --foreground --socket "$sock" \
		--state "$db" 2>>"$tmp/priv.log" &
	pid=$!
	for _ in $(seq 100); do
		"$build/tests/hbcall" "$sock" '{"op":"ping"}' >/dev/null 2>&1 &&
			return 0
		sleep 0.05
	done
	return 1
}
pcall() { "$build/tests/hbcall" "$sock" "$1" >"$tmp/reply" 2>&1; }
pcall_as() {
	setpriv --reuid="$uid" --regid="$gid" --clear-groups -- \
		"$build/tests/hbcall" "$sock" "$1" >"$tmp/reply" 2>&1
}
# job SCRIPT: root decides a Kubernetes-target job for the user; its id
job() {
	pcall '{"op":"decide","user":"'"$user"'","uid":'"$uid"',
	  "partition":"cpu","target":"kubernetes","cwd":"/",
	  "env":["PATH=/usr/bin:/bin"],"script":"'"$1"'"}' || return 1
	grep -oE '"id":"hb-[0-9]+"' "$tmp/reply" | cut -d'"' -f4
}
[ "$(awk '/^NoNewPrivs/ {print $2}' /proc/self/status)" = 0 ] && ok ||
	bad "this shell already runs with no_new_privs: the check is moot"
priv_daemon "$caps" && ok ||
	bad "the daemon did not start: $(tail -3 "$tmp/priv.log")"
[ "$(awk '/^NoNewPrivs/ {print $2}' "/proc/$pid/status")" = 1 ] && ok ||
	bad "the daemon is not under no_new_privs"
# the job's user: the start, then polls until it is over
id=$(job '#!/bin/sh\necho ran-as-$(id -u)\n')
if [ -n "$id" ] && pcall_as '{"op":"remote_start","id":"'"$id"'"}'; then
	ok
	for _ in $(seq 100); do
		pcall_as '{"op":"remote_poll","id":"'"$id"'","offset":0}' &&
			grep -q '"done":true' "$tmp/reply" && break
		sleep 0.1
	done
	# the output comes base64-encoded in "data"
	grep -q '"done":true' "$tmp/reply" &&
		grep -oE '"data":"[^"]*"' "$tmp/reply" | cut -d'"' -f4 |
		base64 -d | grep -qx "ran-as-$uid" &&
		grep -q '"exit_code":0' "$tmp/reply" && ok ||
		bad "the job under the unit's privileges: $(head -c 400 "$tmp/reply")"
else
	bad "remote_start under the unit's privileges: $(head -c 300 "$tmp/reply")"
fi
# a long job, cancelled: its session ends
id=$(job '#!/bin/sh\nsleep 300\n')
pcall_as '{"op":"remote_start","id":"'"$id"'"}' ||
	bad "remote_start (long): $(head -c 300 "$tmp/reply")"
for _ in $(seq 100); do
	[ -s "$tmp/remote/$id/pid" ] && break
	sleep 0.05
done
jpid=
[ -s "$tmp/remote/$id/pid" ] && read -r jpid _ <"$tmp/remote/$id/pid"
pcall_as '{"op":"cancel","id":"'"$id"'"}' && ok ||
	bad "cancel: $(head -c 300 "$tmp/reply")"
for _ in $(seq 100); do
	[ -n "$jpid" ] && ! kill -0 "$jpid" 2>/dev/null && break
	sleep 0.05
done
[ -n "$jpid" ] && ! kill -0 "$jpid" 2>/dev/null && ok ||
	bad "the cancelled job ${jpid:-?} still runs"
stop_ok "the unit's privileges"
# ... and without CAP_CHOWN the start fails: the test does use the caps
priv_daemon "$(echo "$caps" | sed 's/+chown,\{0,1\}//; s/,$//')" ||
	bad "the daemon without CAP_CHOWN did not start"
id=$(job '#!/bin/sh\ntrue\n')
if pcall_as '{"op":"remote_start","id":"'"$id"'"}'; then
	bad "a job started without CAP_CHOWN: $(head -c 300 "$tmp/reply")"
else
	grep -q 'chown' "$tmp/reply" && ok ||
		bad "without CAP_CHOWN: $(head -c 300 "$tmp/reply")"
fi
kill -TERM "$pid"
wait "$pid" || true
pid=

echo "systemd: $passes passed, $fails failed"
[ "$fails" = 0 ]
