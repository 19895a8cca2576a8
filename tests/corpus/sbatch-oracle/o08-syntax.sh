#!/bin/bash
#SBATCH --job-name="cfd run" # a quoted name with a space
#SBATCH -N 4 -n 256 -t 1-2:3:4   # several options on one line

# a comment between directives
#SBATCH --account 'astro'
 #SBATCH --partition=long
# SBATCH --partition=gpu
##SBATCH --mem=1G
#SBATCH --mem-per-cpu=1G
module load openmpi
#SBATCH --partition=burst
srun ./app
