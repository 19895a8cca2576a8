#!/bin/bash
# --ntasks-per-gpu with -n and no GPU request: Slurm picks the GPU count.
#SBATCH --ntasks=4
#SBATCH --ntasks-per-gpu=2
srun ./worker
