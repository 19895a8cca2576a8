#!/usr/bin/env bash
# burst.test.sh - unchanged sbatch scripts through the real Slurm, the
# plugins and hpcbridged, in the sandbox (hpcbridge sandbox up):
#
#   * a job in a partition mapped to Slurm runs on Slurm, tagged;
#   * sacct (slurmdbd) records each job's end as Slurm saw it: the stay
#     job, and the proxies (1 CPU in burst) with the remote exit code;
#   * a job in the gpu partition (mapped to Kubernetes) becomes a proxy in
#     the burst partition; its shadow runs it on the remote side (the local
#     backend, standing in for the cluster), copies its output into the
#     Slurm output file and ends with its exit code;
#   * a failing remote job gives a FAILED Slurm job with its exit code;
#   * scancel of a proxy cancels the remote job: the proxy ends CANCELLED
#     and nothing of the remote job is left running; scancel of one task
#     of a burst array stops that task's remote job only; a proxy that
#     cannot write the output ends FAILED and cancels its remote job;
#   * hpcbridge submit runs a script on Slurm from the directory it was
#     submitted in (a Latin-1 script is refused, naming file:line), and
#     hpcbridge cancel ends it CANCELLED;
#   * sandbox down stops a remote job whose daemon died before it could
#     cancel it.
#
# usage: burst.test.sh BUILD_DIR SRC_DIR
set -euo pipefail

build=$(cd "${1:?BUILD_DIR}" && pwd)
src=$(cd "${2:?SRC_DIR}" && pwd)
tmp=$(mktemp -d /tmp/hb-burst.XXXXXX)
chmod 755 "$tmp"
# The local backend: this test checks the daemon and shadow mechanics
# (burst_kube.test.sh runs the same path on the emulated cluster).
export HB_SANDBOX_BACKEND=local
# shellcheck source=lib/sandbox_test.sh
. "$src/tests/integration/lib/sandbox_test.sh"
sandbox_test_up
ok "sandbox up"


# 1. Stays on Slurm.
cat >"$tmp/stay.sh" <<'EOF'
#!/bin/sh
#SBATCH --job-name=stay
#SBATCH --partition=debug
#SBATCH --output=stay-%j.out
echo "ran on slurm"
EOF
id=$(submit "$tmp/stay.sh")
[ -n "$id" ] || die "sbatch stay.sh: $(cat "$tmp/sbatch.err")"
st=$(wait_final "$id")
[ "$st" = COMPLETED ] && ok "slurm job completed" || bad "slurm job: $st"
[ "$(field "$id" Partition)" = debug ] && ok "slurm job kept its partition" ||
	bad "slurm job partition $(field "$id" Partition)"
scontrol show job "$id" | grep -q "AdminComment=hpcbridge:hb-[0-9]* target=slurm" &&
	ok "slurm job tagged" || bad "slurm job not tagged: $(scontrol show job "$id" | grep -i comment)"
grep -qx "ran on slurm" "$tmp/stay-$id.out" && ok "slurm job output" ||
	bad "slurm job output: $(cat "$tmp/stay-$id.out" 2>&1)"
l=$(sacct_line "$id")
# decided in slurmctld: the snapshot's version follows the target
case $l in "debug|1|COMPLETED|0:0|hpcbridge:hb-"*" target=slurm snap="[0-9]*) true ;; *) false ;; esac &&
	ok "sacct: the job in debug, COMPLETED 0:0, tagged" || bad "sacct: '$l'"

# remote_pgid RID: the process group of local-backend remote job RID, from
# its pid file ("PID STARTTIME"), once it is there (60 s at most); "" if
# it never is
remote_pgid() {
	local i
	for i in $(seq 300); do
		[ -s "$box/remote/$1/pid" ] && break
		sleep 0.2
	done
	cut -d' ' -f1 "$box/remote/$1/pid" 2>/dev/null || true
}
# group_gone PGID HBID: 0 once remote process group PGID is gone (20 s at
# most); asking for HBID's status lets the SIGKILL after the grace follow
group_gone() {
	local i
	for i in $(seq 100); do
		[ -n "$1" ] && ! kill -0 -- "-$1" 2>/dev/null && return 0
		hpcbridge status "$2" >/dev/null 2>&1 || true
		sleep 0.2
	done
	return 1
}
wait_status() { # HBID REGEX
	local i
	for i in $(seq 50); do
		hpcbridge status --json "$1" 2>/dev/null | tr -d ' \n' | grep -qE "$2" && return 0
		sleep 0.2
	done
	return 1
}

