#!/bin/bash
# sbatch reads --time=0 as "no time limit".
#SBATCH --time=0
#SBATCH --ntasks=2
srun hostname
