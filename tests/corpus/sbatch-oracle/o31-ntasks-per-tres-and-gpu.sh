#!/bin/bash
# --ntasks-per-gpu and --ntasks-per-tres with the same value: one request.
#SBATCH --gpus=3
#SBATCH --ntasks-per-gpu=2
#SBATCH --ntasks-per-tres=2
srun ./worker