# The daemon follows jobs kept on Slurm (the reconciler polls Slurm).
hb=$(gateway_id "$id")
wait_status "$hb" "\"state\":\"succeeded\",\"target\":\"slurm\",\"slurm_job_id\":$id," &&
	ok "daemon mirrors the Slurm job: succeeded, Slurm id bound" ||
	bad "daemon's view of $hb: $(hpcbridge status --json "$hb" 2>&1 | tr -d ' \n' | head -c 400)"
cat >"$tmp/stayfail.sh" <<'EOF'
#!/bin/sh
#SBATCH --partition=debug
#SBATCH --output=stayfail-%j.out
exit 3
EOF
id=$(submit "$tmp/stayfail.sh")
st=$(wait_final "$id")
[ "$st" = FAILED ] && ok "failing slurm job FAILED" || bad "failing slurm job: $st"
hb=$(gateway_id "$id")
wait_status "$hb" '"state":"failed".*"exit_code":3,' &&
	ok "daemon mirrors the failure and exit code 3" ||
	bad "daemon's view of $hb: $(hpcbridge status --json "$hb" 2>&1 | tr -d ' \n' | head -c 400)"

# 1b. The sandbox example: a real Open MPI 2-rank program stays on Slurm,
# and the same program bursts.
if [ "$(id -u)" = 0 ]; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
mpicc -O1 -o "$tmp/hello" "$src/examples/sandbox/hello.c" ||
	die "mpicc examples/sandbox/hello.c"
cp "$src/examples/sandbox/mpi-on-slurm.sh" "$src/examples/sandbox/mpi-burst.sh" "$tmp/"
for s in mpi-on-slurm mpi-burst; do
	id=$(submit "$tmp/$s.sh")
	[ -n "$id" ] || die "sbatch $s.sh: $(cat "$tmp/sbatch.err")"
	st=$(wait_final "$id")
	[ "$st" = COMPLETED ] && ok "$s: completed" || bad "$s: $st"
	n=$(grep -c "^hello from rank [01] of 2 on " "$tmp/$s-$id.out" || true)
	[ "$n" = 2 ] && ok "$s: two MPI ranks ran" ||
		bad "$s output: $(cat "$tmp/$s-$id.out" 2>&1)"
	want=debug
	[ "$s" = mpi-burst ] && want=burst
	[ "$(field "$id" Partition)" = "$want" ] && ok "$s: in $want" ||
		bad "$s partition $(field "$id" Partition)"
done

# 2. Bursts and completes.
cat >"$tmp/burst.sh" <<'EOF'
#!/bin/bash
#SBATCH --job-name=burst
#SBATCH --partition=gpu
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=4
#SBATCH --time=10
#SBATCH --output=burst-%j.out
echo "remote line 1"
echo "remote in $PWD"
echo "remote job $HPCBRIDGE_JOB_ID"
echo "to stderr" >&2
EOF
id=$(submit "$tmp/burst.sh")
[ -n "$id" ] || die "sbatch burst.sh: $(cat "$tmp/sbatch.err")"
[ "$(field "$id" Partition)" = burst ] && ok "burst job became a proxy in burst" ||
	bad "burst job partition $(field "$id" Partition)"
case $(field "$id" NumCPUs) in 1 | 1-1) true ;; *) false ;; esac && ok "proxy has 1 CPU" ||
	bad "proxy NumCPUs $(field "$id" NumCPUs)"
st=$(wait_final "$id")
[ "$st" = COMPLETED ] && ok "burst job completed" || bad "burst job: $st"
[ "$(field "$id" ExitCode)" = 0:0 ] && ok "burst exit code 0" ||
	bad "burst exit code $(field "$id" ExitCode)"
out=$tmp/burst-$id.out
grep -qx "remote line 1" "$out" && grep -qx "remote in $tmp" "$out" &&
	grep -q "^remote job hb-[0-9]*$" "$out" && grep -qx "to stderr" "$out" &&
	ok "remote output in the Slurm output file" ||
	bad "burst output: $(cat "$out" 2>&1)"
