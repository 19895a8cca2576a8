#!/bin/bash
#SBATCH -J train-a100
#SBATCH -p gpu
#SBATCH -N 2
#SBATCH --ntasks-per-node=4
#SBATCH --cpus-per-task=8
#SBATCH --gres=gpu:a100:4
#SBATCH --mem-per-gpu=40G
#SBATCH -t 1-00:00:00
srun python train.py
