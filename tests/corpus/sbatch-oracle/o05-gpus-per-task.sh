#!/bin/bash
#SBATCH --partition=gpu
#SBATCH --ntasks=4
#SBATCH --gpus-per-task=1
#SBATCH --time=30:30
srun ./per-gpu-worker
