#!/usr/bin/env bash
# hpcbridged's API over its socket: ping; decide (persisted before the
# reply, with a proxy for a Kubernetes partition); garbage, oversized and
# half-sent frames that never take the daemon down; idle time-outs and the
# connection cap; SIGHUP with a bad and a good configuration; who may see
# and cancel what (an unprivileged user, an unknown uid, an admin); a
# stale socket replaced, a live one refused; detached start with a pid
# file; SIGTERM exits 0.
#
# usage: daemon_api.test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
hbd=$build/bin/hpcbridged
hbcall=$build/tests/hbcall
py=/usr/bin/python3
tmp=$(mktemp -d)
# the unprivileged user must reach the socket
chmod 755 "$tmp"
# No Slurm for this daemon (submit is refused), even on a host that has
# one, or inside an allocation.
export SLURM_CONF=$tmp/no-slurm.conf
sock=$tmp/run/api.sock
db=$tmp/state.db
log=$tmp/daemon.log
pid=
pid2=
user=hbtest$$
made_user=0
fails=0
passes=0

cleanup() {
	for p in $pid $pid2 ${holder:-}; do
		kill -KILL "$p" 2>/dev/null || true
	done
	if [ -s "$tmp/detached.pid" ]; then
		kill -KILL "$(cat "$tmp/detached.pid")" 2>/dev/null || true
	fi
	[ "$made_user" = 1 ] && userdel "$user" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

ok() { passes=$((passes + 1)); }
bad() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}

# call JSON: one request as root; the reply in $tmp/reply, status in $rc
call() {
	rc=0
	"$hbcall" "$sock" "$1" >"$tmp/reply" 2>"$tmp/call.err" || rc=$?
}
# call_as UID GID JSON
call_as() {
	rc=0
	setpriv --reuid="$1" --regid="$2" --clear-groups \
		"$hbcall" "$sock" "$3" >"$tmp/reply" 2>"$tmp/call.err" || rc=$?
}
# has REGEX: the last reply matches
has() { grep -qE -- "$1" "$tmp/reply"; }
sql() { sqlite3 "$db" "$1"; }

start_daemon() { # CONFIG [ARGS...]
	local cfg=$1
	shift
	"$hbd" --config "$cfg" --foreground --socket "$sock" --state "$db" \
		"$@" 2>>"$log" &
	pid=$!
	for _ in $(seq 100); do
		[ -S "$sock" ] && "$hbcall" "$sock" '{"op":"ping"}' \
			>/dev/null 2>&1 && return 0
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	echo "daemon did not start:" >&2
	cat "$log" >&2
	return 1
}

# wait_log REGEX: until the daemon's log matches (5 s at most)
wait_log() {
	for _ in $(seq 100); do
		grep -qE -- "$1" "$log" && return 0
		sleep 0.05
	done
	return 1
}

alive() { kill -0 "$pid" 2>/dev/null && "$hbcall" "$sock" '{"op":"ping"}' \
	>/dev/null 2>&1; }

# raw: a Python helper speaking bytes to the socket.  Subcommands print
# what came back as JSON lines, "EOF" when the daemon closed.
cat >"$tmp/raw.py" <<'EOF'
import json, socket, struct, sys, time

def frame(kind, payload):
    if isinstance(payload, str):
        payload = payload.encode()
    return b"HB\x01" + bytes([kind]) + struct.pack(">I", len(payload)) + payload

def send(s, data):
    """Send, tolerating a daemon that already replied and closed."""
    try:
        s.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        pass

