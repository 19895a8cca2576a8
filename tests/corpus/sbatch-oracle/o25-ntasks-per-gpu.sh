#!/bin/bash
# --ntasks-per-gpu without -n: Slurm derives 4 tasks, 2 per GPU x 2 GPUs.
#SBATCH --ntasks-per-gpu=2 --gpus=2
srun ./worker
