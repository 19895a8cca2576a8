#!/bin/bash
#SBATCH --job-name=stream-hb12
#SBATCH --partition=debug
#SBATCH --nodelist=hb[1-2]
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=64
#SBATCH --exclusive
#SBATCH --time=00:20:00
#SBATCH --output=stream-%N-%j.out

# Node names are pinned on purpose: this job is part of the hardware
# acceptance procedure for a specific pair of nodes.
# STREAM memory bandwidth on two specific nodes after a DIMM replacement.

module load gcc/12.2.0

SRC=${SLURM_SUBMIT_DIR}/stream.c
BIN=${SLURM_SUBMIT_DIR}/stream.${SLURM_JOB_ID}
gcc -O3 -march=native -fopenmp -DSTREAM_ARRAY_SIZE=800000000 \
	-DNTIMES=20 "${SRC}" -o "${BIN}"

export OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK}
export OMP_PROC_BIND=spread
export OMP_PLACES=cores

srun --ntasks-per-node=1 bash -c '
	echo "== $(hostname -s)"
	numactl --hardware | head -n 3
	'"${BIN}"' | grep -E "^(Copy|Scale|Add|Triad):"
'

# Also record the NUMA layout for the hardware ticket.
srun --ntasks-per-node=1 lscpu | grep -E "^(Model name|Socket|NUMA node)" \
	> lscpu-${SLURM_JOB_ID}.txt

rm -f "${BIN}"
echo "compare the Triad figure with the 300 GB/s acceptance value"
