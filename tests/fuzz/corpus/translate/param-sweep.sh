#!/bin/bash
# One small MPI job per parameter, 16 of them, at most 4 at a time.
#SBATCH --job-name=sweep
#SBATCH --array=0-15%4
#SBATCH --ntasks=4
#SBATCH --mem-per-cpu=2000
#SBATCH --time=30
#SBATCH --output=sweep-%A_%a.out

module load intel-oneapi-mpi/2021.9

PARAMS=(0.1 0.2 0.3 0.4 0.5 0.6 0.7 0.8 0.9 1.0 1.1 1.2 1.3 1.4 1.5 1.6)
mpiexec.hydra -n $SLURM_NTASKS ./solver --alpha ${PARAMS[$SLURM_ARRAY_TASK_ID]}
