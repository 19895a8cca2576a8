#!/bin/bash
# oracle-expect-line: 3
#SBATCH --ntasks-per-gpu=2
hostname