def conn(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s

def replies(s, want, timeout=5.0):
    """Read up to want reply frames; print each payload, then EOF if the
    daemon closed."""
    s.settimeout(timeout)
    buf = b""
    got = 0
    while got < want:
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            chunk = b""
        except socket.timeout:
            print("TIMEOUT")
            return
        if not chunk:
            break
        buf += chunk
        while len(buf) >= 8:
            n = struct.unpack(">I", buf[4:8])[0]
            if len(buf) < 8 + n:
                break
            assert buf[:4] == b"HB\x01\x02", buf[:4]
            print(buf[8:8 + n].decode())
            buf = buf[8 + n:]
            got += 1
    # after the replies: is the connection closed?
    s.settimeout(0.5)
    try:
        more = s.recv(1)
        print("EOF" if not more else "OPEN")
    except ConnectionResetError:
        print("EOF")
    except socket.timeout:
        print("OPEN")

path, cmd = sys.argv[1], sys.argv[2]
if cmd == "send":            # send HEX bytes, read N replies
    s = conn(path)
    send(s, bytes.fromhex(sys.argv[3]))
    replies(s, int(sys.argv[4]))
elif cmd == "garbage":
    s = conn(path)
    send(s, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    replies(s, 1)
elif cmd == "toobig":        # announce a payload of N bytes
    s = conn(path)
    send(s, b"HB\x01\x01" + struct.pack(">I", int(sys.argv[3])) + b"{")
    replies(s, 1)
elif cmd == "notjson":
    s = conn(path)
    send(s, frame(1, "not json at all"))
    replies(s, 1)
elif cmd == "array":
    s = conn(path)
    send(s, frame(1, "[1,2]"))
    replies(s, 1)
elif cmd == "replykind":
    s = conn(path)
    send(s, frame(2, '{"ok":true}'))
    replies(s, 1)
elif cmd == "pipeline":      # three requests in one write
    s = conn(path)
    send(s, frame(1, '{"op":"ping"}') +
              frame(1, '{"op":"jobs","limit":1}') +
              frame(1, '{"op":"nope"}'))
    replies(s, 3)
elif cmd == "unnamed":       # a caller's first requests, in one write
    s = conn(path)
    send(s, frame(1, '{"op":"jobs"}') + frame(1, '{"op":"ping"}') +
              frame(1, '{"op":"jobs"}'))
    replies(s, 3)
elif cmd == "halfclose":     # a request, then shutdown(SHUT_WR)
    s = conn(path)
    send(s, frame(1, '{"op":"ping"}'))
    s.shutdown(socket.SHUT_WR)
    replies(s, 1)
elif cmd == "split":         # a request one byte at a time
    s = conn(path)
    for b in frame(1, '{"op":"ping"}'):
        send(s, bytes([b]))
        time.sleep(0.002)
    replies(s, 1)
elif cmd == "half":          # half a frame, then wait SECONDS for the close
    s = conn(path)
    send(s, frame(1, '{"op":"ping"}')[:11])
    s.settimeout(float(sys.argv[3]))
    t0 = time.time()
    try:
        more = s.recv(1)
        print("EOF %.1f" % (time.time() - t0) if not more else "DATA")
    except ConnectionResetError:
        print("EOF %.1f" % (time.time() - t0))
    except socket.timeout:
        print("OPEN")
elif cmd == "hold_for":      # hold N connections open for S seconds
    held = [conn(path) for _ in range(int(sys.argv[3]))]
    print("HELD", flush=True)
    time.sleep(float(sys.argv[4]))
    for h in held:
        h.close()
elif cmd == "hold":          # hold N connections open, then run a ping
    held = [conn(path) for _ in range(int(sys.argv[3]))]
    time.sleep(0.3)
    s = conn(path)
    send(s, frame(1, '{"op":"ping"}'))
    replies(s, 1)
    for h in held:
        h.close()
EOF
raw() { "$py" "$tmp/raw.py" "$sock" "$@" >"$tmp/reply" 2>"$tmp/raw.err" || {
	echo "raw.py $*:" >&2
	cat "$tmp/raw.err" >&2
}; }
# raw_as UID GID ARGS...: raw, as that user
raw_as() {
	local u=$1 g=$2
	shift 2
	setpriv --reuid="$u" --regid="$g" --clear-groups \
		"$py" "$tmp/raw.py" "$sock" "$@" >"$tmp/reply" 2>"$tmp/raw.err" || {
		echo "raw.py as $u $*:" >&2
		cat "$tmp/raw.err" >&2
	}
}

cat >"$tmp/a.yaml" <<EOF
daemon:
  max_request: 65536
  log_level: debug
slurm:
  burst_partition: cloud
  proxy_mem_mb: 80
  proxy_grace_min: 3
remote:
  local_dir: $tmp/remote
placement:
  default_target: slurm
  partitions:
    gpu: kubernetes
    cpu: slurm
EOF

# 1. start, ping --------------------------------------------------------
start_daemon "$tmp/a.yaml" --idle-timeout 1000 --max-connections 8
call '{"op":"ping"}'
[ "$rc" = 0 ] && has '"proto":1' && has '"version":"[0-9]+\.[0-9]+' && ok ||
	bad "ping: $(cat "$tmp/reply")"
[ "$(stat -c %a "$sock")" = 666 ] && ok || bad "socket mode"
[ "$(stat -c %a "$tmp/run")" = 755 ] && ok || bad "socket dir mode"

# 2. decide as root: persisted, with a proxy for a Kubernetes partition --
call '{"op":"decide","user":"alice","uid":1000,"account":"physics",
  "partition":"gpu","slurm_job_name":"train","time_limit_min":60,
  "script":"#!/bin/bash\n#SBATCH -N 2\nsrun ./a.out\n",
  "argv":["x"],"env":["A=1"],"options":{"deadline":"2h"}}'
[ "$rc" = 0 ] && ok || bad "decide gpu: $(cat "$tmp/reply")"
kid=$(grep -oE '"id":"hb-[0-9]+"' "$tmp/reply" | cut -d'"' -f4)
[ -n "$kid" ] && ok || bad "decide returns an id"
has '"target":"kubernetes"' && has '"reason":"rule placement.partitions\[gpu\] prefers Kubernetes"' &&
	ok || bad "decide gpu target"
has '"proxy":\{"partition":"cloud","time_limit_min":63,"cpus":1,"mem_mb":80,' &&
	ok || bad "proxy fields: $(cat "$tmp/reply")"
has "\"script\":\"#!/bin/sh\\\\nexec '/usr/bin/hpcbridge' shadow --socket '$sock' $kid\\\\n\"" && ok ||
	bad "proxy script: $(cat "$tmp/reply")"
has "\"admin_comment\":\"hpcbridge:$kid target=kubernetes\"" && ok ||
	bad "admin_comment"
# the job, its decision and the audit event are on disk already
[ "$(sql "SELECT origin,target,state,user,uid,account,partition,name FROM jobs WHERE id='$kid'")" = \
	"slurm|kubernetes|pending|alice|1000|physics|gpu|train" ] && ok ||
	bad "job row: $(sql "SELECT * FROM jobs WHERE id='$kid'")"
[ "$(sql "SELECT target,policy FROM decisions WHERE job_id='$kid'")" = \
	"kubernetes|placement.partitions" ] && ok || bad "decision row"
[ "$(sql "SELECT action,actor_uid,actor_user FROM events WHERE job_id='$kid'")" = \
	"decide|0|root" ] && ok || bad "event row"
sql "SELECT jobspec FROM jobs WHERE id='$kid'" | grep -q 'srun ./a.out' &&
	ok || bad "the script is kept"

call '{"op":"decide","user":"alice","uid":1000,"partition":"cpu"}'
[ "$rc" = 0 ] && has '"target":"slurm"' && ! has '"proxy"' && ok ||
	bad "decide cpu: $(cat "$tmp/reply")"
sid=$(grep -oE '"id":"hb-[0-9]+"' "$tmp/reply" | cut -d'"' -f4)
call '{"op":"decide","user":"alice","uid":1000,"partition":"gpu","target":"slurm"}'
has '"target":"slurm"' && has 'hpcbridge-target' && ok ||
	bad "the option wins: $(cat "$tmp/reply")"
call '{"op":"decide","user":"alice","uid":1000,"partition":"cpu","target":"kubernetes"}'
has '"target":"kubernetes"' && has '"proxy"' && ok || bad "option kubernetes"
call '{"op":"decide","user":"alice","uid":1000,"target":"k8s"}'
[ "$rc" = 1 ] && has '"code":"EINVAL"' && has "'k8s'" && ok ||
	bad "bad target: $(cat "$tmp/reply")"
call '{"op":"decide","user":"alice","uid":-1}'
[ "$rc" = 1 ] && has '"code":"EINVAL"' && has 'uid' && ok || bad "bad uid"
call '{"op":"decide","user":"alice","uid":1000,"argv":"x"}'
[ "$rc" = 1 ] && has 'argv: must be a list' && ok || bad "bad argv"
njobs=$(sql "SELECT count(*) FROM jobs")
[ "$njobs" = 4 ] && ok || bad "refused decisions store nothing ($njobs jobs)"
# the plugin sends the uid only (no NSS lookup in slurmctld): the daemon
# resolves the name
nobody_uid=$(id -u nobody)
call '{"op":"decide","uid":'"$nobody_uid"'}'
uid_id=$(sed -n 's/.*"id":"\(hb-[0-9a-z-]*\)".*/\1/p' "$tmp/reply")
[ "$rc" = 0 ] && [ "$(sql "SELECT user,uid FROM jobs WHERE id='$uid_id'")" = "nobody|$nobody_uid" ] &&
	ok || bad "decide without user: $(cat "$tmp/reply")"
# a large request under daemon.max_request (64 KiB) is fine, one over not
big=$(head -c 60000 /dev/zero | tr '\0' x)
call '{"op":"decide","user":"alice","uid":1000,"script":"'"$big"'"}'
[ "$rc" = 0 ] && ok || bad "a 60 KB decide: $(head -c 300 "$tmp/reply")"
big=$(head -c 70000 /dev/zero | tr '\0' x)
call '{"op":"decide","user":"alice","uid":1000,"script":"'"$big"'"}'
[ "$rc" = 1 ] && has '"code":"ETOOBIG"' && ok ||
	bad "a 70 KB decide: $(head -c 300 "$tmp/reply") $(cat "$tmp/call.err")"
# no user: the daemon looks the uid's name up (the plugin sends the uid
# only, so that slurmctld never waits on NSS); a uid without one is kept
# in decimal, as Slurm shows it
call '{"op":"decide","uid":59999}'
[ "$rc" = 0 ] && [ "$(sql "SELECT user FROM jobs WHERE uid=59999")" = 59999 ] &&
	ok || bad "a uid without a name: $(cat "$tmp/reply")"

call '{"op":"status","id":"'"$kid"'"}'
[ "$rc" = 0 ] && has '"decision":\{' && has '"events":\[\{' &&
	has '"action":"decide"' && ok || bad "status: $(cat "$tmp/reply")"
call '{"op":"jobs"}'
# root owns none of them (they are alice's), "all" lists them
[ "$rc" = 0 ] && has '"jobs":\[\]' && ok || bad "jobs (own)"
call '{"op":"jobs","all":true,"limit":2}'
[ "$rc" = 0 ] && [ "$(grep -o '"id":"hb-' "$tmp/reply" | wc -l)" = 2 ] &&
	ok || bad "jobs all limit 2: $(cat "$tmp/reply")"
call '{"op":"jobs","all":true,"limit":0}'
[ "$rc" = 1 ] && has '"code":"EINVAL"' && ok || bad "limit 0"
call '{"op":"submit","script":"#!/bin/sh\ntrue\n"}'
[ "$rc" = 1 ] && has '"code":"EUNSUP"' && ok || bad "submit without Slurm"
call '{"op":"frobnicate"}'
[ "$rc" = 1 ] && has '"code":"EUNSUP"' && has "unknown op" && ok ||
	bad "unknown op"

# 3. malformed, oversized, half-sent: an error or a close, never a crash --
raw garbage
grep -q '"code":"EPROTO"' "$tmp/reply" && grep -q '^EOF$' "$tmp/reply" &&
	ok || bad "garbage: $(cat "$tmp/reply")"
raw toobig 100000
grep -q '"code":"ETOOBIG"' "$tmp/reply" && grep -q 'limit of 65536' \
	"$tmp/reply" && grep -q '^EOF$' "$tmp/reply" && ok ||
	bad "over daemon.max_request: $(cat "$tmp/reply")"
raw toobig 4294967295
grep -q '"code":"ETOOBIG"' "$tmp/reply" && ok || bad "4 GiB frame"
raw notjson
grep -q '"code":"EPROTO"' "$tmp/reply" && grep -q '^EOF$' "$tmp/reply" &&
	ok || bad "not JSON: $(cat "$tmp/reply")"
raw array
grep -q '"code":"EPROTO"' "$tmp/reply" && ok || bad "not an object"
raw replykind
grep -q '"code":"EPROTO"' "$tmp/reply" && grep -q 'expected a request' \
	"$tmp/reply" && ok || bad "a reply frame sent to the daemon"
raw send "48420201000000027b7d" 1 # version 2
grep -q 'unsupported protocol version 2' "$tmp/reply" && ok ||
	bad "version 2: $(cat "$tmp/reply")"
raw pipeline
[ "$(head -3 "$tmp/reply" | grep -c '"ok"')" = 3 ] &&
	sed -n 1p "$tmp/reply" | grep -q '"proto":1' &&
	sed -n 2p "$tmp/reply" | grep -q '"jobs"' &&
	sed -n 3p "$tmp/reply" | grep -q 'EUNSUP' &&
	grep -q '^OPEN$' "$tmp/reply" && ok ||
	bad "back-to-back requests answered in order: $(cat "$tmp/reply")"
raw split
grep -q '"proto":1' "$tmp/reply" && ok || bad "a request split in bytes"
raw halfclose
grep -q '"proto":1' "$tmp/reply" && grep -q '^EOF$' "$tmp/reply" && ok ||
	bad "a request then SHUT_WR: $(cat "$tmp/reply")"
# half a frame: the daemon answers others meanwhile, and drops it when idle
"$py" "$tmp/raw.py" "$sock" half 5 >"$tmp/half" 2>&1 &
halfpid=$!
sleep 0.2
alive && ok || bad "ping while a half frame waits"
wait "$halfpid" || true
grep -qE '^EOF (0\.[5-9]|[1-4]\.)' "$tmp/half" && ok ||
	bad "a half frame times out: $(cat "$tmp/half")"
# the cap on connections (8): the 9th is refused with EUNAVAIL
raw hold 8
grep -q '"code":"EUNAVAIL"' "$tmp/reply" && grep -q 'too many' "$tmp/reply" &&
	ok || bad "connection cap: $(cat "$tmp/reply")"
raw hold 6
grep -q '"proto":1' "$tmp/reply" && ok || bad "under the cap: $(cat "$tmp/reply")"
alive && ok || bad "alive after the bad frames"

# 4. who may see and cancel what ----------------------------------------
useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
made_user=1
uid=$(id -u "$user")
gid=$(id -g "$user")
call_as "$uid" "$gid" '{"op":"ping"}'
[ "$rc" = 0 ] && ok || bad "ping as a user: $(cat "$tmp/reply" "$tmp/call.err")"
call_as "$uid" "$gid" '{"op":"decide","user":"'"$user"'","uid":'"$uid"'}'
[ "$rc" = 1 ] && has '"code":"EPERM"' && ok || bad "decide as a user"
call_as "$uid" "$gid" '{"op":"jobs"}'
[ "$rc" = 0 ] && has '"jobs":\[\]' && ok || bad "a user sees none of alice's"
call_as "$uid" "$gid" '{"op":"jobs","all":true}'
[ "$rc" = 1 ] && has '"code":"EPERM"' && ok || bad "jobs all as a user"
call_as "$uid" "$gid" '{"op":"status","id":"'"$kid"'"}'
[ "$rc" = 1 ] && has '"code":"ENOENT"' && ok ||
	bad "status of another's job: $(cat "$tmp/reply")"
call_as "$uid" "$gid" '{"op":"cancel","id":"'"$kid"'"}'
[ "$rc" = 1 ] && has '"code":"ENOENT"' && ok ||
	bad "cancel another's job: $(cat "$tmp/reply")"
call_as "$uid" "$gid" '{"op":"cancel","id":"hb-999999"}'
[ "$rc" = 1 ] && has '"code":"ENOENT"' && ok || bad "cancel a missing job"
[ "$(sql "SELECT state FROM jobs WHERE id='$kid'")" = pending ] && ok ||
	bad "another's job untouched"
# the user's own job: seen, cancelled
call '{"op":"decide","user":"'"$user"'","uid":'"$uid"',"partition":"cpu"}'
uj=$(grep -oE '"id":"hb-[0-9]+"' "$tmp/reply" | cut -d'"' -f4)
call_as "$uid" "$gid" '{"op":"jobs"}'
has "\"id\":\"$uj\"" && [ "$(grep -o '"id":"hb-' "$tmp/reply" | wc -l)" = 1 ] &&
	ok || bad "a user sees their own job: $(cat "$tmp/reply")"
call_as "$uid" "$gid" '{"op":"status","id":"'"$uj"'"}'
[ "$rc" = 0 ] && ok || bad "status of one's own job"
call_as "$uid" "$gid" '{"op":"cancel","id":"'"$uj"'"}'
[ "$rc" = 0 ] && has '"state":"cancelled"' && ok || bad "cancel one's own job"
[ "$(sql "SELECT state FROM jobs WHERE id='$uj'")" = cancelled ] && ok ||
	bad "cancelled on disk"
[ "$(sql "SELECT actor_user FROM events WHERE job_id='$uj' AND action='cancel'")" = "$user" ] &&
	ok || bad "the cancel is audited with its actor"
call_as "$uid" "$gid" '{"op":"cancel","id":"'"$uj"'"}'
[ "$rc" = 0 ] && ok || bad "cancelling twice is fine"
# a user's remote_start does not bind a Slurm job (a cancel would act on
# it with the daemon's rights); root's does
call '{"op":"decide","user":"'"$user"'","uid":'"$uid"',"partition":"gpu",
  "script":"#!/bin/sh\ntrue\n","cwd":"/","env":["A=1"]}'
ub=$(grep -oE '"id":"hb-[0-9]+"' "$tmp/reply" | cut -d'"' -f4)
call_as "$uid" "$gid" '{"op":"remote_start","id":"'"$ub"'","slurm_job_id":"777"}'
[ "$rc" = 0 ] && ok || bad "remote_start as the job's user: $(cat "$tmp/reply")"
[ "$(sql "SELECT ifnull(slurm_job_id,'none') FROM jobs WHERE id='$ub'")" = none ] &&
	ok || bad "a user bound Slurm job $(sql "SELECT slurm_job_id FROM jobs WHERE id='$ub'")"
call '{"op":"decide","user":"'"$user"'","uid":'"$uid"',"partition":"gpu",
  "script":"#!/bin/sh\ntrue\n","cwd":"/","env":["A=1"]}'
rb=$(grep -oE '"id":"hb-[0-9]+"' "$tmp/reply" | cut -d'"' -f4)
call '{"op":"remote_start","id":"'"$rb"'","slurm_job_id":"778"}'
[ "$rc" = 0 ] && [ "$(sql "SELECT slurm_job_id FROM jobs WHERE id='$rb'")" = 778 ] &&
	ok || bad "root's remote_start binds: $(cat "$tmp/reply")"
# connections: a user holds at most an eighth of the cap (here 1 of 8),
# and the last eighth is kept for root and SlurmUser
raw_as "$uid" "$gid" hold 1
grep -q '"code":"EUNAVAIL"' "$tmp/reply" && grep -q 'from your uid' "$tmp/reply" &&
	ok || bad "a user's second connection: $(cat "$tmp/reply")"
"$py" "$tmp/raw.py" "$sock" hold_for 7 3 >"$tmp/held" 2>&1 &
holder=$!
for _ in $(seq 50); do grep -q HELD "$tmp/held" && break; sleep 0.05; done
raw_as "$uid" "$gid" hold 0
grep -q '"code":"EUNAVAIL"' "$tmp/reply" && grep -q 'kept for root' "$tmp/reply" &&
	ok || bad "a user past the reserve: $(cat "$tmp/reply")"
raw hold 0
grep -q '"proto":1' "$tmp/reply" && ok || bad "root in the reserve: $(cat "$tmp/reply")"
kill "$holder" 2>/dev/null || true
wait "$holder" 2>/dev/null || true
# a uid with no passwd entry: only ping
call_as 59999 59999 '{"op":"jobs"}'
[ "$rc" = 1 ] && has '"code":"EPERM"' && ok || bad "unknown uid: $(cat "$tmp/reply")"
call_as 59999 59999 '{"op":"ping"}'
[ "$rc" = 0 ] && ok || bad "unknown uid may ping"
# its name is looked up on a worker (the loop never waits on NSS), its
# requests answered in order meanwhile: refused, ping, refused
raw_as 59998 59998 unnamed
[ "$(grep -c '"code":"EPERM"' "$tmp/reply")" = 2 ] &&
	sed -n 2p "$tmp/reply" | grep -q '"proto":1' && ok ||
	bad "an unknown uid's pipelined requests: $(cat "$tmp/reply")"
# a user's burst job cancelled: the backend's cancel runs on a worker,
# then the record, the audit, the reply; remote_abandon likewise
call_as "$uid" "$gid" '{"op":"cancel","id":"'"$ub"'"}'
[ "$rc" = 0 ] && has '"state":"cancelled"' && ok ||
	bad "cancel of one's burst job: $(cat "$tmp/reply")"
[ "$(sql "SELECT state FROM jobs WHERE id='$ub'")" = cancelled ] &&
	[ "$(sql "SELECT count(*) FROM events WHERE job_id='$ub' AND action='cancel'")" = 1 ] &&
	ok || bad "the burst job's cancel on disk"
call '{"op":"decide","user":"'"$user"'","uid":'"$uid"',"partition":"gpu",
  "script":"#!/bin/sh\nsleep 60\n","cwd":"/","env":["A=1"]}'
