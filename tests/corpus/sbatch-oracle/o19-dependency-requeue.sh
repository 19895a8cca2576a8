#!/bin/bash
#SBATCH --dependency=afterok:1:2,afterany:3
#SBATCH --no-requeue
#SBATCH --time-min=30 -t 60
#SBATCH --array=0-4:2%1
#SBATCH --mail-type=ALL,END
./step
