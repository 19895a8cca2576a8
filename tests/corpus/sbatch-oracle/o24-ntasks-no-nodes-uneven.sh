#!/bin/bash
# 10 tasks at 4 per node, no -N: Slurm rounds up to 3 nodes.
#SBATCH --ntasks=10
#SBATCH --ntasks-per-node=4
srun ./solver
