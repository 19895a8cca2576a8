#!/bin/bash
#SBATCH --job-name=hello-mpi
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=4
#SBATCH --time=00:05:00
# An unchanged Slurm job script: three ways to start ranks, and an NCCL
# setting that every rank must see.
export NCCL_DEBUG=INFO
echo "job ntasks=$SLURM_NTASKS nodes=$SLURM_JOB_NUM_NODES" \
	"nodelist=$SLURM_JOB_NODELIST"
echo "== srun"
srun --mpi=pmix ./hello
echo "== mpirun"
mpirun -np 4 ./hello
echo "== mpiexec"
mpiexec ./hello
echo "== done"
# The launcher exits with the script's own code.
exit 3
