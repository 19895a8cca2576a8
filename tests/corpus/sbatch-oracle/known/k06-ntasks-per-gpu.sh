#!/bin/bash
# oracle-known: NumTasks - Slurm derives 4 tasks from --ntasks-per-gpu=2 x
# --gpus=2; hpcbridge leaves the task count at 1.
#SBATCH --ntasks-per-gpu=2 --gpus=2
srun ./worker
