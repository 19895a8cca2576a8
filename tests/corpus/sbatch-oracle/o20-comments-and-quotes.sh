#!/bin/bash
# An unquoted # starts a comment only after a blank; inside a word it stays.
#SBATCH --time=10 # ten minutes
#SBATCH --job-name="a  b"
#SBATCH --comment='x "y" z'
#SBATCH --gres=gpu
echo done
