#!/bin/bash
#SBATCH --partition=long
#SBATCH --time=UNLIMITED
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=64
#SBATCH --gpus-per-node=a100:4
srun ./big
