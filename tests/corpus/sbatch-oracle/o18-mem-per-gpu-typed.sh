#!/bin/bash
#SBATCH --partition gpu,long
#SBATCH --nodes=2
#SBATCH --gpus-per-node=a100:2
#SBATCH --mem-per-gpu=1G
#SBATCH --time=INFINITE
srun nvidia-smi
