#!/bin/bash
#SBATCH --gpus=h100:8
#SBATCH --ntasks=8
#SBATCH --mem-per-cpu=8000
#SBATCH --time=90
#SBATCH --qos=high
mpirun ./bench
