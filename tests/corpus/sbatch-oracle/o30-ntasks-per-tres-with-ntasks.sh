#!/bin/bash
# --ntasks-per-tres with -n and no GPU request: -n gives the task count.
#SBATCH --ntasks=4
#SBATCH --ntasks-per-tres=2
srun ./worker
