#!/bin/bash
# minutes:seconds rounds up to whole minutes.
#SBATCH --time=10:05
#SBATCH --nodes=1-2
#SBATCH --ntasks-per-node=2
srun hostname
