#!/bin/bash
# oracle-expect-line: 4
#SBATCH -n 2
#SBATCH --ntasks-per-tres=2 --gpus-per-task=1
hostname
