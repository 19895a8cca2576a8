#!/bin/bash
#SBATCH --job-name=cfd-solver
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=32
#SBATCH --cpus-per-task=2
#SBATCH --time=02:00:00
#SBATCH --mem=64G
#SBATCH --partition=debug
#SBATCH --account=physics
module load openmpi/4.1
srun ./solver input.nml
