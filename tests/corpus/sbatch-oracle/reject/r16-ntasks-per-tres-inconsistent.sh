#!/bin/bash
# oracle-expect-line: 5
#SBATCH --gpus=2
#SBATCH --ntasks-per-gpu=2
#SBATCH --ntasks-per-tres=3
hostname
