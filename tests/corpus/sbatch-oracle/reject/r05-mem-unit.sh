#!/bin/bash
# oracle-expect-line: 3
#SBATCH --mem=12X
hostname
