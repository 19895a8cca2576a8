#!/bin/bash
#SBATCH -J resnet50-ddp
#SBATCH -A ml-team
#SBATCH -p gpu
#SBATCH -N 4
#SBATCH --ntasks-per-node=4 --cpus-per-task=8   # one rank per GPU
#SBATCH --gres=gpu:a100:4
#SBATCH --mem-per-gpu=64G
#SBATCH -t 1-12:00:00
#SBATCH --constraint=ib
#SBATCH --hpcbridge-checkpoint=/scratch/ml-team/resnet50/ckpt
#SBATCH --signal=B:USR1@300

module load cuda/12.2 openmpi/4.1 nccl/2.18

export NCCL_DEBUG=INFO
export NCCL_IB_DISABLE=0
export OMP_NUM_THREADS=$SLURM_CPUS_PER_TASK

mpirun -np $SLURM_NTASKS python train.py --epochs 90 \
	--checkpoint-dir /scratch/ml-team/resnet50/ckpt