hbid=$(sed -n 's/^remote job \(hb-[0-9]*\)$/\1/p' "$out")
l=$(sacct_line "$id")
case $l in "burst|1|COMPLETED|0:0|hpcbridge:$hbid target=kubernetes"*) true ;; *) false ;; esac &&
	ok "sacct: the proxy charged 1 CPU in burst, COMPLETED 0:0, tagged" ||
	bad "sacct: '$l'"
hpcbridge status "$hbid" >"$tmp/status" 2>&1 &&
	grep -q "succeeded" "$tmp/status" && ok "hpcbridge status: succeeded" ||
	bad "status: $(cat "$tmp/status")"

# 3. A failing remote job.
cat >"$tmp/fail.sh" <<'EOF'
#!/bin/sh
#SBATCH --partition=gpu
#SBATCH --output=fail-%j.out
echo "about to fail"
exit 7
EOF
id=$(submit "$tmp/fail.sh")
st=$(wait_final "$id")
[ "$st" = FAILED ] && ok "failing remote job: Slurm job FAILED" ||
	bad "failing job: $st"
[ "$(field "$id" ExitCode)" = 7:0 ] && ok "exit code 7 carried" ||
	bad "fail exit code $(field "$id" ExitCode)"
grep -qx "about to fail" "$tmp/fail-$id.out" && ok "failing job output" ||
	bad "fail output: $(cat "$tmp/fail-$id.out" 2>&1)"
l=$(sacct_line "$id")
case $l in "burst|1|FAILED|7:0|"*) true ;; *) false ;; esac &&
	ok "sacct: the failed proxy FAILED 7:0" || bad "sacct: '$l'"

# 3b. An array bursts: each task runs its own remote job.
cat >"$tmp/array.sh" <<'EOF'
#!/bin/sh
#SBATCH --partition=gpu
#SBATCH --array=0-2
#SBATCH --output=array-%A_%a.out
echo "task $SLURM_ARRAY_TASK_ID"
exit $SLURM_ARRAY_TASK_ID
EOF
aid=$(submit "$tmp/array.sh")
[ -n "$aid" ] || die "sbatch array.sh: $(cat "$tmp/sbatch.err")"
for t in 0 1 2; do
	st=$(wait_final "${aid}_$t")
	want=COMPLETED
	[ "$t" = 0 ] || want=FAILED
	[ "$st" = "$want" ] && [ "$(field "${aid}_$t" ExitCode)" = "$t:0" ] &&
		ok "array task $t: $want $t:0" ||
		bad "array task $t: $st $(field "${aid}_$t" ExitCode)"
	grep -qx "task $t" "$tmp/array-${aid}_$t.out" &&
		ok "array task $t: its own output" ||
		bad "array task $t output: $(cat "$tmp/array-${aid}_$t.out" 2>&1)"
done

# 4. scancel of a proxy cancels the remote job.
cat >"$tmp/long.sh" <<'EOF'
#!/bin/sh
#SBATCH --partition=gpu
#SBATCH --output=long-%j.out
echo "long job started"
sleep 300
echo "not reached"
EOF
id=$(submit "$tmp/long.sh")
for i in $(seq 300); do
	grep -q "long job started" "$tmp/long-$id.out" 2>/dev/null && break
	sleep 0.2
done
grep -q "long job started" "$tmp/long-$id.out" && ok "long remote job running" ||
	bad "long job did not start: $(cat "$tmp/long-$id.out" 2>&1)"
squeue -h -o %k -j "$id" | grep -q "^hpcbridge:hb-[0-9]* running$" &&
	ok "squeue %k shows the remote phase" ||
	bad "squeue %k: '$(squeue -h -o %k -j "$id")'"
hbid=$(gateway_id "$id")
rpid=$(remote_pgid "$hbid")
[ -n "$rpid" ] && ok "remote job has a pid file" || bad "no pid file for $hbid"
scancel "$id"
st=$(wait_final "$id")
[ "$st" = CANCELLED ] && ok "scancelled proxy ends CANCELLED" ||
	bad "scancelled proxy: $st"
l=$(sacct_line "$id")
case $l in "burst|1|CANCELLED"*) true ;; *) false ;; esac &&
	ok "sacct: the scancelled proxy CANCELLED" || bad "sacct: '$l'"
