#!/bin/bash
# oracle-expect-line: 4
#SBATCH --gpus=2
#SBATCH --ntasks-per-tres=2 --ntasks-per-node=2
hostname
