#!/bin/bash
# oracle-known: GPUs(TresPerNode) - Slurm keeps both gres:gpu:2 (from
# --gpus-per-node) and gres:gpu:1 (from --gres); hpcbridge keeps 2.
#SBATCH -n 4 --gpus-per-node=2 --gres=gpu:1
srun nvidia-smi