group_gone "$rpid" "$hbid" && ok "remote job's processes are gone" ||
	bad "remote job $rpid still running"
hpcbridge status "$hbid" 2>&1 | grep -q cancelled && ok "status: cancelled" ||
	bad "status after scancel: $(hpcbridge status "$hbid" 2>&1)"
grep -q "not reached" "$tmp/long-$id.out" && bad "cancelled job ran on" || true

# 4b. scancel of one task of a burst array cancels that task's remote job
# only: the other task and the gateway job go on.
cat >"$tmp/along.sh" <<'EOF'
#!/bin/sh
#SBATCH --partition=gpu
#SBATCH --array=0-1
#SBATCH --output=along-%A_%a.out
echo "task $SLURM_ARRAY_TASK_ID started"
sleep 300
EOF
aid=$(submit "$tmp/along.sh")
[ -n "$aid" ] || die "sbatch along.sh: $(cat "$tmp/sbatch.err")"
for i in $(seq 300); do
	grep -qs "task 0 started" "$tmp/along-${aid}_0.out" &&
		grep -qs "task 1 started" "$tmp/along-${aid}_1.out" && break
	sleep 0.2
done
ahb=$(gateway_id "${aid}_0")
t0=$(remote_pgid "$ahb-t0")
t1=$(remote_pgid "$ahb-t1")
[ -n "$t0" ] && [ -n "$t1" ] && ok "both array tasks run remotely" ||
	bad "array tasks' remote jobs: '$t0' '$t1' ($(ls "$box/remote"))"
scancel "${aid}_0"
st=$(wait_final "${aid}_0")
[ "$st" = CANCELLED ] && ok "scancelled task ends CANCELLED" || bad "scancelled task: $st"
group_gone "$t0" "$ahb" && ok "the cancelled task's remote job is gone" ||
	bad "task 0's remote job $t0 still running"
[ -n "$t1" ] && kill -0 -- "-$t1" 2>/dev/null && ok "the other task's remote job runs on" ||
	bad "task 1's remote job $t1 was stopped too"
[ "$(field "${aid}_1" JobState)" = RUNNING ] && ok "the other task's proxy runs on" ||
	bad "task 1: $(field "${aid}_1" JobState)"
hpcbridge status "$ahb" 2>&1 | grep -q running && ok "the array's gateway job runs on" ||
	bad "gateway job after one task's scancel: $(hpcbridge status "$ahb" 2>&1)"
scancel "$aid"
st=$(wait_final "${aid}_1")
[ "$st" = CANCELLED ] && ok "the rest of the array cancelled" || bad "task 1: $st"

# 4c. A proxy that cannot write the job's output ends FAILED, and takes
# its remote job with it.
cat >"$tmp/full.sh" <<'EOF'
#!/bin/sh
#SBATCH --partition=gpu
#SBATCH --output=/dev/full
echo "output nobody can keep"
sleep 300
EOF
id=$(submit "$tmp/full.sh")
[ -n "$id" ] || die "sbatch full.sh: $(cat "$tmp/sbatch.err")"
fhb=$(gateway_id "$id")
fpid=$(remote_pgid "$fhb")
[ -n "$fpid" ] && ok "the remote job started" || bad "no remote pid for $fhb"
st=$(wait_final "$id")
[ "$st" = FAILED ] && ok "a proxy that cannot write its output ends FAILED" ||
	bad "proxy writing to /dev/full: $st"
group_gone "$fpid" "$fhb" && ok "its remote job is cancelled" ||
	bad "the remote job $fpid runs on after its proxy failed"
hpcbridge status --json "$fhb" 2>&1 | tr -d '\n' |
	grep -q '"state": *"failed".*cannot write the output' &&
	ok "the gateway job is failed, with the reason" ||
	bad "gateway job after its proxy failed: $(hpcbridge status "$fhb" 2>&1)"

