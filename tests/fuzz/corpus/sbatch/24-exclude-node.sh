#!/bin/bash
#SBATCH --job-name=qe-scf
#SBATCH --partition=long
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=32
#SBATCH --cpus-per-task=2
#SBATCH --exclude=hb4
#SBATCH --time=10:00:00
#SBATCH --mem=250G
#SBATCH --output=qe-%j.out
#SBATCH --error=qe-%j.err

# Quantum ESPRESSO pw.x SCF; node hb4 is excluded while its IB link flaps.

module purge
module load intel-oneapi-compilers/2023.1.0
module load intel-oneapi-mpi/2021.9.0
module load intel-oneapi-mkl/2023.1.0
module load quantum-espresso/7.2

export OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK}
export I_MPI_PMI_LIBRARY=/usr/lib/x86_64-linux-gnu/libpmi2.so
export ESPRESSO_TMPDIR=/scratch/${USER}/qe/${SLURM_JOB_ID}
export ESPRESSO_PSEUDO=/apps/pseudo/sssp_efficiency_1.3
mkdir -p "${ESPRESSO_TMPDIR}"

cd ${SLURM_SUBMIT_DIR}/calc
NK=4   # k-point pools
ND=16  # diagonalisation group

echo "pw.x on ${SLURM_JOB_NODELIST} with ${SLURM_NTASKS} ranks, -nk ${NK} -nd ${ND}"
srun --mpi=pmi2 pw.x -nk ${NK} -nd ${ND} -input scf.in > scf.out

if grep -q "convergence has been achieved" scf.out; then
	grep "!    total energy" scf.out | tail -n 1
else
	echo "SCF did not converge" >&2
	exit 1
fi
rm -rf "${ESPRESSO_TMPDIR}"
