#!/usr/bin/env bash
# qdel_other.test.sh - qstat and qdel (issue 25) show and cancel only the
# caller's own jobs, as hpcbridge jobs and cancel do.
#
# A real Slurm (tests/integration/lib/slurm.sh) and a real hpcbridged on
# it.  The victim, user A, submits a job with hpcbridge submit; it runs on
# Slurm as A.  Then, as the attacker B:
#   * qstat, qstat -x and qstat -a list none of A's jobs; qstat A's-ID
#     says Unknown Job Id and fails; qstat -u A is refused (the daemon
#     lists everyone's jobs to administrators only) and shows nothing;
#   * qdel A's-ID, qdel A's-ID.server, qdel A's-ID[] and qdel of A's
#     gateway id (hb-...) each fail, naming the id;
#   * the damage check: A's job is still RUNNING in Slurm and running in
#     the daemon, and A's own qstat still shows it R;
#   * then A's own qdel cancels it (the same command works for its owner).
#
# usage: qdel_other.test.sh BUILD_DIR SOURCE_DIR
build=$(cd "${1:?usage: qdel_other.test.sh BUILD_DIR SOURCE_DIR}" && pwd)
src=$(cd "${2:?usage: qdel_other.test.sh BUILD_DIR SOURCE_DIR}" && pwd)
# shellcheck source=lib.sh
. "$src/tests/security/lib.sh"
# shellcheck source=../integration/lib/slurm.sh
. "$src/tests/integration/lib/slurm.sh"

sec_init
sec_slurm_daemon

victim=hbvic$$
vuid=$(sec_user "$victim") || {
	bad "cannot make user $victim"
	sec_end
}
vgid=$(id -g "$victim")
server=$(hostname)
server=${server%%.*}
mkdir -p "$tmp/pbs" "$tmp/work"
chown "$victim" "$tmp/work"
ln -s "$build/bin/hpcbridge" "$tmp/pbs/qstat"
ln -s "$build/bin/hpcbridge" "$tmp/pbs/qdel"
export HPCBRIDGE_SOCKET=$sock
unset HPCBRIDGE_CONFIG
as_victim() {
	(cd "$tmp/work" && setpriv --reuid="$vuid" --regid="$vgid" \
		--clear-groups -- "$@")
}

# A's job, through the daemon, as A
cat >"$tmp/work/a.sh" <<'EOF'
#!/bin/sh
#SBATCH --partition=debug
#SBATCH --time=5
#SBATCH --output=/dev/null
sleep 300
EOF
chmod 644 "$tmp/work/a.sh"
out=$(as_victim "$build/bin/hpcbridge" submit --json a.sh 2>&1) || true
o=$(printf '%s' "$out" | tr -d ' \n')
hbid=$(printf '%s' "$o" | sed -n 's/.*"id":"\(hb-[0-9]*\)".*/\1/p')
sid=$(printf '%s' "$o" | sed -n 's/.*"slurm_job_id":\([0-9]*\).*/\1/p')
[ -n "$hbid" ] && [ -n "$sid" ] || {
	bad "A's submit: $out"
	sec_end
}
for _ in $(seq 150); do
	[ "$(squeue -h -j "$sid" -o %T 2>/dev/null)" = RUNNING ] && break
	sleep 0.2
done
[ "$(squeue -h -j "$sid" -o '%T %u')" = "RUNNING $victim" ] &&
	ok "A's job $hbid is Slurm job $sid, RUNNING as A" ||
	bad "A's job: $(squeue -h -j "$sid" -o '%T %u' 2>&1)"

# B's own job, so that B's listings are not empty
mkdir -p "$tmp/bwork"
chown "$user" "$tmp/bwork"
cp "$tmp/work/a.sh" "$tmp/bwork/b.sh"
out=$(cd "$tmp/bwork" && as_user "$build/bin/hpcbridge" submit --json b.sh 2>&1) || true
bsid=$(printf '%s' "$out" | tr -d ' \n' |
	sed -n 's/.*"slurm_job_id":\([0-9]*\).*/\1/p')
[ -n "$bsid" ] && ok "B's own job is Slurm job $bsid" || bad "B's submit: $out"

# B looks
for args in "" "-x" "-a" "-f"; do
	# shellcheck disable=SC2086
	if ! out=$(as_user "$tmp/pbs/qstat" $args 2>&1); then
		bad "B's qstat $args failed: $out"
		continue
	fi
	case $out in
	*"$sid."* | *"$hbid"* | *"$victim"*) bad "B's qstat $args shows A's job: $out" ;;
	*"$bsid.$server"*) ok "B's qstat $args shows B's job, none of A's" ;;
	*) bad "B's qstat $args does not show B's job: $out" ;;
	esac
done
if out=$(as_user "$tmp/pbs/qstat" "$sid" 2>&1); then
	bad "B's qstat $sid: exit 0: $out"
else
	[ "$out" = "qstat: Unknown Job Id $sid.$server" ] &&
		ok "B's qstat $sid: Unknown Job Id, non-zero" ||
		bad "B's qstat $sid: '$out'"
fi
if out=$(as_user "$tmp/pbs/qstat" -u "$victim" 2>&1); then
	bad "B's qstat -u A: exit 0: $out"
else
	case $out in
	*"$sid"*) bad "B's qstat -u A shows A's job: $out" ;;
	*"administrators"*) ok "B's qstat -u A is refused: administrators only" ;;
	*) bad "B's qstat -u A: '$out'" ;;
	esac
fi

# B cancels, in every form
for id in "$sid" "$sid.$server" "$sid[]" "$hbid"; do
	if out=$(as_user "$tmp/pbs/qdel" "$id" 2>&1); then
		bad "B's qdel $id: exit 0: $out"
	else
		case $out in
		"qdel: Unknown Job Id $id"*) ok "B's qdel $id: Unknown Job Id, non-zero" ;;
		*) bad "B's qdel $id: '$out'" ;;
		esac
	fi
done

# the damage check: A's job untouched
sleep 1
[ "$(squeue -h -j "$sid" -o '%T %u')" = "RUNNING $victim" ] &&
	ok "A's job $sid is still RUNNING in Slurm" ||
	bad "A's job after B's qdel: $(squeue -h -t all -j "$sid" -o '%T %u' 2>&1)"
call "{\"op\":\"status\",\"id\":\"$hbid\"}"
has '"state": *"running"' && ok "the daemon still has A's job running" ||
	bad "the daemon's view of A's job: $(cat "$tmp/reply")"
out=$(as_victim "$tmp/pbs/qstat" 2>&1) || true
printf '%s\n' "$out" | grep -q "^$sid\.$server .* R debug$" &&
	ok "A's qstat shows the job R" || bad "A's qstat: $out"

# A may
out=$(as_victim "$tmp/pbs/qdel" "$sid" 2>&1) && [ -z "$out" ] &&
	ok "A's qdel $sid: silent, exit 0" || bad "A's qdel $sid: '$out'"
for _ in $(seq 150); do
	st=$(squeue -h -t all -j "$sid" -o %T 2>/dev/null)
	[ "$st" = CANCELLED ] && break
	sleep 0.2
done
[ "$st" = CANCELLED ] && ok "A's job is CANCELLED by A's qdel" ||
	bad "A's job after A's qdel: $st"
[ -z "$bsid" ] || scancel "$bsid" 2>/dev/null || true
kill -0 "$dpid" 2>/dev/null && ok "the daemon is alive" ||
	bad "the daemon died"
sec_end
