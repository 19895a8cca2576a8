#!/bin/bash
#SBATCH -p burst
#SBATCH -n 1
#SBATCH --mem-per-cpu=1G
#SBATCH -t 5
hostname
