#!/bin/bash
# oracle-expect-line: 4,5
#SBATCH --gpus=2
#SBATCH --mem-per-gpu=10G
#SBATCH --mem-per-cpu=2G
hostname
