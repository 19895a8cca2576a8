#!/usr/bin/env bash
# qsub.test.sh - hpcbridge qsub end to end in the sandbox (real slurmctld
# and two slurmds, job_submit/hpcbridge, hpcbridged), as the sandbox's
# unprivileged user, through a link named qsub:
#
#   * a Torque script (2 nodes x 2 processors, job-wide mem=2gb, -q batch
#     mapped to partition debug by pbs.queues, a walltime the command
#     line overrides, -j oe -o FILE) prints "ID.srv"; Slurm holds 2 nodes,
#     4 tasks, 2 per node, 1 GiB per node (PBS's job-wide 2 GB), the
#     command line's time, the output file, the user, the partition;
#   * the job completes, and the script (unchanged) saw PBS_JOBID,
#     PBS_JOBNAME, PBS_O_WORKDIR, PBS_QUEUE, PBS_ENVIRONMENT,
#     PBS_NUM_NODES, PBS_NUM_PPN, PBS_NP, PBS_O_HOST and a PBS_NODEFILE of
#     4 lines, each node twice; $0 is a copy of the script, byte for byte;
#   * a PBS Pro select= script: 2 chunks of 2 MPI processes and 1 GB each
#     are 2 nodes, 4 tasks, 1G per node, and its script sees them;
#   * an array (-t 1-2) prints "ID[].srv", each task sees its
#     PBS_ARRAYID and writes PBS's NAME.oID-INDEX;
#   * a script on standard input runs, named STDIN;
#   * --dry-run prints what Slurm would receive; with pbs.submit: sbatch
#     a job in a queue that bursts goes through the plugin and placement,
#     runs remotely, and the script sees PBS's variables there (a job qsub
#     sends through hpcbridged is pinned to Slurm: the daemon tags it and
#     the plugin leaves it be);
#   * a queue pbs.queues does not list is refused naming it, and nothing
#     reaches Slurm;
#   * -F "one two" reaches the script as $1 and $2;
#   * qstat shows a qsub job on Slurm and one that bursts, both R, as
#     ID.srv; a third, submitted held (-h), waits held until qdel cancels
#     it; qdel ends the other two.
#
# HB_SANDBOX_BACKEND=kubernetes runs the burst job in the emulated
# cluster's launcher pod instead of the local backend.
#
# usage: qsub.test.sh BUILD_DIR SRC_DIR
set -euo pipefail

build=$(cd "${1:?BUILD_DIR}" && pwd)
src=$(cd "${2:?SRC_DIR}" && pwd)
tmp=$(mktemp -d /tmp/hb-qsub.XXXXXX)
chmod 755 "$tmp"
export HB_SANDBOX_BACKEND=${HB_SANDBOX_BACKEND:-local}
export HB_SLURM_NODES=2 HB_SLURM_REAL_NODES=2
# shellcheck source=lib/sandbox_test.sh
. "$src/tests/integration/lib/sandbox_test.sh"
sandbox_test_up
ok "sandbox up"

wk=$HB_SANDBOX_WORK
user=$HB_SANDBOX_USER
# qsub, installed as a link to hpcbridge, and the site's queues
mkdir -p "$tmp/bin"
ln -s "$build/bin/hpcbridge" "$tmp/bin/qsub"
printf 'pbs:\n  queues: {batch: debug, gpuq: gpu}\n  server_name: srv\n  submit: daemon\n' \
	>>"$HPCBRIDGE_CONFIG"
# as_user CMD...: run in the work directory as the sandbox's user
as_user() {
	(cd "$wk" && runuser -u "$user" -- env PATH="$tmp/bin:$PATH" "$@")
}

# ran_with ID FILE LINE WHAT: job ID ends, and FILE (in the work
# directory) holds LINE
ran_with() {
	local st
	st=$(wait_final "$1")
	grep -qx -- "$3" "$wk/$2" 2>/dev/null && ok "$4 ($st)" ||
		bad "$4 ($st): $(cat "$wk/$2" 2>&1)"
}

cat >"$wk/vars.pbs" <<'EOF'
#!/bin/bash
#PBS -N pbsvars
#PBS -q batch
#PBS -l nodes=2:ppn=2
#PBS -l mem=2gb
#PBS -l walltime=00:05:00
#PBS -j oe
#PBS -o vars.log
echo "jobid=$PBS_JOBID"
echo "name=$PBS_JOBNAME"
echo "workdir=$PBS_O_WORKDIR"
echo "queue=$PBS_QUEUE"
echo "env=$PBS_ENVIRONMENT"
echo "nodes=$PBS_NUM_NODES ppn=$PBS_NUM_PPN np=$PBS_NP"
echo "host=$PBS_O_HOST"
echo "nodefile=$(sort "$PBS_NODEFILE" | uniq -c | awk '{print $1}' | tr '\n' ' ')"
echo "lines=$(wc -l <"$PBS_NODEFILE")"
cmp -s "$0" "$PBS_O_WORKDIR/vars.pbs" && echo "script=same"
EOF
chmod 644 "$wk/vars.pbs"