ab=$(grep -oE '"id":"hb-[0-9]+"' "$tmp/reply" | cut -d'"' -f4)
call_as "$uid" "$gid" '{"op":"remote_start","id":"'"$ab"'"}'
call_as "$uid" "$gid" '{"op":"remote_abandon","id":"'"$ab"'","reason":"no output"}'
[ "$rc" = 0 ] && has '"state":"failed"' &&
	[ "$(sql "SELECT state FROM jobs WHERE id='$ab'")" = failed ] &&
	[ "$(sql "SELECT count(*) FROM events WHERE job_id='$ab' AND action='remote-abandon'")" = 1 ] &&
	ok || bad "remote_abandon: $(cat "$tmp/reply")"
call_as "$uid" "$gid" '{"op":"cancel","id":"'"$ab"'","array_task":3}'
[ "$rc" = 0 ] && has '"state":"failed"' &&
	[ "$(sql "SELECT count(*) FROM events WHERE job_id='$ab' AND action='cancel-task'")" = 1 ] &&
	ok || bad "cancel of a task that never ran: $(cat "$tmp/reply")"

# 5. SIGHUP: a bad file keeps the old configuration; a good one applies --
cp "$tmp/a.yaml" "$tmp/a.yaml.orig"
printf 'placement:\n  partitions: {gpu: slurm}\n  bogus: 1\n' >"$tmp/a.yaml"
kill -HUP "$pid"
wait_log 'reload refused.*placement.bogus: unknown key' && ok ||
	bad "the bad reload is logged with its reason"
