#!/bin/bash
# A node list without -N: Slurm counts the nodes itself.
#SBATCH -w hb[1-3] -n 2
#SBATCH --mem-per-cpu=0
srun hostname
