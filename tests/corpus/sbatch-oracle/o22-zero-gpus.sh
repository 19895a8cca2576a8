#!/bin/bash
# gpu:0 asks for no GPU at all.
#SBATCH --gres=gpu:a100:0
#SBATCH -c 2 --ntasks-per-node=3 -N 1-3
srun hostname
