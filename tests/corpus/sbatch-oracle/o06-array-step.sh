#!/bin/bash
#SBATCH --job-name=sweep
#SBATCH --array=0-99:3%5
#SBATCH --time=0-4
#SBATCH --mem=2000
python sweep.py --index "$SLURM_ARRAY_TASK_ID"
