#!/bin/bash
# slurmctld stores account names in lower case.
#SBATCH --account=Proj-ABC_12
srun ./worker
