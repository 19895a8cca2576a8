#!/usr/bin/env bash
# ckpt_resume.test.sh - a job that counts with checkpoints starts on Slurm,
# is cancelled part way, and resumes on the cluster from its checkpoint,
# in the sandbox (real Slurm, hpcbridged, the emulated cluster in execute
# mode, the private Swift with s3api):
#
#   * examples/checkpoint/count.c under Open MPI, 2 ranks, 100 steps,
#     a checkpoint every 10 steps into a directory of the shared
#     filesystem that no cluster volume mounts
#     (--hpcbridge-checkpoint);
#   * on Slurm (partition debug) it is cancelled once step 30 or later is
#     checkpointed;
#   * the same script in partition gpu bursts: the daemon pushes the
#     directory to S3 through the user's agent, the launcher's init
#     container pulls it into the pod (an emptyDir), the job resumes from
#     the step it reached and finishes with the right sum, having run
#     only the steps left;
#   * the launcher pushes the final checkpoint, the daemon pulls it back:
#     the directory on the shared filesystem holds step 100;
#   * hpcbridge status shows both checkpoints and which one the job
#     resumed from; the aws CLI lists the checkpoints.
#
# usage: ckpt_resume.test.sh BUILD_DIR SRC_DIR
set -euo pipefail

build=$(cd "${1:?BUILD_DIR}" && pwd)
src=$(cd "${2:?SRC_DIR}" && pwd)
tmp=$(mktemp -d /tmp/hb-ckres.XXXXXX)
chmod 755 "$tmp"
export HB_SANDBOX_BACKEND=kubernetes
# shellcheck source=lib/sandbox_test.sh
. "$src/tests/integration/lib/sandbox_test.sh"
command -v mpicc >/dev/null || die "mpicc is missing (scripts/setup.sh)"
sandbox_test_up
ok "sandbox up"
[ -n "${AWS_ENDPOINT_URL:-}" ] || die "the sandbox printed no S3 endpoint"
aws() { /usr/bin/aws --endpoint-url "$AWS_ENDPOINT_URL" "$@"; }

wk=$HB_SANDBOX_WORK
u=$HB_SANDBOX_USER
mpicc -O1 -o "$wk/count" "$src/examples/checkpoint/count.c" ||
	die "mpicc examples/checkpoint/count.c"
chmod 755 "$wk/count"
# The checkpoint directory: the user's, on this host's filesystem, under
# no volume the cluster mounts (the pods get it through S3 only).
mkdir -p "$tmp/ckpt"
chown "$u" "$tmp/ckpt"
ck=$tmp/ckpt/count
sed -e "s|@CKPT@|$ck|g" >"$tmp/count.sh" <<'EOF'
#!/bin/bash
#SBATCH --job-name=count
#SBATCH --account=physics
#SBATCH --ntasks=2
#SBATCH --time=5
#SBATCH --output=count-%j.out
#SBATCH --hpcbridge-checkpoint=@CKPT@
mkdir -p @CKPT@
mpirun --oversubscribe -np 2 ./count @CKPT@ 100 10 0 150
EOF

wait_step() {
	local want=$1 i s
	for i in $(seq 600); do
		s=$(cat "$ck/step" 2>/dev/null || echo 0)
		[ "$s" -ge "$want" ] && return 0
		sleep 0.1
	done
	return 1
}

# 1. On Slurm, cancelled part way.
id=$(submit_user "$tmp/count.sh" -p debug)
[ -n "$id" ] || die "sbatch count.sh: $(cat "$tmp/sbatch.err")"
wait_step 30 || die "the job on Slurm never reached step 30: $(cat "$wk/count-$id.out" 2>&1)"
scancel "$id"
st=$(wait_final "$id")
[ "$st" = CANCELLED ] && ok "on Slurm: cancelled part way" || bad "on Slurm: $st"
s1=$(cat "$ck/step")
[ "$s1" -ge 30 ] && [ "$s1" -lt 100 ] &&
	ok "on Slurm: checkpointed step $s1 of 100" ||
	bad "on Slurm: step '$s1'"
grep -q "^resumed from step 0$" "$wk/count-$id.out" &&
	ok "on Slurm: started from step 0" ||
	bad "on Slurm: $(cat "$wk/count-$id.out")"

# A link the user planted in the directory: the agent that scans it runs
# as the user and never follows a link, so what it names is never sent.
ln -s /etc/shadow "$ck/leak"

# 2. The same script bursts and resumes from that checkpoint.
id=$(submit_user "$tmp/count.sh" -p gpu)
[ -n "$id" ] || die "sbatch count.sh -p gpu: $(cat "$tmp/sbatch.err")"
[ "$(field "$id" Partition)" = burst ] && ok "burst: a proxy in burst" ||
	bad "burst: partition $(field "$id" Partition)"
hb=$(gateway_id "$id")
st=$(wait_final "$id")
if [ "$st" = COMPLETED ]; then
	ok "burst: COMPLETED"
else
	bad "burst: $st"
	# what the launcher pod's containers said
	for f in "$box"/kube/work/default/*/log*; do
		printf -- '--- %s\n' "$f"
		tail -n 20 "$f"
	done
fi
out=$wk/count-$id.out
grep -q "^resumed from step $s1$" "$out" &&
	ok "burst: resumed from step $s1, the checkpoint made on Slurm" ||
	bad "burst output: $(cat "$out" 2>&1)"
left=$((100 - s1))
grep -q "^result 15150 expected 15150 ran $left steps$" "$out" &&
	ok "burst: the right sum, running only the $left steps left" ||
	bad "burst output: $(cat "$out" 2>&1)"

# 3. The final checkpoint came back to the shared filesystem.
[ "$(cat "$ck/step" 2>/dev/null)" = 100 ] &&
	[ -f "$ck/rank-0.100" ] && [ -f "$ck/rank-1.100" ] &&
	ok "back on the shared filesystem: step 100, both ranks' files" ||
	bad "the directory after the burst: $(ls -l "$ck" 2>&1) step $(cat "$ck/step" 2>&1)"
[ "$(stat -c %U "$ck/step")" = "$u" ] &&
	ok "what came back is the user's, not root's" ||
	bad "owner of $ck/step: $(stat -c %U "$ck/step")"

# 4. What status and S3 say.
status=$(hpcbridge status "$hb" 2>&1)
grep -q "pushed .* $ck -> s3://.*the job resumed from it on the cluster" <<<"$status" &&
	ok "status: the checkpoint pushed before the start, resumed from" ||
	bad "status: $status"
grep -q "pulled .* s3://.* -> $ck" <<<"$status" &&
	ok "status: the checkpoint pulled back at the end" ||
	bad "status: $status"
url=$(sed -n 's/.*pushed  *[^ ]*  *[^ ]* -> \(s3:[^ ]*\) .*/\1/p' <<<"$status" | head -n1)
n=$(aws s3 ls "$url/checkpoints/" 2>/dev/null | grep -c '\.json$' || true)
[ "$n" -ge 2 ] && ok "aws s3 ls: $n checkpoints at $url" ||
	bad "aws s3 ls $url/checkpoints/: $n"
leak=$(sha256sum /etc/shadow | cut -d' ' -f1)
if aws s3 ls --recursive "$url/" 2>/dev/null | grep -q "$leak"; then
	bad "the linked /etc/shadow was pushed"
else
	ok "the planted link was not followed: /etc/shadow is not in S3"
fi
sandbox_test_end
