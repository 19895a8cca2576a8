#!/bin/bash
# The same program in the gpu partition: the sandbox's placement sends the
# gpu partition to Kubernetes, so this job bursts.  Its Slurm job is a
# proxy; the output below arrives in the proxy's output file.
#SBATCH --job-name=mpi-burst
#SBATCH --partition=gpu
#SBATCH --account=chemistry
#SBATCH --ntasks=2
#SBATCH --time=5
#SBATCH --output=mpi-burst-%j.out

echo "job ${HPCBRIDGE_JOB_ID:-?} running remotely"
mpirun --oversubscribe -np 2 ./hello
