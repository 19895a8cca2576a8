#!/bin/bash
#SBATCH -N2 -n8 -c1
#SBATCH -t10 -Jattached
#SBATCH -pgpu -Alab
#SBATCH --gres=gpu:2
srun hostname
