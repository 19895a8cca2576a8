#!/usr/bin/env bash
# submit_as_user.test.sh - issue 17, "submit reaches Slurm as root".
#
# The daemon submits {"op":"submit"} for the calling user.  The partition
# comes from the user's own #SBATCH lines, and Slurm checks RootOnly
# partitions (and site job_submit policies keyed on submit_uid) against
# the uid that made the RPC.  Before the fix that was root: any user got
# a job into a RootOnly partition.  Now the RPC is made by a child that
# has become the user, so Slurm refuses it as it refuses the user's own
# sbatch.
#
# A real Slurm (tests/integration/lib/slurm.sh) with a RootOnly partition
# `rootonly`; a real hpcbridged on it.  As the unprivileged user:
#   * submit a script whose #SBATCH names the RootOnly partition: refused
#     (EPERM), and the damage check: no job at all in that partition
#     (squeue, every state) and none of the user's in scontrol;
#   * submit the same script to the default partition: accepted, squeue
#     shows the job as the user's, and the daemon's admin comment (only
#     root may set it) is on it;
#   * root's ping is answered in time throughout.
#
# usage: submit_as_user.test.sh BUILD_DIR SOURCE_DIR
build=$(cd "${1:?usage: submit_as_user.test.sh BUILD_DIR SOURCE_DIR}" &&
	pwd)
src=$(cd "${2:?usage: submit_as_user.test.sh BUILD_DIR SOURCE_DIR}" &&
	pwd)
# shellcheck source=lib.sh
. "$src/tests/security/lib.sh"
# shellcheck source=../integration/lib/slurm.sh
. "$src/tests/integration/lib/slurm.sh"

sec_init
export HB_SLURM_EXTRA_CONF="PartitionName=rootonly Nodes=hb1 MaxTime=INFINITE State=UP RootOnly=YES"
sec_slurm_daemon

# The user's script: #SBATCH names the partition.
script() {
	printf '#!/bin/sh\\n#SBATCH --partition=%s\\n#SBATCH --time=5\\n' "$1"
	printf '#SBATCH --output=/dev/null\\nsleep 30\\n'
}
submit_json() {
	printf '{"op":"submit","name":"%s","cwd":"/tmp","script":"%s"}' \
		"$1" "$(script "$2")"
}
slurm_id() { sed -n 's/.*"slurm_job_id": *\([0-9]*\).*/\1/p' "$tmp/reply"; }

# 1. The RootOnly partition, named by the user's own #SBATCH.
call_as "$(submit_json sneaky rootonly)"
echo "reply to the RootOnly submit: $(cat "$tmp/reply")"
if [ "$rc" != 0 ] && has '"EPERM"' && has 'Access/permission denied'; then
	ok "the submit into the RootOnly partition is refused (EPERM)"
else
	bad "the submit into the RootOnly partition was not refused: rc $rc"
fi
in_part=$(squeue -h -t all -p rootonly -o '%i %u %j' 2>&1)
if [ -z "$in_part" ]; then
	ok "no job in the RootOnly partition"
else
	bad "jobs in the RootOnly partition: $in_part"
fi
mine=$(scontrol -o show job 2>/dev/null | grep -c "UserId=$user(" || true)
if [ "$mine" = 0 ]; then
	ok "the user has no Slurm job"
else
	bad "the user has $mine Slurm job(s) after the refused submit"
fi

# 2. The same script in a partition the user may use: the user's job.
call_as "$(submit_json fair debug)"
sid=$(slurm_id)
if [ "$rc" = 0 ] && [ -n "$sid" ]; then
	ok "the submit into debug is accepted (Slurm job $sid)"
	who=$(squeue -h -t all -j "$sid" -o '%u %P' 2>&1)
	if [ "$who" = "$user debug" ]; then
		ok "squeue shows the job as the user's, in debug"
	else
		bad "squeue: '$who', want '$user debug'"
	fi
	if scontrol -o show job "$sid" |
		grep -q 'AdminComment=hpcbridge:hb-[0-9]* target=slurm'; then
		ok "the daemon's admin comment (root's) is on the user's job"
	else
		bad "no admin comment: $(scontrol -o show job "$sid")"
	fi
	scancel "$sid" 2>/dev/null || true
else
	bad "the submit into debug failed: rc $rc $(cat "$tmp/reply")"
fi

# 3. Root is still served.
ms=$(ping_ms)
if [ "$ms" -lt 1000 ]; then
	ok "root's ping answered in $ms ms"
else
	bad "root's ping took $ms ms"
fi
kill -0 "$dpid" 2>/dev/null && ok "the daemon is alive" ||
	bad "the daemon died"
sec_end
