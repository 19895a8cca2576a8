#!/bin/bash
# oracle-known: GPUs(TresPerJob) - Slurm keeps both --gpus=2 (per job) and
# --gpus-per-node=1; the jobspec holds one GPU scope (per node here).
#SBATCH --gpus=2 --gpus-per-node=1 -N 2
srun nvidia-smi
