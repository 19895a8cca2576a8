#!/bin/bash
# --ntasks-per-tres is --ntasks-per-gpu under another name: 2 tasks x 2 GPUs.
#SBATCH --ntasks-per-tres=2 --gpus=2
srun ./worker
