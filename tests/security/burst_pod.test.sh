#!/usr/bin/env bash
# burst_pod.test.sh - what a user controls of a burst job's pods, attacked
# as that user (the sandbox's, unprivileged) on the real Slurm and the
# emulated cluster (namespace default enforcing Pod Security "restricted",
# kubernetes.volumes mapping only the sandbox's work directory,
# kubernetes.allowed_images):
#
#   * --container naming an image outside the allow-list: the job never
#     reaches the cluster (no MPIJob with that image, or at all), it stays
#     on Slurm and the decision names the image;
#   * --output escaping the mapped directory with "..", and a working
#     directory no volume maps: no MPIJob, the job stays on Slurm as the
#     user, the decision names the path, and nothing is written where the
#     path led;
#   * a job that does burst runs as the user: runAsUser is the user's uid,
#     whatever the script sets in its environment.
#
# usage: burst_pod.test.sh BUILD_DIR SRC_DIR
set -euo pipefail

build=$(cd "${1:?BUILD_DIR}" && pwd)
src=$(cd "${2:?SRC_DIR}" && pwd)
tmp=$(mktemp -d /tmp/hb-secpod.XXXXXX)
chmod 755 "$tmp"
export HB_SANDBOX_BACKEND=kubernetes
# shellcheck source=../integration/lib/sandbox_test.sh
. "$src/tests/integration/lib/sandbox_test.sh"
sandbox_test_up
ok "sandbox up"
wk=$HB_SANDBOX_WORK
uid=$(id -u "$HB_SANDBOX_USER")
k() { /usr/bin/kubectl --request-timeout=10s "$@"; }

# The number of MPIJobs carrying gateway id $1.
mpijobs_of() {
	k get mpijobs -l "hpcbridge.io/gateway-id=$1" -o name 2>/dev/null |
		grep -c . || true
}

# kept JOB WHAT TEXT: job JOB stayed on Slurm (its own partition, never a
# proxy in burst), made no MPIJob, and its decision says TEXT.
kept() {
	local id=$1 what=$2 text=$3 hb part
	if [ -z "$id" ]; then
		bad "$what: sbatch refused it: $(tail -n 3 "$tmp/sbatch.err")"
		return
	fi
	hb=$(gateway_id "$id")
	part=$(field "$id" Partition)
	[ "$part" = gpu ] && ok "$what: stays on Slurm (partition $part)" ||
		bad "$what: partition $part"
	[ "$(mpijobs_of "$hb")" = 0 ] && ok "$what: no MPIJob in the cluster" ||
		bad "$what: an MPIJob exists for $hb"
	hpcbridge status "$hb" >"$tmp/status" 2>&1 || true
	grep -qF -- "$text" "$tmp/status" &&
		ok "$what: the decision says '$text'" ||
		bad "$what: status: $(head -c 600 "$tmp/status")"
}

printf '%s\n' '#!/bin/sh' '#SBATCH --partition=gpu' \
	'#SBATCH --output=job-%j.out' 'echo ran' >"$tmp/job.sh"

# 1. An image the site does not allow.
id=$(submit_user "$tmp/job.sh" --container=evil.example/miner:1)
kept "$id" "--container evil.example/miner:1" \
	"image 'evil.example/miner:1' is not one the site allows"
[ -n "$id" ] && scancel "$id" 2>/dev/null || true
if k get mpijobs -o yaml 2>/dev/null | grep -q "evil.example"; then
	bad "an MPIJob names evil.example/miner:1"
else
	ok "no MPIJob anywhere names the image"
fi

# 2. --output that climbs out of the mapped directory.
id=$(submit_user "$tmp/job.sh" "--output=$wk/../../../etc/hbpwn-%j.out")
kept "$id" "--output with .." "a path with a '..' component"
st=$(wait_final "$id")
if ls /etc/hbpwn-* >/dev/null 2>&1; then
	bad "a file was written in /etc: $(ls -l /etc/hbpwn-*)"
	rm -f /etc/hbpwn-*
else
	ok "--output with ..: nothing written in /etc (the job ended $st)"
fi

# 3. A working directory no volume maps.
mkdir -p "$tmp/elsewhere" && chmod 777 "$tmp/elsewhere"
id=$(submit_user "$tmp/job.sh" "--chdir=$tmp/elsewhere")
kept "$id" "--chdir outside the volumes" \
	"is not on a volume the cluster mounts"
[ -n "$id" ] && scancel "$id" 2>/dev/null || true

# 4. A job that bursts runs as its user, whatever its environment says.
printf '%s\n' '#!/bin/sh' '#SBATCH --partition=gpu' \
	'#SBATCH --output=who-%j.out' \
	'#SBATCH --export=ALL,SLURM_JOB_UID=0,USER=root,HOME=/root' \
	'id -u' >"$tmp/who.sh"
id=$(submit_user "$tmp/who.sh")
hb=$(gateway_id "$id")
[ "$(field "$id" Partition)" = burst ] && ok "who.sh bursts" ||
	bad "who.sh: partition $(field "$id" Partition)"
st=$(wait_final "$id")
k get mpijob "$hb" -o \
	jsonpath='{.spec.mpiReplicaSpecs.Launcher.template.spec.securityContext.runAsUser}' \
	>"$tmp/ras" 2>&1 || true
[ "$(cat "$tmp/ras")" = "$uid" ] &&
	ok "who.sh: runAsUser is the user's uid ($uid)" ||
	bad "who.sh: runAsUser '$(cat "$tmp/ras")'"
[ "$(tail -n 1 "$wk/who-$id.out" 2>/dev/null)" = "$uid" ] &&
	ok "who.sh: the launcher ran as uid $uid ($st)" ||
	bad "who.sh: $st, output $(cat "$wk/who-$id.out" 2>&1)"

sandbox_test_end
echo "all burst pod attack checks passed"
