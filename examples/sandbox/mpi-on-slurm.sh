#!/bin/bash
# An ordinary Open MPI job in the debug partition: the sandbox keeps it on
# Slurm.
#SBATCH --job-name=mpi-on-slurm
#SBATCH --partition=debug
#SBATCH --account=physics
#SBATCH --ntasks=2
#SBATCH --time=5
#SBATCH --output=mpi-on-slurm-%j.out

echo "job $SLURM_JOB_ID on $SLURM_JOB_NODELIST"
mpirun --oversubscribe -np 2 ./hello
