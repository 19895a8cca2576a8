#!/bin/bash
# sbatch clips a node range to the task count ("setting nnodes to 3").
#SBATCH --nodes=2-4
#SBATCH --ntasks=3
#SBATCH --time=45
srun hostname
