#!/bin/bash
# oracle-expect-line: 4
#SBATCH --gpus=2
#SBATCH --ntasks-per-gpu=2 --ntasks-per-node=2
hostname
