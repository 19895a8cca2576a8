#!/usr/bin/env bash
# notice_forged.test.sh - a local user against the plugin's feed: the
# notice socket and the placement snapshot.
#
# The attacker tries to send the daemon forged "decided" notices (a leased
# id, a burst job of root's, a huge one, garbage) and a "hello" (which
# would make the daemon lease new ids to another plugin), then to read and
# to replace the snapshot.  (Were the socket's mode ever wider, the daemon
# also checks each datagram's sender: SO_PASSCRED, notice.c.)  The damage checked: no job recorded, the lease unchanged,
# the snapshot unread and unchanged, root's ping answered; and, as the
# control that shows the check can fail, the same notice from root IS
# recorded.
#
# usage: notice_forged.test.sh BUILD_DIR SRC_DIR
set -euo pipefail
build=$(cd "${1:?BUILD_DIR}" && pwd)
src=$(cd "${2:?SRC_DIR}" && pwd)
# shellcheck source=lib.sh
. "$src/tests/security/lib.sh"
sec_init

local_config info "slurm:\n  user: root"
start_daemon "$tmp/cfg.yaml"
snap=$(dirname "$sock")/placement.snap
notice=$(dirname "$sock")/hpcbridged.notice
for _ in $(seq 50); do
	[ -S "$notice" ] && [ -f "$snap" ] && break
	sleep 0.1
done
[ -S "$notice" ] && [ -f "$snap" ] && ok "the daemon publishes and listens" ||
	bad "no snapshot or notice socket beside $sock"

# The header's lease (snapfile.h: lease_lo at byte 48, little-endian).
lease_lo() {
	/usr/bin/python3 -c 'import struct,sys
d=open(sys.argv[1],"rb").read(64); print(struct.unpack_from("<Q",d,48)[0])' "$snap"
}
# root, as slurmctld's plugin, asks for a lease

# One datagram to the notice socket: send_notice JSON_OR_@SIZE
sender='import socket,sys
s=socket.socket(socket.AF_UNIX,socket.SOCK_DGRAM)
m=sys.argv[2]
b=(b"x"*int(m[1:])) if m.startswith("@") else m.encode()
try:
    s.sendto(b,sys.argv[1])
except OSError as e:
    print("send:",e)'
/usr/bin/python3 -c "$sender" "$notice" '{"op":"hello","nonce":"00000000000000aa"}'
for _ in $(seq 50); do
	[ "$(lease_lo)" -gt 0 ] && break
	sleep 0.1
done
lo=$(lease_lo)
[ "$lo" -gt 0 ] && ok "a lease is published ($lo)" || bad "no lease: '$lo'"
id=$(printf 'hb-%06d' "$lo")
forged='{"op":"decided","id":"'$id'","target":"kubernetes","snapshot":1,
"rule":"r","why":"w","reason":"forged","cost_micro":0,
"request":{"uid":0,"account":"victim","partition":"debug",
"script":"#!/bin/sh\nid > /tmp/pwned\n","env":["A=1"]}}'
for m in "$forged" '{"op":"hello","nonce":"00000000000000bb"}' 'not json' \
	'@200000' '{"op":"decided"}'; do
	as_user /usr/bin/python3 -c "$sender" "$notice" "$m"
done >"$tmp/sends" 2>&1
sleep 2
# the socket is root's and SlurmUser's group's (0660, 0600 without one)
[ "$(grep -c 'Permission denied' "$tmp/sends")" = 5 ] &&
	ok "the notice socket refuses the attacker ($(stat -c %a "$notice"))" ||
	bad "sends: $(cat "$tmp/sends"), mode $(stat -c %a "$notice")"

call '{"op":"status","id":"'"$id"'"}'
has '"ENOENT"' && ok "a forged notice records nothing" ||
	bad "forged notice recorded: $(cat "$tmp/reply")"
[ "$(lease_lo)" = "$lo" ] && ok "forged hellos lease nothing" ||
	bad "lease moved from $lo to $(lease_lo)"
[ "$(ping_ms)" -lt 1000 ] && ok "root is answered" || bad "root's ping slow"
kill -0 "$dpid" 2>/dev/null && ok "the daemon lives" || bad "the daemon died"

# The snapshot holds what accounts spent: not for users, and not theirs
# to replace.
if as_user cat "$snap" >/dev/null 2>&1; then
	bad "the attacker read the snapshot"
else
	ok "the attacker cannot read the snapshot"
fi
as_user sh -c "echo x > '$snap'" 2>/dev/null || true
as_user sh -c "rm -f '$snap'; ln -s /etc/shadow '$snap'" 2>/dev/null || true
[ -f "$snap" ] && [ ! -L "$snap" ] && [ "$(stat -c %u "$snap")" = 0 ] &&
	ok "the snapshot is still root's file" ||
	bad "the snapshot was replaced: $(ls -l "$snap")"
[ "$(stat -c %a "$snap")" = 600 ] || [ "$(stat -c %a "$snap")" = 640 ] &&
	ok "its mode is $(stat -c %a "$snap")" || bad "mode $(stat -c %a "$snap")"

# The control: the same notice from root is a decision made in slurmctld.
/usr/bin/python3 -c "$sender" "$notice" "$forged"
sleep 1.5
call '{"op":"status","id":"'"$id"'"}'
has '"ok":[[:space:]]*true' && ok "the same notice from root is recorded" ||
	bad "root's notice not recorded: $(cat "$tmp/reply")"
sec_end
