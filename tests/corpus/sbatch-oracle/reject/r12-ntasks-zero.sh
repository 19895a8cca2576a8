#!/bin/bash
# oracle-expect-line: 3
#SBATCH -n 0
hostname
