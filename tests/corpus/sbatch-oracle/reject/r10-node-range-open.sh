#!/bin/bash
# oracle-expect-line: 3
#SBATCH --nodes=2-
hostname
