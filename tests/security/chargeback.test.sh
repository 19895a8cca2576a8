#!/bin/bash
# chargeback.test.sh - what a user can do to the cost ledger.  The daemon
# meters jobs with a rate card; a hostile user then tries:
#
#   (a) to run a burst job for free: on the local backend the job's end
#       time is a file in a directory the user writes; the user rewrites
#       it to claim the job ended when it started, then polls.  The
#       damage checked: the ledger charges the job at least the seconds
#       it really ran (it sleeps 3 s), from the daemon's own clock.
#   (b) to have another user's job metered or read its cost: remote_poll
#       of root's job and `jobs` are refused or do not show it; root's
#       job has no ledger entry and its cost is not in the user's view.
#   (c) to read or write the ledger with `hpcbridge report --state`: the
#       store (0600, root's) and a symlink the user plants to it are
#       refused, naming the file; the store's rows are unchanged, it stays
#       root's and 0600, and no file of the user's is left beside it.
#
# Usage: chargeback.test.sh BUILD_DIR SOURCE_DIR (as root)
build=${1:?usage: chargeback.test.sh BUILD_DIR SOURCE_DIR}
src=${2:?SOURCE_DIR}
# shellcheck source=lib.sh
. "$src/tests/security/lib.sh"
sec_init
hb=$build/bin/hpcbridge

local_config info "chargeback:\n  ratecard: $src/config/ratecards/example.yaml"
start_daemon "$tmp/cfg.yaml" || exit 1

# decide JSON_FIELDS: root decides a Kubernetes-target job; prints its id
decide() {
	call '{"op":"decide","partition":"cpu","target":"kubernetes",
	  "cwd":"/","env":["PATH=/usr/bin:/bin"],'"$1"'}'
	grep -oE '"id":"hb-[0-9]+"' "$tmp/reply" | cut -d'"' -f4
}

# ledger SQL: a number from root's store
ledger() { sqlite3 -readonly "$db" "$1" 2>/dev/null; }

# (a) a job that sleeps 3 s claims to have ended as it started
id=$(decide '"user":"'"$user"'","uid":'"$uid"',"account":"physics",
  "script":"#!/bin/sh\nsleep 3\necho done\n"')
[ -n "$id" ] || { bad "decide: $(cat "$tmp/reply")"; sec_end; }
call_as '{"op":"remote_start","id":"'"$id"'"}'
[ "$rc" = 0 ] || bad "remote_start: $(cat "$tmp/reply")"
res=$tmp/remote/$id/work/result
for _ in $(seq 200); do
	[ -s "$res" ] && break
	sleep 0.05
done
[ -s "$res" ] || bad "the job did not end: no $res"
start_ms=$(stat -c %Y "$tmp/remote/$id/pid" 2>/dev/null)000
as_user sh -c "printf '0 %s\n' '$start_ms' >'$res'" &&
	ok "the user rewrote its job's end time to its start" ||
	bad "the user could not write $res: the attack is moot"
for _ in $(seq 100); do
	call_as '{"op":"remote_poll","id":"'"$id"'","offset":0}'
	has '"done":true' && break
	sleep 0.1
done
has '"done":true' || bad "remote_poll never said done: $(cat "$tmp/reply")"
ms=$(ledger "SELECT sum(period_end_ms - period_start_ms) FROM ledger
  WHERE job_id = '$id' AND reverses IS NULL")
amount=$(ledger "SELECT sum(amount_micros) FROM ledger WHERE job_id = '$id'")
[ -n "$ms" ] && [ "$ms" -ge 3000 ] && [ "${amount:-0}" -gt 0 ] &&
	ok "charged for ${ms} ms (>= 3 s it slept), $amount micro-units" ||
	bad "the forged end time was believed: ${ms:-no} ms charged, amount ${amount:-none}"

# (b) root's own job, decided for root: the user cannot poll it
rid=$(decide '"user":"root","uid":0,"account":"admin",
  "script":"#!/bin/sh\nexit 0\n"')
[ -n "$rid" ] || bad "decide (root): $(cat "$tmp/reply")"
call_as '{"op":"remote_poll","id":"'"$rid"'","offset":0}'
[ "$rc" != 0 ] && ok "remote_poll of root's job refused" ||
	bad "the user polled root's job: $(cat "$tmp/reply")"
[ "$(ledger "SELECT count(*) FROM ledger WHERE job_id = '$rid'")" = 0 ] &&
	ok "root's job was not metered by the user's poll" ||
	bad "root's job has ledger entries"
as_user "$hb" jobs --json --socket "$sock" >"$tmp/jobs.json" 2>&1
grep -q "\"$rid\"" "$tmp/jobs.json" &&
	bad "the user sees root's job: $(head -c 300 "$tmp/jobs.json")" ||
	ok "the user's job list leaves root's job out"
grep -q '"cost_micros": *[1-9]' "$tmp/jobs.json" &&
	ok "the user sees its own job's cost" ||
	bad "no cost for the user's own job: $(head -c 300 "$tmp/jobs.json")"

# (c) report --state on root's store, directly and through a symlink
rows() { ledger "SELECT (SELECT count(*) FROM ledger) || '/' ||
  (SELECT count(*) FROM jobs) || '/' || (SELECT total(amount_micros) FROM ledger)"; }
before=$(rows)
mkdir -m 0700 "$tmp/u" && chown "$uid:$gid" "$tmp/u"
as_user ln -s "$db" "$tmp/u/state.db"
for p in "$db" "$tmp/u/state.db"; do
	out=$(as_user "$hb" report --state "$p" --from 2020-01-01 \
		--to 2100-01-01 --by account 2>&1)
	st=$?
	[ "$st" != 0 ] && printf '%s' "$out" | grep -q "$p" &&
		ok "report --state $p refused: $(printf '%s' "$out" | head -c 120)" ||
		bad "report --state $p as the user (exit $st): $(printf '%s' "$out" | head -c 200)"
done
[ "$(rows)" = "$before" ] && [ "$(stat -c %U:%a "$db")" = root:600 ] &&
	ok "root's store is unchanged ($before), root's, 0600" ||
	bad "root's store changed: $before -> $(rows), $(stat -c %U:%a "$db")"
left=$(find "$(dirname "$db")" -maxdepth 1 -user "$uid" ! -path "$tmp/u" \
	2>/dev/null)
[ -z "$left" ] && ok "nothing of the user's beside the store" ||
	bad "the user left files beside the store: $left"
kill -0 "$dpid" 2>/dev/null && ok "the daemon is alive" || bad "the daemon died"
sec_end
