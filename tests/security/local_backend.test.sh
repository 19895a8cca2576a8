#!/bin/bash
# local_backend.test.sh - the local remote backend (remote.backend: local)
# against a hostile job user.  Root gets a Kubernetes-target job for the
# user (decide); the user then starts it (remote_start), as its shadow
# would, and plants what it can in every directory of its job it may write
# in, then asks the daemon to act:
#
#   (a) pid removed, script -> a root file, remote_start again: the root
#       file keeps its bytes, owner and mode
#   (b) output -> a root-only file: no byte of it in any remote_poll reply
#   (c) a pid file naming a root process group, then cancel, and a poll
#       past the grace period (the SIGKILL): the root process lives
#   (d) FIFOs named cancelled, result, output and pid, then remote_poll:
#       root's ping is answered within 1 s, and the poll gets an answer
#
# Usage: local_backend.test.sh BUILD_DIR SOURCE_DIR (as root)
build=${1:?usage: local_backend.test.sh BUILD_DIR SOURCE_DIR}
src=${2:?SOURCE_DIR}
# shellcheck source=lib.sh
. "$src/tests/security/lib.sh"
sec_init
# The jobs' process groups, by the pids their pid files name, signalled
# as the user (a pid file the old layout let the user write cannot make
# this kill anything of root's); then lib.sh's cleanup.
jobs_cleanup() {
	local f p _
	for f in "$tmp"/remote/*/pid; do
		[ -f "$f" ] || continue
		read -r p _ <"$f" || continue
		case $p in '' | *[!0-9]*) continue ;; esac
		as_user kill -KILL -- "-$p" 2>/dev/null || true
	done
	_sec_cleanup
}
trap jobs_cleanup EXIT

local_config debug 'slurm:\n  burst_partition: cloud'
start_daemon "$tmp/cfg.yaml" || exit 1

# new_job: root decides a Kubernetes-target job for the user, and the
# user starts it; prints its id
new_job() {
	local id
	call '{"op":"decide","user":"'"$user"'","uid":'"$uid"',
	  "partition":"cpu","target":"kubernetes",
	  "script":"#!/bin/sh\necho started\nsleep 300\n","cwd":"/",
	  "env":["PATH=/usr/bin:/bin"]}'
	id=$(grep -oE '"id":"hb-[0-9]+"' "$tmp/reply" | cut -d'"' -f4)
	[ -n "$id" ] || {
		echo "decide: $(cat "$tmp/reply")" >&2
		return 1
	}
	call_as '{"op":"remote_start","id":"'"$id"'"}'
	[ "$rc" = 0 ] || {
		echo "remote_start $id: $(cat "$tmp/reply")" >&2
		return 1
	}
	echo "$id"
}

# plant ID SCRIPT [ARGS...]: as the user, run the shell SCRIPT once in
# each directory of job ID (the job's own, and work/ where there is one),
# with $d the directory; what the user may not do fails quietly
plant() {
	local id=$1 script=$2
	shift 2
	as_user sh -c 'id=$1; script=$2; shift 2
		for d in "$id" "$id/work"; do
			[ -d "$d" ] || continue
			( eval "$script" ) 2>/dev/null
		done
		true' sh "$tmp/remote/$id" "$script" "$@"
}

# alive PID: the process runs (kill -0 would also take a zombie that no
# one has reaped yet for alive)
alive() {
	local st
	st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)
	[ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

# poll_data: the output bytes of the last remote_poll reply, decoded
poll_data() {
	sed -n 's/.*"data":"\([^"]*\)".*/\1/p' "$tmp/reply" | base64 -d 2>/dev/null
}

# (a) -------------------------------------------------------------------
canary "$tmp/canary-a"
id=$(new_job) || bad "(a) no job"
plant "$id" 'rm -f "$d/pid" "$d/script"; ln -s "$1" "$d/script"' \
	"$tmp/canary-a"
call_as '{"op":"remote_start","id":"'"$id"'"}'
echo "(a) second remote_start: rc=$rc $(head -c 300 "$tmp/reply")"
sleep 0.5
canary_intact "$tmp/canary-a" &&
	ok "(a) the root file behind a script symlink is intact" ||
	bad "(a) the root file was written: $(stat -c '%U:%G %a %s bytes' "$tmp/canary-a")"

# (b) -------------------------------------------------------------------
canary "$tmp/canary-b"
secret=$(head -n 1 "$tmp/canary-b")
id=$(new_job) || bad "(b) no job"
plant "$id" '[ -e "$d/output" ] || exit 0
	ln -s "$1" "$d/o.new" && mv -f "$d/o.new" "$d/output"' "$tmp/canary-b"
leak=0
for i in 1 2 3; do
	call_as '{"op":"remote_poll","id":"'"$id"'","offset":0}'
	[ "$i" = 1 ] && echo "(b) remote_poll: rc=$rc $(head -c 300 "$tmp/reply")"
	# (the decoded data whole, not piped into grep -q: under pipefail
	# an early match would fail the pipe and hide the leak)
	if grep -qF -- "$secret" "$tmp/reply" ||
		[[ "$(poll_data)" == *"$secret"* ]]; then
		leak=1
	fi
	sleep 0.2
done
[ "$leak" = 0 ] && ok "(b) no byte of the root file in any poll reply" ||
	bad "(b) remote_poll returned the root file's lines"
canary_intact "$tmp/canary-b" || bad "(b) the root file changed"

# (c) -------------------------------------------------------------------
id=$(new_job) || bad "(c) no job"
rp=$(root_proc)
sleep 0.1
read -ra f <<<"$(sed 's/.*) //' "/proc/$rp/stat")"
rstart=${f[19]}
plant "$id" 'rm -f "$d/pid"; printf "%s %s\n" "$1" "$2" >"$d/pid"' \
	"$rp" "$rstart"
call_as '{"op":"cancel","id":"'"$id"'"}'
echo "(c) cancel: rc=$rc $(head -c 300 "$tmp/reply")"
sleep 0.3
alive "$rp" && ok "(c) the root process lives after cancel" ||
	bad "(c) cancel signalled root process $rp"
# past the grace period (5 s), a look at the job sends SIGKILL
if alive "$rp"; then
	sleep 5.3
	call_as '{"op":"remote_poll","id":"'"$id"'","offset":0}'
	sleep 0.3
	alive "$rp" &&
		ok "(c) the root process lives past the grace period" ||
		bad "(c) the SIGKILL after the grace reached root process $rp"
fi

# (d) -------------------------------------------------------------------
id=$(new_job) || bad "(d) no job"
plant "$id" 'for n in cancelled result output pid; do
		rm -f "$d/$n"; mkfifo "$d/$n"; done'
as_user "$hbcall" --timeout 3000 "$sock" \
	'{"op":"remote_poll","id":"'"$id"'","offset":0}' \
	>"$tmp/d.reply" 2>&1 &
pp=$!
pids="$pids $pp"
sleep 0.3
ms=$(ping_ms)
[ "$ms" -lt 1000 ] && ok "(d) root ping answered in $ms ms with FIFOs planted" ||
	bad "(d) root ping: $ms ms (the daemon is blocked)"
wait "$pp" 2>/dev/null
echo "(d) remote_poll: $(head -c 300 "$tmp/d.reply")"
grep -q '"ok"' "$tmp/d.reply" &&
	ok "(d) the poll got an answer" || bad "(d) the poll got no answer"

sec_end
