#!/bin/bash
#SBATCH --array=1,3,5-9
#SBATCH --nodes=1
#SBATCH --exclusive
#SBATCH --cpus-per-task=4
#SBATCH --mem=0
./process "$SLURM_ARRAY_TASK_ID"
