#!/bin/bash
# oracle-expect-line: 3
#SBATCH --ntasks=abc
hostname
