#!/usr/bin/env bash
# qsub_hostile.test.sh - hostile qsub options and #PBS lines, as an
# unprivileged user, against a real Slurm and hpcbridged.  Each is refused
# or harmless, checked by the damage:
#
#   * -o into a root-only directory, naming a root canary: the job runs
#     as the user, the canary is intact and nothing appears there;
#   * -u root (PBS's "run as"): refused, and no job of root's exists;
#   * -v with a newline: refused before anything is sent; -v and -N with
#     quotes, $(...) and ';': the job sees them as text, no file made;
#   * -W depend= on another user's job: the other user's job is untouched
#     (same state, same user), and the attacker's job is the attacker's;
#   * an oversized -l (nodes beyond any bound, a 100 kB -N): refused,
#     nothing submitted;
#   * the daemon is alive and root's ping answered throughout.
#
# usage: qsub_hostile.test.sh BUILD_DIR SOURCE_DIR
build=$(cd "${1:?usage: qsub_hostile.test.sh BUILD_DIR SOURCE_DIR}" && pwd)
src=$(cd "${2:?usage: qsub_hostile.test.sh BUILD_DIR SOURCE_DIR}" && pwd)
# shellcheck source=lib.sh
. "$src/tests/security/lib.sh"
# shellcheck source=../integration/lib/slurm.sh
. "$src/tests/integration/lib/slurm.sh"

sec_init
sec_slurm_daemon

hb=$build/bin/hpcbridge
work=$tmp/work
mkdir -p "$work" && chown "$uid:$gid" "$work"
# qsub ARGS...: as the attacker, from its directory; output in $out
qsub_as() {
	qrc=0
	out=$(cd "$work" && as_user env HPCBRIDGE_SOCKET="$sock" \
		HPCBRIDGE_CONFIG="$tmp/cfg.yaml" "$hb" qsub "$@" 2>&1) || qrc=$?
}
# wait_done JOB: until its state is final (60 s); prints it
wait_done() {
	local st
	for _ in $(seq 300); do
		st=$(scontrol show job "$1" 2>/dev/null |
			sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
		case $st in
		COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | "")
			echo "$st"
			return
			;;
		esac
		sleep 0.2
	done
	echo "$st"
}
# named JOB: the ids of Slurm jobs so named, of anyone, in any state
named() { squeue -h -a -t all -n "$1" -o %i; }
printf '#!/bin/sh\n#PBS -l walltime=00:01:00\necho "v=$V"\necho "n=$PBS_JOBNAME"\n' \
	>"$work/job.pbs"
chmod 644 "$work/job.pbs"

# 1. -o into a root-only directory, onto a root canary.
mkdir -p "$tmp/rootonly" && chmod 700 "$tmp/rootonly"
canary "$tmp/rootonly/canary"
qsub_as -o "$tmp/rootonly/canary" -e "$tmp/rootonly/new.err" job.pbs
id=${out%%.*}
if [ "$qrc" = 0 ] && [[ $id =~ ^[0-9]+$ ]]; then
	wait_done "$id" >/dev/null
	scontrol show job "$id" | grep -q "UserId=$user(" &&
		ok "the job is the user's" || bad "job $id: not the user's"
else
	ok "-o into root's directory refused: $out"
fi
canary_intact "$tmp/rootonly/canary" && ok "root's canary is intact" ||
	bad "root's canary changed"
[ ! -e "$tmp/rootonly/new.err" ] && ok "no file appeared in root's directory" ||
	bad "a file appeared: $(ls -l "$tmp/rootonly")"

# 2. -u root: never a job of root's.
qsub_as -u root -N asroot job.pbs
roots=$(squeue -h -a -t all -u root -o %i | wc -l)
[ "$qrc" != 0 ] && [ -z "$(named asroot)" ] && ok "-u root refused: $out" ||
	bad "-u root accepted: $out"
[ "$roots" = 0 ] && ok "root has no job" || bad "root has $roots job(s)"

# 3. -v with a newline: refused before anything is sent.
qsub_as -N newline -v "V=a
b" job.pbs
[ "$qrc" != 0 ] && ok "-v with a newline refused: ${out%%$'\n'*}" ||
	bad "-v with a newline accepted: $out"
[ -z "$(named newline)" ] && ok "nothing submitted" || bad "a job was submitted"
# quotes, $(...) and ';' are text to the job
evil="x'; touch $work/pwned; echo '\$(touch $work/pwned2)"
qsub_as -v "V=$evil" -N "n'q" job.pbs
id=${out%%.*}
if [ "$qrc" = 0 ] && [[ $id =~ ^[0-9]+$ ]]; then
	st=$(wait_done "$id")
	f=$work/n\'q.o$id
	# (qsub -v unquotes the value, as PBS does; the rest is text)
	grep -qF 'echo $(touch' "$f" 2>/dev/null && grep -qxF "n=n'q" "$f" &&
		ok "-v and -N values reach the job as text ($st)" ||
		bad "job output ($st): $(cat "$f" 2>&1; ls "$work")"
else
	bad "qsub -v with quotes: $out"
fi
[ ! -e "$work/pwned" ] && [ ! -e "$work/pwned2" ] &&
	ok "nothing ran from the values" || bad "a value was run as a command"

# 4. -W depend= on another user's job: that job is untouched.
other=hbo$$
ouid=$(sec_user "$other")
victim=$(cd /tmp && setpriv --reuid="$ouid" --regid="$(id -g "$other")" \
	--clear-groups -- sbatch --parsable --hold -o /dev/null \
	--wrap='sleep 30' 2>&1)
vstate=$(squeue -h -j "$victim" -o '%u %T %r' 2>&1)
qsub_as -W depend=afterok:"$victim" job.pbs
id=${out%%.*}
if [ "$qrc" = 0 ] && [[ $id =~ ^[0-9]+$ ]]; then
	scontrol show job "$id" | grep -q "UserId=$user(" &&
		ok "the dependent job is the attacker's" ||
		bad "dependent job $id: $(scontrol show job "$id" | head -3)"
	scancel "$id" 2>/dev/null || true
else
	ok "a dependency on another user's job refused: $out"
fi
[ "$(squeue -h -j "$victim" -o '%u %T %r' 2>&1)" = "$vstate" ] &&
	ok "the other user's job is untouched ($vstate)" ||
	bad "the other user's job: $(squeue -h -j "$victim" -o '%u %T %r')"
scancel "$victim" 2>/dev/null || true

# 5. Oversized requests: refused, nothing submitted.
qsub_as -N huge -l nodes=99999999999:ppn=1 job.pbs
[ "$qrc" != 0 ] && ok "nodes=99999999999 refused: $out" ||
	bad "nodes=99999999999 accepted: $out"
qsub_as -N "$(head -c 100000 /dev/zero | tr '\0' a)" job.pbs
[ "$qrc" != 0 ] && ok "a 100 kB -N refused: ${out:0:100}" ||
	bad "a 100 kB -N accepted"
long=$(squeue -h -a -t all -u "$user" -o %j | grep -c '^aaaaaaaaaaaaaaaa')
[ -z "$(named huge)" ] && [ "$long" = 0 ] && ok "nothing submitted" ||
	bad "a job was submitted"

# 6. Root is still served.
ms=$(ping_ms)
[ "$ms" -lt 1000 ] && ok "root's ping answered in $ms ms" ||
	bad "root's ping took $ms ms"
kill -0 "$dpid" 2>/dev/null && ok "the daemon is alive" || bad "the daemon died"
sec_end
