#!/bin/bash
#SBATCH --job-name=namd-stmv
#SBATCH --partition=long
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=2
#SBATCH --cpus-per-task=32
#SBATCH --exclusive
#SBATCH --mem=0
#SBATCH --time=1-00:00:00
#SBATCH --output=namd-%j.out
#SBATCH --no-requeue

# NAMD 3.0 SMP build over UCX: two processes per node, 31 worker threads
# plus one communication thread each.

module purge
module load gcc/11.3.0 ucx/1.14.1 openmpi/4.1.5 namd/3.0b6-smp-ucx

PPN=$((SLURM_CPUS_PER_TASK - 1))
CONFIG=${SLURM_SUBMIT_DIR}/stmv/stmv.namd

echo "NAMD: ${SLURM_NTASKS} processes x ${PPN} workers"

# Pin communication threads to the last core of each task's range.
COMMAP=""
WORKMAP=""
for ((i = 0; i < SLURM_NTASKS_PER_NODE; i++)); do
	first=$((i * SLURM_CPUS_PER_TASK))
	last=$((first + SLURM_CPUS_PER_TASK - 1))
	WORKMAP+="${first}-$((last - 1)),"
	COMMAP+="${last},"
done
WORKMAP=${WORKMAP%,}
COMMAP=${COMMAP%,}

srun --cpu-bind=none namd3 ++ppn ${PPN} \
	+setcpuaffinity +pemap ${WORKMAP} +commap ${COMMAP} \
	${CONFIG} > stmv-${SLURM_JOB_ID}.log

grep "Benchmark time" stmv-${SLURM_JOB_ID}.log | tail -n 3
