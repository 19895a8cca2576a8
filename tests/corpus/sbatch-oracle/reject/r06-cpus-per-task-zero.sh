#!/bin/bash
# oracle-expect-line: 3
#SBATCH --cpus-per-task=0
hostname
