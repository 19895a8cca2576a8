#!/bin/bash
# A plain Open MPI job: 2 nodes, 8 ranks each, an hour, 4 GB per node.
#SBATCH --job-name=mpi-hello
#SBATCH --account=physics
#SBATCH --partition=debug
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=8
#SBATCH --time=01:00:00
#SBATCH --mem=4G
#SBATCH --output=hello-%j.out
#SBATCH --mail-type=END,FAIL
#SBATCH --mail-user=alice@example.org

module load openmpi/4.1

echo "running on $SLURM_JOB_NUM_NODES nodes: $SLURM_JOB_NODELIST"
srun ./hello
