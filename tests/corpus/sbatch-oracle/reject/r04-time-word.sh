#!/bin/bash
# oracle-expect-line: 4
#SBATCH -N 1
#SBATCH --time=abc
hostname
