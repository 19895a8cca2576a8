#!/bin/bash
# oracle-expect-line: 3
#SBATCH --time=1:2:3:4
hostname