# 1. A Torque script with a command-line override.
out=$(as_user qsub -l walltime=00:07:00 vars.pbs 2>"$tmp/qsub.err") || true
id=${out%%.*}
if [[ $out =~ ^[0-9]+\.srv$ ]]; then
	ok "qsub printed $out"
else
	die "qsub vars.pbs: '$out' $(cat "$tmp/qsub.err")"
fi
[[ $(field "$id" NumNodes) =~ ^2(-2)?$ ]] && ok "2 nodes" ||
	bad "NumNodes: $(field "$id" NumNodes)"
[ "$(field "$id" NumTasks)" = 4 ] && ok "4 tasks" ||
	bad "NumTasks: $(field "$id" NumTasks)"
scontrol show job "$id" | grep -q "NtasksPerN:B:S:C=2:" &&
	ok "2 tasks per node" ||
	bad "tasks per node: $(scontrol show job "$id" | grep -o 'NtasksPerN[^ ]*')"
[ "$(field "$id" MinMemoryNode)" = 1G ] &&
	ok "job-wide mem=2gb is 1G per node on 2 nodes" ||
	bad "MinMemoryNode: $(field "$id" MinMemoryNode)"
[ "$(field "$id" TimeLimit)" = 00:07:00 ] &&
	ok "the command line's walltime wins" ||
	bad "TimeLimit: $(field "$id" TimeLimit)"
[ "$(field "$id" StdOut)" = "$wk/vars.log" ] && ok "output file" ||
	bad "StdOut: $(field "$id" StdOut)"
[ "$(field "$id" Partition)" = debug ] && ok "queue batch is partition debug" ||
	bad "Partition: $(field "$id" Partition)"
[ "$(field "$id" JobName)" = pbsvars ] && ok "job name" ||
	bad "JobName: $(field "$id" JobName)"
field "$id" UserId | grep -q "^$user(" && ok "submitted as $user" ||
	bad "UserId: $(field "$id" UserId)"
st=$(wait_final "$id")
[ "$st" = COMPLETED ] && ok "job completed" || bad "job: $st"
log=$wk/vars.log
check() {
	grep -qx -- "$1" "$log" && ok "the script saw $1" ||
		bad "expected '$1' in: $(cat "$log" 2>&1)"
}
check "jobid=$id.srv"
check "name=pbsvars"
check "workdir=$wk"
check "queue=batch"
check "env=PBS_BATCH"
check "nodes=2 ppn=2 np=4"
check "host=$(hostname)"
check "nodefile=2 2 "
check "lines=4"
check "script=same"

# 1b. A PBS Pro script: select chunks keep their per-node shape.
cat >"$wk/pro.pbs" <<'EOF'
#!/bin/sh
#PBS -N pro
#PBS -l select=2:ncpus=2:mpiprocs=2:mem=1gb
#PBS -l walltime=00:02:00
#PBS -j oe
echo "pro nodes=$PBS_NUM_NODES np=$PBS_NP index=${PBS_ARRAY_INDEX:-none}"
EOF
chmod 644 "$wk/pro.pbs"
out=$(as_user qsub -q batch pro.pbs 2>"$tmp/qsub.err") || true
if [[ $out =~ ^[0-9]+\.srv$ ]]; then
	pid=${out%%.*}
	[[ $(field "$pid" NumNodes) =~ ^2(-2)?$ ]] &&
		[ "$(field "$pid" NumTasks)" = 4 ] &&
		[ "$(field "$pid" MinMemoryNode)" = 1G ] &&
		ok "select=2:ncpus=2:mpiprocs=2:mem=1gb: 2 nodes, 4 tasks, 1G per node" ||
		bad "PBS Pro job: $(scontrol show job "$pid" | grep -E 'NumNodes|MinMemory')"
	ran_with "$pid" "pro.o$pid" "pro nodes=2 np=4 index=none" \
		"the PBS Pro script saw its variables"
else
	bad "qsub pro.pbs: '$out' $(cat "$tmp/qsub.err")"
fi

# 2. An array: ID[].srv, each task its index and its own file.
printf '#!/bin/sh\n#PBS -N arr\necho "task=$PBS_ARRAYID id=$PBS_JOBID"\n' \
	>"$wk/arr.pbs"