alive && ok || bad "alive after a bad reload"
call '{"op":"decide","user":"alice","uid":1000,"partition":"gpu"}'
has '"target":"kubernetes"' && has '"partition":"cloud"' && ok ||
	bad "the old configuration stays"
# a setting that needs a restart is refused too
sed 's/^daemon:/daemon:\n  workers: 2/' "$tmp/a.yaml.orig" >"$tmp/a.yaml"
kill -HUP "$pid"
wait_log 'daemon.workers: changing it needs a restart' && ok ||
	bad "a non-reloadable change is refused"
cat >"$tmp/a.yaml" <<EOF
daemon:
  max_request: 65536
  admins: [$user]
slurm:
  burst_partition: cloud
remote:
  local_dir: $tmp/remote
placement:
  default_target: slurm
  partitions:
    gpu: slurm
EOF
kill -HUP "$pid"
wait_log '"msg":"configuration reloaded"' && ok || bad "reload logged"
call '{"op":"decide","user":"alice","uid":1000,"partition":"gpu"}'
has '"target":"slurm"' && ok || bad "the new map applies: $(cat "$tmp/reply")"
# the user is an admin now: sees and may cancel everyone's jobs
call_as "$uid" "$gid" '{"op":"jobs","all":true}'
[ "$rc" = 0 ] && has "\"id\":\"$kid\"" && ok || bad "an admin lists all"
call_as "$uid" "$gid" '{"op":"cancel","id":"'"$sid"'"}'
[ "$rc" = 0 ] && ok || bad "an admin cancels another's job"

