#!/bin/bash
#############################################################################
# Hybrid MPI + OpenMP run of the spectral element code: 4 nodes, 8 MPI ranks
# per node, 8 OpenMP threads per rank (64 cores per node).
#############################################################################
#SBATCH --job-name=sem-hybrid
#SBATCH --partition=long
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=8
#SBATCH --cpus-per-task=8
#SBATCH --hint=nomultithread
#SBATCH --distribution=block:block
#SBATCH --mem=480G
#SBATCH --time=12:00:00
#SBATCH --output=sem-%j.out

module purge
module load gcc/12.2.0
module load openmpi/4.1.5
module load openblas/0.3.23 metis/5.1.0

export OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK}
export OMP_PLACES=cores
export OMP_PROC_BIND=close
export OMP_STACKSIZE=512M

echo "ranks=${SLURM_NTASKS} threads/rank=${OMP_NUM_THREADS} nodes=${SLURM_JOB_NUM_NODES}"

INPUT=${SLURM_SUBMIT_DIR}/inputs/cylinder_re3900.par
RUN=${SLURM_SUBMIT_DIR}/runs/${SLURM_JOB_ID}
mkdir -p "${RUN}"
cp "${INPUT}" "${RUN}/"
cd "${RUN}"

# srun places ranks and threads from the allocation; --cpus-per-task is
# inherited from the job.
srun --cpu-bind=cores ${SLURM_SUBMIT_DIR}/bin/sem_solver cylinder_re3900.par

# Post-process on the first node only.
srun --ntasks=1 --nodes=1 --cpus-per-task=8 \
	${SLURM_SUBMIT_DIR}/bin/sem_post --fields u,v,w,p --average last:100
