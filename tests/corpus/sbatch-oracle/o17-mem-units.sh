#!/bin/bash
# K is rounded up to whole MB; a bare number is MB.
#SBATCH --mem=2048K
#SBATCH --time=0:0:1
#SBATCH --ntasks-per-node=4 --nodes=2 --ntasks=6
srun hostname
