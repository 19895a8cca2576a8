#!/bin/bash
# oracle-expect-line: 3
#SBATCH -a 1-10:0
hostname