# 6. sockets: a live one is refused, a stale one replaced ----------------
rc=0
"$hbd" --config "$tmp/a.yaml" --foreground --socket "$sock" \
	--state "$tmp/other.db" 2>"$tmp/second.log" || rc=$?
[ "$rc" = 1 ] && grep -q 'another daemon is listening' "$tmp/second.log" &&
	ok || bad "a second daemon on a live socket: $(cat "$tmp/second.log")"
alive && ok || bad "the first daemon is undisturbed"

# 7. SIGTERM: exit 0, the socket is gone, the work is on disk ------------
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=
[ "$rc" = 0 ] && ok || bad "SIGTERM exit status $rc"
[ ! -e "$sock" ] && ok || bad "the socket is removed"
grep -q '"msg":"stopped"' "$log" && ok || bad "stop logged"
[ "$(sql "SELECT count(*) FROM jobs")" = 13 ] && ok || bad "jobs kept"

# a crash leaves a stale socket; the next start replaces it
start_daemon "$tmp/a.yaml"
{
	kill -KILL "$pid"
	wait "$pid" || true
} 2>/dev/null
pid=
[ -S "$sock" ] && ok || bad "a killed daemon leaves its socket"
start_daemon "$tmp/a.yaml"
grep -q 'replaced a stale socket' "$log" && ok || bad "stale socket replaced"
call '{"op":"status","id":"'"$kid"'"}'
[ "$rc" = 0 ] && ok || bad "the state survives a crash"
kill -TERM "$pid"
wait "$pid" || true
pid=

