#!/bin/bash
#SBATCH --job-name=lammps_lj
#SBATCH --partition=gpu
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=4
#SBATCH --cpus-per-task=8
#SBATCH --gpus-per-task=1
#SBATCH --mem=256G
#SBATCH --time=03:00:00
#SBATCH --output=lammps.%j.log

# Lennard-Jones benchmark with the KOKKOS GPU package, one rank per GPU.

module purge
module load cuda/11.8 openmpi/4.1.5-cuda lammps/2Aug2023-kokkos

export OMP_NUM_THREADS=1
export OMP_PROC_BIND=spread
export OMP_PLACES=threads
export UCX_TLS=rc,cuda_copy,cuda_ipc,sm,self
export UCX_RNDV_SCHEME=get_zcopy

INPUT=${SLURM_SUBMIT_DIR}/in.lj
SCALE=8   # replicate the 32k-atom box 8x in each direction

cat <<INFO
LAMMPS run
  nodes   : ${SLURM_JOB_NUM_NODES} (${SLURM_JOB_NODELIST})
  ranks   : ${SLURM_NTASKS}
  gpus    : ${SLURM_GPUS_PER_TASK:-1} per rank
  scale   : ${SCALE}
INFO

srun --mpi=pmix lmp \
	-k on g 1 -sf kk -pk kokkos cuda/aware on neigh full comm device \
	-var x ${SCALE} -var y ${SCALE} -var z ${SCALE} \
	-in "${INPUT}" \
	-log lammps-${SLURM_JOB_ID}.log

grep -A2 "Loop time" lammps-${SLURM_JOB_ID}.log || true
