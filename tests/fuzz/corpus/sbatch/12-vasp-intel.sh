#!/bin/bash
#SBATCH --job-name="VASP relax Si64"
#SBATCH --partition=debug
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=64
#SBATCH --mem-per-cpu=1800M
#SBATCH --time=06:00:00
#SBATCH --output=vasp.%j.out
#SBATCH --mail-type=FAIL
#SBATCH --mail-user=materials@example.org
#SBATCH --account=materials

# Geometry relaxation with VASP 6.4 (Intel toolchain).  KPAR and NCORE are
# chosen for 64 ranks on one node.

module purge
module load intel-oneapi-compilers/2023.1.0
module load intel-oneapi-mpi/2021.9.0
module load intel-oneapi-mkl/2023.1.0
module load vasp/6.4.1

export I_MPI_PMI_LIBRARY=/usr/lib/x86_64-linux-gnu/libpmi2.so
export I_MPI_ADJUST_REDUCE=3
export MKL_NUM_THREADS=1
export OMP_NUM_THREADS=1
ulimit -s unlimited

cd ${SLURM_SUBMIT_DIR}
for f in INCAR POSCAR KPOINTS POTCAR; do
	[ -f "$f" ] || { echo "missing $f" >&2; exit 1; }
done

grep -q '^ *KPAR' INCAR || echo "KPAR = 4" >> INCAR
grep -q '^ *NCORE' INCAR || echo "NCORE = 8" >> INCAR

srun --mpi=pmi2 vasp_std > vasp.log

if grep -q "reached required accuracy" OUTCAR; then
	echo "relaxation converged"
	cp CONTCAR POSCAR.relaxed
else
	echo "not converged yet; resubmit with CONTCAR" >&2
fi