# 8. detached, with a pid file --------------------------------------------
rc=0
"$hbd" --config "$tmp/a.yaml" --socket "$sock" --state "$db" \
	--pidfile "$tmp/detached.pid" 2>>"$log" || rc=$?
[ "$rc" = 0 ] && [ -s "$tmp/detached.pid" ] && ok ||
	bad "detached start ($rc)"
dpid=$(cat "$tmp/detached.pid" 2>/dev/null || echo 0)
call '{"op":"ping"}'
[ "$rc" = 0 ] && ok || bad "the detached daemon answers"
kill -TERM "$dpid"
for _ in $(seq 100); do
	kill -0 "$dpid" 2>/dev/null || break
	sleep 0.05
done
! kill -0 "$dpid" 2>/dev/null && [ ! -e "$tmp/detached.pid" ] && ok ||
	bad "the detached daemon stops and removes its pid file"
# a bad configuration fails the start, with the reason
printf 'daemon:\n  workers: 0\n' >"$tmp/bad.yaml"
rc=0
"$hbd" --config "$tmp/bad.yaml" --socket "$sock" --state "$db" \
	2>"$tmp/bad.log" || rc=$?
[ "$rc" = 1 ] && grep -q 'daemon.workers: must be between 1 and 64' \
	"$tmp/bad.log" && ok || bad "a bad configuration at start"

# the daemon's log is JSON lines
"$py" -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' \
	"$log" && ok || bad "the log is JSON lines"

echo "daemon_api: $passes passed, $fails failed"
[ "$fails" = 0 ]
