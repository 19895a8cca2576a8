#!/bin/bash
#SBATCH -w n[01-04],m1 -n 2 --gpus=4 --gpus-per-task=2
#SBATCH --export="ALL,A=1,'B=2,3'" --hpcbridge-data=s3://b/k
#SBATCH --hpcbridge-deadline=2030-01-01 --begin=now+1hour
mpirun ./a
