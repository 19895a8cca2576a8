#!/bin/bash
# Modelled on an array job in the wild (ARCCA): 80 tasks at 40 per node
# and no -N.  Slurm sizes it at 2 nodes, ceil(ntasks / ntasks-per-node).
#SBATCH -J arraytest
#SBATCH --array=0-4
#SBATCH -o output-%A_%a-%J.o
#SBATCH -n 1
#SBATCH --ntasks=80
#SBATCH --ntasks-per-node=40
echo SLURM_ARRAY_TASK_ID $SLURM_ARRAY_TASK_ID
