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
#   * while it runs, the launcher pushes its checkpoint every 2 s
#     (checkpoints.interval) and the daemon brings the newest back: the
#     directory moves on before the job ends;
#   * the launcher pushes the final checkpoint, the daemon pulls it back:
#     the directory on the shared filesystem holds step 100;
#   * hpcbridge status shows both checkpoints and which one the job
#     resumed from; the aws CLI lists the checkpoints;
#   * the other way: a burst job Kueue preempts (a job of higher priority
#     takes the quota) is stopped, its launcher pushes its checkpoint, the
#     daemon brings it back and places the job on Slurm
#     (kubernetes.preempted_replace_after), where it resumes from it.
#
# usage: ckpt_resume.test.sh BUILD_DIR SRC_DIR
set -euo pipefail

build=$(cd "${1:?BUILD_DIR}" && pwd)
src=$(cd "${2:?SRC_DIR}" && pwd)
tmp=$(mktemp -d /tmp/hb-ckres.XXXXXX)
chmod 755 "$tmp"
export HB_SANDBOX_BACKEND=kubernetes
# the checkpoint's trips while a burst job runs: every 2 s
export HB_SANDBOX_CKPT_INTERVAL=2
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
	die "burst: the job stayed in partition $(field "$id" Partition)"
hb=$(gateway_id "$id")
[ -n "$hb" ] || die "burst: no gateway id on job $id"
# While it runs on the cluster, its checkpoint comes back now and then
# (checkpoints.interval): the directory here moves on before the end.
mid=
for _ in $(seq 600); do
	s=$(cat "$ck/step" 2>/dev/null || echo 0)
	if [ "$s" -gt "$s1" ] && [ "$s" -lt 100 ]; then
		mid=$s
		break
	fi
	case $(field "$id" JobState) in RUNNING | PENDING) ;; *) break ;; esac
	sleep 0.1
done
[ -n "$mid" ] &&
	ok "burst: while it ran, its checkpoint of step $mid came back" ||
	bad "burst: the directory did not move on while the job ran"
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
status=$(hpcbridge status "$hb" 2>&1 || true)
grep -q "pushed .* $ck -> s3://.*the job resumed from it on the cluster" <<<"$status" &&
	ok "status: the checkpoint pushed before the start, resumed from" ||
	bad "status: $status"
grep -q "pulled .* s3://.* -> $ck .*; S3 keeps [0-9]* bytes of its checkpoints" <<<"$status" &&
	ok "status: the checkpoint pulled back at the end, and what S3 keeps (checkpoints.keep 3)" ||
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

# 5. The other way: preempted by Kueue on the cluster, placed on Slurm
# (kubernetes.preempted_replace_after), resumed there from the checkpoint
# the launcher pushed when it was stopped.
k() { /usr/bin/kubectl --request-timeout=10s "$@"; }
k get localqueue burst >/dev/null 2>&1 ||
	die "the sandbox's Kueue (LocalQueue burst) is not there"
replace_after 2
ck2=$tmp/ckpt/count2
sed -e "s|$ck|$ck2|g" "$tmp/count.sh" >"$tmp/count2.sh"
id=$(submit_user "$tmp/count2.sh" -p gpu)
[ -n "$id" ] || die "sbatch count2.sh: $(cat "$tmp/sbatch.err")"
[ "$(field "$id" Partition)" = burst ] ||
	die "count2: the job stayed in partition $(field "$id" Partition)"
hb=$(gateway_id "$id")
# the pods' copy of the directory: the emptyDir on its parent
step_in_pod() {
	local f
	for f in "$box"/kube/work/default/"$hb"-launcher-*/volumes/hpcbridge-ckpt/count2/step; do
		[ -r "$f" ] && head -n1 "$f" && return 0
	done
	echo 0
}
for _ in $(seq 600); do
	s=$(step_in_pod)
	[ "${s:-0}" -ge 30 ] && break
	sleep 0.1
done
[ "${s:-0}" -ge 30 ] && ok "cluster: the job reached step $s in its pod" ||
	die "cluster: the job never reached step 30 ($(step_in_pod))"
# Kueue preempts it for a job of higher priority that needs the quota.
preemptor_create
# placed on Slurm: a new Slurm job tagged with the same gateway id
new=
for _ in $(seq 300); do
	new=$(sqlite3 -cmd '.timeout 5000' "$box/state.db" \
		"SELECT slurm_job_id FROM jobs WHERE id = '$hb'" 2>/dev/null)
	[ -n "$new" ] && [ "$new" != "$id" ] && break
	sleep 0.2
done
[ -n "$new" ] && [ "$new" != "$id" ] &&
	ok "preempted: placed on Slurm as job $new" ||
	die "preempted: not placed on Slurm (slurm job '$new')"
st=$(wait_final "$new")
k delete mpijob preemptor --wait=false >/dev/null 2>&1 || true
out=$wk/count-$new.out
[ "$st" = COMPLETED ] && ok "on Slurm again: COMPLETED" ||
	bad "on Slurm again: $st: $(cat "$out" 2>&1)"
r=$(sed -n 's/^resumed from step \([0-9]*\)$/\1/p' "$out")
[ "${r:-0}" -ge 30 ] && [ "$r" -lt 100 ] &&
	ok "on Slurm again: resumed from step $r, pushed by the stopped pod" ||
	bad "on Slurm again: $(cat "$out" 2>&1)"
grep -q "^result 15150 expected 15150 ran $((100 - ${r:-0})) steps$" "$out" &&
	ok "on Slurm again: the right sum, running only the steps left" ||
	bad "on Slurm again: $(cat "$out" 2>&1)"
hpcbridge status "$hb" 2>&1 | grep -q "pulled .* -> $ck2" &&
	ok "status: the checkpoint pulled before it was placed on Slurm" ||
	bad "status: $(hpcbridge status "$hb" 2>&1)"
sandbox_test_end
