#!/bin/bash
# oracle-expect-line: 3
#SBATCH -N 3-2
hostname
