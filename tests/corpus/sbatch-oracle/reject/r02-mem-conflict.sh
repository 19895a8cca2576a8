#!/bin/bash
# oracle-expect-line: 3,4
#SBATCH --mem=4G
#SBATCH --mem-per-cpu=1G
hostname
