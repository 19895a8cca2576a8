#!/bin/sh
#SBATCH -J "a b#c" --comment=x\#y -HJq
#SBATCH --time
#SBATCH 1-2:3
#SBATCH -a 1-9:2,20%3 --gres=gpu:a100:2,shard:1
#PBS -N x
hostname