# 5. hpcbridge submit and cancel, for users outside sbatch: the job runs
# on Slurm from the directory it was submitted in.
mkdir -p "$tmp/cli"
cat >"$tmp/cli/here.sh" <<'EOF'
#!/bin/sh
#SBATCH --partition=debug
#SBATCH --job-name=herejob
#SBATCH --output=%x-%j.out
echo "ran in $(pwd)"
echo "named $SLURM_JOB_NAME"
EOF
# cli_ids OUTPUT: the gateway id and the Slurm job id of a --json reply
cli_ids() {
	local o
	o=$(printf '%s' "$1" | tr -d ' \n')
	cid=$(printf '%s' "$o" | sed -n 's/.*"id":"\(hb-[0-9]*\)".*/\1/p')
	sid=$(printf '%s' "$o" | sed -n 's/.*"slurm_job_id":\([0-9]*\).*/\1/p')
}
out=$(cd "$tmp/cli" && hpcbridge submit --json here.sh 2>&1) || true
cli_ids "$out"
[ -n "$cid" ] && [ -n "$sid" ] && ok "hpcbridge submit: $cid is Slurm job $sid" ||
	bad "hpcbridge submit here.sh: $out"
if [ -n "$sid" ]; then
	st=$(wait_final "$sid")
	[ "$st" = COMPLETED ] && ok "submitted job completed" || bad "submitted job: $st"
	# %x and SLURM_JOB_NAME are the job's name, as under sbatch
	grep -qx "ran in $tmp/cli" "$tmp/cli/herejob-$sid.out" &&
		ok "submitted job ran in the submit directory" ||
		bad "submitted job's output: $(ls "$tmp/cli"; cat "$tmp/cli/herejob-$sid.out" 2>&1)"
	grep -qx "named herejob" "$tmp/cli/herejob-$sid.out" &&
		ok "submitted job has its name in SLURM_JOB_NAME" ||
		bad "submitted job's name: $(cat "$tmp/cli/herejob-$sid.out" 2>&1)"
fi
printf '#!/bin/sh\n# caf\351\nsleep 1\n' >"$tmp/cli/latin1.sh"
if out=$(hpcbridge submit "$tmp/cli/latin1.sh" 2>&1); then
	bad "a Latin-1 script was sent: $out"
elif printf '%s' "$out" | grep -q "latin1.sh:2: byte 16 is not UTF-8"; then
	ok "a Latin-1 script is refused with its file:line"
else
	bad "Latin-1 script: $out"
fi
cat >"$tmp/cli/sleep.sh" <<'EOF'
#!/bin/sh
#SBATCH --partition=debug
#SBATCH --output=/dev/null
sleep 300
EOF
out=$(cd "$tmp/cli" && hpcbridge submit --json sleep.sh 2>&1) || true
cli_ids "$out"
if [ -n "$cid" ] && [ -n "$sid" ]; then
	out=$(hpcbridge cancel "$cid" 2>&1) && ok "hpcbridge cancel $cid" ||
		bad "hpcbridge cancel: $out"
	st=$(wait_final "$sid")
	[ "$st" = CANCELLED ] && ok "hpcbridge cancel ends the Slurm job CANCELLED" ||
		bad "after hpcbridge cancel: $st"
	hpcbridge status "$cid" 2>&1 | grep -q cancelled && ok "status: cancelled" ||
		bad "status after hpcbridge cancel: $(hpcbridge status "$cid" 2>&1)"
else
	bad "hpcbridge submit sleep.sh: $out"
fi

# 6. sandbox down stops a remote job whose daemon died before it could
# cancel it (the shadow's cancel finds nobody).
cat >"$tmp/orphan.sh" <<'EOF'
#!/bin/sh
#SBATCH --partition=gpu
#SBATCH --output=/dev/null
sleep 300
EOF
id=$(submit "$tmp/orphan.sh")
ohb=$(gateway_id "$id")
opid=$(remote_pgid "$ohb")
[ -n "$opid" ] && kill -0 -- "-$opid" 2>/dev/null && ok "a remote job runs" ||
	bad "no remote job for $ohb"
kill -KILL "$(head -c 32 "$box/hpcbridged.pid" | tr -dc 0-9)"
bash "$src/scripts/sandbox.sh" down "$box" >/dev/null 2>&1 ||
	bad "sandbox down failed"
[ -n "$opid" ] && ! kill -0 -- "-$opid" 2>/dev/null &&
	ok "sandbox down stopped the remote job its dead daemon left" ||
	bad "remote job $opid still runs after sandbox down"

sandbox_test_end
echo "all burst checks passed"
