#!/bin/bash
#SBATCH --time=3-0:30
#SBATCH --mem=1T
#SBATCH --nodes=3
srun hostname
