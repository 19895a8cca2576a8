#!/bin/bash
# oracle-expect-line: 4
#SBATCH -N 2
#SBATCH --frobnicate=3
hostname
