#!/usr/bin/env bash
# Installs what the project needs, builds hpcbridge, and runs its main job
# on the built-in defaults: translate the bundled example scripts to
# Kubeflow MPIJobs and print what became of every directive; then bring up
# the sandbox (a real Slurm with hpcbridge's plugins, and hpcbridged) and
# submit two unchanged sbatch scripts with plain sbatch: one stays on
# Slurm, one bursts; show squeue, where each went, sacct, the jobs with
# what each cost, and end with the chargeback report of the two.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
hb=build/bin/hpcbridge

for f in examples/sbatch/*.sh examples/pbs/*.pbs; do
	printf '\n===== %s\n' "$f"
	"$hb" translate --explain "$f"
done
for f in examples/manifests/*.yaml; do
	[ -e "$f" ] || continue
	printf '\n===== %s -> sbatch\n' "$f"
	"$hb" translate --to sbatch "$f"
done
printf '\n===== examples/sbatch/mpi-hello.sh -> MPIJob\n'
"$hb" translate examples/sbatch/mpi-hello.sh

# The main job: a real Slurm with hpcbridge's plugins and hpcbridged (the
# sandbox), and two unchanged sbatch scripts submitted with plain sbatch:
# one stays on Slurm, one bursts: it runs as an MPIJob on the emulated
# Kubernetes cluster (hb-kubemu), whose launcher runs real Open MPI here.
box=${HPCBRIDGE_SANDBOX:-/tmp/hpcbridge-sandbox}
printf '\n===== sandbox: %s\n' "$box"
export HB_SLURM_FIX_HOSTS=${HB_SLURM_FIX_HOSTS:-1}
eval "$("$hb" sandbox up --dir "$box")"
# Jobs are submitted as the sandbox's user (root never bursts) from its
# work directory, which the emulated cluster mounts at the same path.
work=$HB_SANDBOX_WORK
mpicc -O1 -o "$work/hello" examples/sandbox/hello.c
cp examples/sandbox/mpi-on-slurm.sh examples/sandbox/mpi-burst.sh "$work/"
chmod 755 "$work/hello" && chmod 644 "$work"/mpi-*.sh
# a sandbox made afresh counts its Slurm job ids from 1 again: the output
# files of an earlier run would stand in the way of the new jobs'
rm -f "$work"/mpi-on-slurm-*.out "$work"/mpi-burst-*.out
as_user() {
	if [ "$(id -u)" = 0 ]; then runuser -u "$HB_SANDBOX_USER" -- "$@"; else "$@"; fi
}
ids=()
for s in mpi-on-slurm.sh mpi-burst.sh; do
	printf '$ sbatch %s    (as %s)\n' "$s" "$HB_SANDBOX_USER"
	id=$(cd "$work" && as_user sbatch --parsable "$s")
	ids+=("$id")
done
idlist=$(IFS=,; echo "${ids[*]}")
printf '\n$ squeue\n'
squeue
for _ in $(seq 300); do
	[ -z "$(squeue -h -j "$idlist" 2>/dev/null)" ] && break
	sleep 0.2
done
printf '\n$ scontrol show job (where each went, how it ended)\n'
for id in "${ids[@]}"; do
	scontrol show job "$id" | tr ' ' '\n' |
		grep -E '^(JobId|JobName|Partition|JobState|ExitCode|AdminComment)=' |
		paste -sd' '
done
printf '\n$ sacct (a burst job is its proxy here, 1 CPU in partition burst; its\n'
printf '  AdminComment says what ran on the cluster, where it is charged)\n'
# slurmdbd has a job's fields and its end a moment after slurmctld
for _ in $(seq 150); do
	[ "$(sacct -n -P -X -j "$idlist" -o Partition,State |
		grep -cE '^[^|]+[|](COMPLETED|FAILED|CANCELLED)')" = "${#ids[@]}" ] &&
		break
	sleep 0.2
done
sacct -X -j "$idlist" -o JobID,JobName,Partition,AllocCPUS,State,ExitCode
printf '\n$ sacct -X -n -P -o JobID,AdminComment -j %s\n' "$idlist"
sacct -X -n -P -o JobID,AdminComment -j "$idlist"
printf '\n$ hpcbridge jobs --all\n'
# the daemon mirrors Slurm's job states at its next poll (every second)
# and meters each job once it ends: its cost is then in the ledger
for _ in $(seq 100); do
	"$hb" jobs --all | awk 'NR > 1 && ($4 ~ /^(pending|queued|running)$/ ||
		$9 == "-")' | grep -q . || break
	sleep 0.2
done
"$hb" jobs --all
for id in "${ids[@]}"; do
	out=$(scontrol show job "$id" | tr ' ' '\n' | sed -n 's/^StdOut=//p')
	printf '\n===== output of job %s (%s)\n' "$id" "$out"
	cat "$out"
done
from=$(date -u +%Y-%m-%d)
to=$(date -u -d tomorrow +%Y-%m-%d)
for by in side account; do
	printf '\n$ hpcbridge report --from %s --to %s --by %s\n' "$from" "$to" "$by"
	"$hb" report --from "$from" --to "$to" --by "$by"
done
printf '\nThe sandbox is still up: eval "$(%s sandbox env --dir %s)" to use it,\n' "$hb" "$box"
printf '%s sandbox down --dir %s to stop it.\n' "$hb" "$box"
