#!/bin/bash
# oracle-known: GPUs(TresPerNode) - Slurm keeps one a100 and one h100 per
# node; the jobspec holds one GPU type, so hpcbridge reads 2 untyped GPUs.
#SBATCH -N 2 --gres=gpu:a100:1,gpu:h100:1
srun nvidia-smi
