#!/bin/bash
# A repeated option: the last one wins (name, memory, array).
#SBATCH -J first
#SBATCH --mem=1T
#SBATCH --array=1-3
#SBATCH -J second --mem=2T
#SBATCH --array=7
hostname
