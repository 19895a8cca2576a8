#!/bin/bash
# --ntasks-per-tres with GPUs per node: 3 tasks per GPU x 2 GPUs x 2 nodes.
#SBATCH --nodes=2
#SBATCH --gpus-per-node=2
#SBATCH --ntasks-per-tres=3
srun ./worker