chmod 644 "$wk/arr.pbs"
out=$(as_user qsub -t 1-2 -q batch arr.pbs 2>"$tmp/qsub.err") || true
if [[ $out =~ ^[0-9]+\[\]\.srv$ ]]; then
	ok "an array prints $out"
	aid=${out%%[*}
	for t in 1 2; do
		st=$(wait_final "${aid}_$t")
		f=$wk/arr.o$aid-$t
		grep -qx "task=$t id=$aid\[$t\].srv" "$f" 2>/dev/null &&
			ok "task $t: PBS_ARRAYID and PBS_JOBID, in arr.o$aid-$t" ||
			bad "task $t ($st): $(ls "$wk"; cat "$f" 2>&1)"
	done
else
	bad "qsub -t 1-2: '$out' $(cat "$tmp/qsub.err")"
fi

# 3. The script on standard input.
out=$(printf '#!/bin/sh\n#PBS -q batch\necho from-stdin\n' |
	as_user qsub 2>"$tmp/qsub.err") || true
if [[ $out =~ ^[0-9]+\.srv$ ]]; then
	sid=${out%%.*}
	[ "$(field "$sid" JobName)" = STDIN ] && ok "stdin: job name STDIN" ||
		bad "stdin JobName: $(field "$sid" JobName)"
	st=$(wait_final "$sid")
	grep -qx from-stdin "$wk/STDIN.o$sid" 2>/dev/null &&
		ok "stdin script ran, output in STDIN.o$sid" ||
		bad "stdin ($st): $(ls "$wk")"
else
	bad "qsub from stdin: '$out' $(cat "$tmp/qsub.err")"
fi

# 4. The burst path.  A job submitted through hpcbridged is pinned to
# Slurm (the daemon tags it, and job_submit/hpcbridge leaves it be); with
# pbs.submit: sbatch, qsub runs sbatch as the user and the job goes
# through the plugin and placement: queue gpuq (partition gpu) bursts,
# the proxy's remote side runs the same wrapper, and the script sees
# PBS's variables there too.
printf '#!/bin/sh\n#PBS -N burst\n#PBS -l nodes=1:ppn=1\n#PBS -j oe\n%s\n%s\n' \
	'echo "burst jobid=$PBS_JOBID env=$PBS_ENVIRONMENT np=$PBS_NP"' \
	'cmp -s "$0" "$PBS_O_WORKDIR/burst.pbs" && echo "burst script=same"' \
	>"$wk/burst.pbs"
chmod 644 "$wk/burst.pbs"
as_user qsub --dry-run -q gpuq burst.pbs >"$tmp/burst.sh" 2>"$tmp/qsub.err" ||
	bad "qsub --dry-run: $(cat "$tmp/qsub.err")"
grep -q '^#SBATCH --partition=gpu$' "$tmp/burst.sh" &&
	ok "--dry-run: queue gpuq is partition gpu" ||
	bad "--dry-run: $(head -n 12 "$tmp/burst.sh")"
printf 'pbs:\n  queues: {batch: debug, gpuq: gpu}\n  server_name: srv\n  submit: sbatch\n' \
	>"$tmp/sbatch.yaml"
chmod 644 "$tmp/sbatch.yaml"
out=$(as_user qsub --config "$tmp/sbatch.yaml" -q gpuq burst.pbs \
	2>"$tmp/qsub.err") || true
if [[ $out =~ ^[0-9]+\.srv$ ]]; then
	bid=${out%%.*}
	ok "pbs.submit sbatch: qsub printed $out"
	st=$(wait_final "$bid")
	[ "$(field "$bid" Partition)" = burst ] &&
		ok "the job bursts (its proxy is in burst)" ||
		bad "burst job partition: $(field "$bid" Partition)"
	f=$wk/burst.o$bid
	# the job's id where it runs is its proxy's, the one qsub printed
	# and qstat and squeue show (local backend and launcher pod alike)
	grep -qx "burst jobid=$bid\.srv env=PBS_BATCH np=1" "$f" 2>/dev/null &&
		ok "the burst job saw PBS's variables ($st): $(head -n1 "$f")" ||
		bad "burst job ($st): $(cat "$f" 2>&1)"
	grep -qx "burst script=same" "$f" 2>/dev/null &&
		ok "the burst job ran the script byte for byte" ||
		bad "burst job's script differs: $(cat "$f" 2>&1)"
else
	bad "qsub with pbs.submit sbatch: '$out' $(cat "$tmp/qsub.err")"
fi

# 5. A queue the site does not have: refused, nothing submitted.
if out=$(as_user qsub -q nosuch -N refused$$ vars.pbs 2>&1); then
	bad "qsub -q nosuch was accepted: $out"
else
	printf '%s' "$out" | grep -q "nosuch: no such queue" &&
		ok "an unknown queue is refused, naming it" ||
		bad "qsub -q nosuch: $out"
fi
# (by name: a finished job may leave squeue at any time)
[ -z "$(squeue -h -a -t all -n "refused$$" -o %i)" ] &&
	ok "nothing reached Slurm" || bad "a job refused$$ is in Slurm"

# 6. -F: the script's arguments.
printf '#!/bin/sh\n#PBS -N args\n#PBS -j oe\necho "args=$#:$1:$2"\n' \
	>"$wk/args.pbs"
chmod 644 "$wk/args.pbs"
out=$(as_user qsub -q batch -F "one two" args.pbs 2>"$tmp/qsub.err") || true
if [[ $out =~ ^[0-9]+\.srv$ ]]; then
	fid=${out%%.*}
	ran_with "$fid" "args.o$fid" "args=2:one:two" \
		"-F \"one two\": the script saw \$1 and \$2"
else
	bad "qsub -F: '$out' $(cat "$tmp/qsub.err")"
fi

# 7. qstat shows a job on Slurm and one that bursts; qdel cancels a
# third, submitted held.
ln -s "$build/bin/hpcbridge" "$tmp/bin/qstat"
ln -s "$build/bin/hpcbridge" "$tmp/bin/qdel"
for n in stay away third; do
	printf '#!/bin/sh\n#PBS -N %s\n#PBS -l nodes=1:ppn=1\n#PBS -j oe\nsleep 300\n' \
		"$n" >"$wk/$n.pbs"
	chmod 644 "$wk/$n.pbs"
done
sid=$(as_user qsub -q batch stay.pbs 2>"$tmp/qsub.err") || true
aid=$(as_user qsub --config "$tmp/sbatch.yaml" -q gpuq away.pbs \
	2>>"$tmp/qsub.err") || true
hid=$(as_user qsub --config "$tmp/sbatch.yaml" -h -q batch third.pbs \
	2>>"$tmp/qsub.err") || true
[[ $sid =~ ^[0-9]+\.srv$ && $aid =~ ^[0-9]+\.srv$ && $hid =~ ^[0-9]+\.srv$ ]] ||
	die "qsub stay/away/third: '$sid' '$aid' '$hid' $(cat "$tmp/qsub.err")"
sid=${sid%%.*} aid=${aid%%.*} hid=${hid%%.*}
[ "$(field "$hid" JobState)" = PENDING ] &&
	[ "$(field "$hid" Reason)" = JobHeldUser ] &&
	ok "qsub -h: job $hid is held (JobHeldUser)" ||
	bad "qsub -h: $(field "$hid" JobState) $(field "$hid" Reason)"
for _ in $(seq 300); do
	as_user qstat >"$tmp/q" 2>&1 || true
	grep -q "^$sid\.srv  *stay .* R " "$tmp/q" &&
		grep -q "^$aid\.srv  *away .* R " "$tmp/q" && break
	sleep 0.2
done
grep -q "^$sid\.srv  *stay .* R debug$" "$tmp/q" &&
	ok "qstat: the job on Slurm, R in debug" ||
	bad "qstat, no running row for $sid: $(cat "$tmp/q")"
grep -q "^$aid\.srv  *away .* R " "$tmp/q" &&
	[ "$(field "$aid" Partition)" = burst ] &&
	ok "qstat: the job that bursts, R (its proxy in burst)" ||
	bad "qstat, no running row for burst job $aid: $(cat "$tmp/q")"
grep -q "^$hid\.srv  *third .* H " "$tmp/q" &&
	ok "qstat: the held job, H" || bad "qstat, held job $hid: $(cat "$tmp/q")"
out=$(as_user qdel "$hid.srv" 2>&1) && [ -z "$out" ] &&
	[ "$(wait_final "$hid")" = CANCELLED ] &&
	ok "qdel cancels the held job $hid" ||
	bad "qdel $hid: '$out' $(field "$hid" JobState)"
as_user qdel "$sid" "$aid" || bad "qdel $sid $aid: rc $?"
st=$(wait_final "$sid") st2=$(wait_final "$aid")
[ "$st" = CANCELLED ] && [ "$st2" = CANCELLED ] &&
	ok "qdel ends the other two" || bad "after qdel: $sid $st, $aid $st2"

sandbox_test_end
