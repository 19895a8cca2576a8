#!/bin/bash
# oracle-expect-line: 3
#SBATCH --ntasks-per-tres=2
hostname
