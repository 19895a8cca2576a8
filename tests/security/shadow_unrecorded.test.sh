#!/bin/bash
# shadow_unrecorded.test.sh - what a user learns or makes by asking the
# shadow's ops (remote_start, remote_poll, remote_abandon, cancel of an
# array task) about gateway ids the daemon has not recorded.
#
# With plugin.decide: snapshot the daemon leases gateway ids to the
# job_submit plugin, and a proxy's shadow may ask before the decision is
# recorded (its notice lost): the daemon answers EUNAVAIL, "try again".
# The attacker asks, as an unprivileged user, about:
#
#   - leased ids nobody recorded;
#   - a leased id root recorded (a notice from root, as slurmctld sends
#     one) for a job of root's;
#   - ids past every lease, forged spellings, an array task's, and
#     root's job decided over the socket;
#
# and also tries to send its own notice (the socket is root's and
# SlurmUser's group's; the daemon checks the sender too).
# The damage checked: no job row, decision or event appears, nothing is
# made under the remote backend's directory; the answers about a
# recorded and an unrecorded leased id are the same but for the id (no
# owner, state or existence leaks); ids past the leases answer "no job",
# as before; root's ping stays fast and the daemon alive.
#
# Usage: shadow_unrecorded.test.sh BUILD_DIR SOURCE_DIR (as root)
build=${1:?usage: shadow_unrecorded.test.sh BUILD_DIR SOURCE_DIR}
src=${2:?SOURCE_DIR}
# shellcheck source=lib.sh
. "$src/tests/security/lib.sh"
sec_init

mkdir -p "$tmp/remote"
local_config info "plugin:\n  decide: snapshot\n  lease: 50"
start_daemon "$tmp/cfg.yaml" || exit 1
notice=$tmp/run/hpcbridged.notice

q() { sqlite3 -readonly "$db" "$1" 2>/dev/null; }
rows() {
	q "SELECT (SELECT count(*) FROM jobs) || '/' ||
	  (SELECT count(*) FROM decisions) || '/' || (SELECT count(*) FROM events)"
}

# notice JSON: root sends a datagram to the notice socket, as slurmctld
send_notice() {
	/usr/bin/python3 - "$notice" "$1" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.sendto(sys.argv[2].encode(), sys.argv[1])
PY
}

# the lease a plugin asks for: the job sequence moves past it
for _ in $(seq 100); do
	[ -S "$notice" ] && break
	sleep 0.05
done
send_notice '{"op":"hello","nonce":"00000000000000aa"}'
for _ in $(seq 100); do
	hi=$(q "SELECT value FROM seq WHERE name = 'job'")
	[ "${hi:-0}" -ge 50 ] && [ -S "$notice" ] && break
	sleep 0.05
done
[ "${hi:-0}" -ge 50 ] && ok "ids 1..$hi leased to the plugin" ||
	{ bad "no lease taken (sequence ${hi:-none})"; sec_end; }

rec=hb-000003
send_notice '{"op":"decided","id":"'"$rec"'","target":"kubernetes",
  "snapshot":1,"request":{"uid":0,"account":"admin","partition":"gpu",
  "script":"#!/bin/sh\necho root\n"}}'
for _ in $(seq 100); do
	[ "$(q "SELECT count(*) FROM jobs WHERE id = '$rec'")" = 1 ] && break
	sleep 0.05
done
[ "$(q "SELECT uid FROM jobs WHERE id = '$rec'")" = 0 ] &&
	ok "root's notice recorded $rec for root" ||
	bad "root's notice was not recorded: $(tail -n 3 "$log")"
call '{"op":"decide","user":"root","uid":0,"partition":"cpu",
  "target":"kubernetes","script":"#!/bin/sh\nexit 0\n"}'
sid=$(grep -oE '"id":"hb-[0-9]+"' "$tmp/reply" | cut -d'"' -f4)
[ -n "$sid" ] || bad "decide: $(cat "$tmp/reply")"

before=$(rows)
canary "$tmp/canary"

# ask OP ID [EXTRA]: the attacker's call; $rc, and in $out its reply with
# the id blanked
ask() {
	local r
	call_as '{"op":"'"$1"'","id":"'"$2"'"'"${3:-}"'}'
	r=$(cat "$tmp/reply")
	out=${r//"$2"/ID}
}
for op in remote_start remote_poll remote_abandon; do
	extra=
	[ "$op" = remote_abandon ] && extra=',"reason":"gone"'
	ask $op hb-000007 "$extra"
	a=$out
	[ "$rc" != 0 ] && printf '%s' "$a" | grep -q '"EUNAVAIL"' &&
		ok "$op of a leased, unrecorded id: try again" ||
		bad "$op hb-000007 (exit $rc): $a"
	ask $op "$rec" "$extra"
	[ "$a" = "$out" ] &&
		ok "$op: root's recorded id answers as an unrecorded one" ||
		bad "$op tells a recorded id from an unrecorded one: '$a' vs '$out'"
	printf '%s' "$out" | grep -qE 'admin|gpu|kubernetes|pending|"uid"' &&
		bad "$op leaks root's job: $out"
	for id in hb-999999 "$sid" hb-0000007 hb-7 "hb-000007-t1" \
		"../hb-000007" "hb-000007 " "$(printf 'hb-%0200d' 7)"; do
		ask $op "$id" "$extra"
		[ "$rc" != 0 ] && ! printf '%s' "$out" | grep -q '"EUNAVAIL"' &&
			! printf '%s' "$out" | grep -qE 'admin|root' ||
			bad "$op of '$id' (exit $rc): $out"
	done
	ok "$op: ids past the leases and forged ones are refused, not deferred"
done
ask cancel hb-000007 ',"array_task":1'
[ "$rc" != 0 ] && ok "cancel of a task of an unrecorded id refused: $out" ||
	bad "cancel of a task of hb-000007 answered ok: $out"
ask status hb-000007
printf '%s' "$out" | grep -q '"ENOENT"' &&
	ok "status of an unrecorded id: no job" || bad "status hb-000007: $out"

# the attacker's own notice is not heard
as_user /usr/bin/python3 - "$notice" "$uid" <<'PY' 2>/dev/null
import socket, sys
n = ('{"op":"decided","id":"hb-000009","target":"kubernetes","snapshot":1,'
     '"request":{"uid":%s,"script":"#!/bin/sh\\nid\\n"}}' % sys.argv[2])
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.sendto(n.encode(), sys.argv[1])
PY
sleep 0.5
[ "$(q "SELECT count(*) FROM jobs WHERE id = 'hb-000009'")" = 0 ] &&
	ok "the attacker's notice recorded nothing" ||
	bad "the attacker's notice recorded hb-000009"

after=$(rows)
[ "$after" = "$before" ] && ok "no job, decision or event appeared ($after)" ||
	bad "the store changed: $before -> $after"
made=$(find "$tmp/remote" -mindepth 1 2>/dev/null | head -n 5)
[ -z "$made" ] && ok "nothing made under the remote directory" ||
	bad "made under $tmp/remote: $made"
canary_intact "$tmp/canary" && ok "root's canary intact" ||
	bad "root's canary changed"
ms=$(ping_ms)
[ "$ms" -lt 1000 ] && ok "root's ping answered in $ms ms" ||
	bad "root's ping took $ms ms"
kill -0 "$dpid" 2>/dev/null && ok "the daemon is alive" || bad "the daemon died"
sec_end
