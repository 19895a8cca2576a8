#!/bin/bash
# daemon_files.test.sh - the daemon's files.  state.db holds every user's
# script and environment: it and its -wal and -shm are 0600 (they were
# 0644), and an old store left 0644 is tightened.  The pid file is not
# followed through a symlink a user planted: before the fix root
# truncated and wrote the symlink's target.  The damage checked: the
# root canary the symlink points to is unchanged; no user can read the
# store.
# usage: daemon_files.test.sh BUILD_DIR SRC_DIR
build=$1
src=$2
# shellcheck source=tests/security/lib.sh
. "$src/tests/security/lib.sh"
sec_init

local_config

# 1. a user plants the pid file as a symlink to a root file
mkdir -m 1777 "$tmp/pids"
canary "$tmp/secret"
as_user ln -s "$tmp/secret" "$tmp/pids/hpcbridged.pid"
rc=0
timeout 20 "$hbd" --config "$tmp/cfg.yaml" --foreground --socket "$sock" \
	--state "$db" --pidfile "$tmp/pids/hpcbridged.pid" 2>>"$log" &
p=$!
pids="$pids $p"
for _ in $(seq 100); do
	kill -0 "$p" 2>/dev/null || break
	"$hbcall" "$sock" '{"op":"ping"}' >/dev/null 2>&1 && break
	sleep 0.05
done
kill -TERM "$p" 2>/dev/null
wait "$p" || rc=$?
canary_intact "$tmp/secret" && ok "the pid file's symlink was not followed" ||
	bad "root wrote through the user's symlink: $(cat "$tmp/secret" 2>&1 | head -c 80)"
grep -q 'cannot write the pid file' "$log" && ok "refused, with the reason logged" ||
	bad "no refusal logged (exit $rc)"
rm -f "$tmp/pids/hpcbridged.pid" "$sock"

# 2. the store: 0600, its WAL and shared memory too
start_daemon "$tmp/cfg.yaml" --pidfile "$tmp/pids/hpcbridged.pid" || exit 1
[ "$(cat "$tmp/pids/hpcbridged.pid")" = "$dpid" ] && ok "a plain pid file is written" ||
	bad "pid file: $(cat "$tmp/pids/hpcbridged.pid" 2>&1)"
call '{"op":"decide","user":"'"$user"'","uid":'"$uid"',"script":"#!/bin/sh\necho secret-env\n","env":["TOKEN=s3cr3t"]}'
for f in "$db" "$db-wal" "$db-shm"; do
	[ -e "$f" ] || { bad "$f missing"; continue; }
	m=$(stat -c %a "$f")
	[ "$m" = 600 ] && ok "$(basename "$f") is 0600" || bad "$(basename "$f") is $m"
done
as_user cat "$db-wal" >/dev/null 2>&1 && bad "the user reads the WAL" ||
	ok "the user cannot read the WAL"
kill -TERM "$dpid"
wait "$dpid" 2>/dev/null

# 3. a store an older version left 0644 is tightened
chmod 644 "$db"
start_daemon "$tmp/cfg.yaml" || exit 1
m=$(stat -c %a "$db")
[ "$m" = 600 ] && ok "an old 0644 store is now 0600" || bad "old store left $m"
kill -0 "$dpid" 2>/dev/null && ok "daemon alive" || bad "daemon died"
kill -TERM "$dpid"
wait "$dpid" 2>/dev/null

# 4. folders the daemon makes for its store: 0711, as the package and
# systemd make them; a user passes through but lists nothing
start_daemon "$tmp/cfg.yaml" --state "$tmp/fresh/state/state.db" || exit 1
for d in "$tmp/fresh" "$tmp/fresh/state"; do
	m=$(stat -c %a "$d" 2>&1)
	[ "$m" = 711 ] && ok "$(basename "$d")/ made 0711" || bad "$d: $m"
done
as_user ls "$tmp/fresh/state" >/dev/null 2>&1 &&
	bad "the user lists the store's folder" ||
	ok "the user cannot list the store's folder"
m=$(stat -c %a "$tmp/fresh/state/state.db" 2>&1)
[ "$m" = 600 ] && ok "the new store is 0600" || bad "new store: $m"
kill -0 "$dpid" 2>/dev/null && ok "daemon alive" || bad "daemon died"
sec_end
