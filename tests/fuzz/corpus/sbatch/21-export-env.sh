#!/bin/bash
#SBATCH --job-name=cp2k-h2o
#SBATCH --partition=debug
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=16
#SBATCH --cpus-per-task=4
#SBATCH --time=04:00:00
#SBATCH --mem-per-cpu=2000M
#SBATCH --export=ALL,OMP_PLACES=cores,OMP_PROC_BIND=close,CP2K_DATA_DIR=/apps/cp2k/2023.1/data
#SBATCH --output=cp2k-%j.log

# CP2K 2023.1 (psmp) ab initio MD of 256 water molecules, MPICH build.

module purge
module load gcc/12.2.0 mpich/4.1.1 cp2k/2023.1-psmp

export OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK}
export OMP_STACKSIZE=64M
ulimit -s unlimited

INP=${SLURM_SUBMIT_DIR}/H2O-256.inp
RUN=/scratch/${USER}/cp2k/${SLURM_JOB_ID}
mkdir -p "${RUN}"
cp "${INP}" "${RUN}/"
cd "${RUN}"

echo "CP2K: ${SLURM_NTASKS} ranks x ${OMP_NUM_THREADS} threads, data in ${CP2K_DATA_DIR}"
srun --mpi=pmi2 --cpu-bind=cores cp2k.psmp -i H2O-256.inp -o H2O-256.out

# Keep the trajectory and the restart file; drop the wavefunction dumps.
gzip -f H2O-256-pos-1.xyz
rm -f H2O-256-RESTART.wfn.bak-*

grep -E "ENERGY\| Total FORCE_EVAL" H2O-256.out | tail -n 3
cp H2O-256.out ${SLURM_SUBMIT_DIR}/results/H2O-256-${SLURM_JOB_ID}.out
