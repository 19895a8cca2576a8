#!/bin/bash
#SBATCH -J ensemble
#SBATCH -p long
#SBATCH -a 1-31:2,40-45
#SBATCH -N 1
#SBATCH -n 16
#SBATCH -t 04:00:00
#SBATCH --mem=32000
#SBATCH -o ensemble-%A-%a.out

# Odd ensemble members 1..31 plus the extra members 40..45, each an MPI run
# of 16 ranks on one node.

module load gcc/11.3.0 openmpi/4.1.4 fftw/3.3.10

MEMBER=$(printf "%03d" "${SLURM_ARRAY_TASK_ID}")
WORK=/scratch/${USER}/ensemble/member_${MEMBER}
mkdir -p "${WORK}" && cd "${WORK}"

cp ${SLURM_SUBMIT_DIR}/namelist.template namelist
sed -i "s/@MEMBER@/${MEMBER}/; s/@SEED@/$((1000 + SLURM_ARRAY_TASK_ID))/" namelist

# Boundary conditions come from the shared forcing archive; link rather
# than copy, they are large and read-only.
for f in ${SLURM_SUBMIT_DIR}/forcing/*.nc; do
	ln -sf "$f" .
done

export OMP_NUM_THREADS=1
export OMPI_MCA_rmaps_base_mapping_policy=core
export OMPI_MCA_hwloc_base_binding_policy=core

echo "member ${MEMBER}: ${SLURM_NTASKS} ranks on $(hostname -s), start $(date)"
mpirun -np ${SLURM_NTASKS} ${SLURM_SUBMIT_DIR}/bin/ocean_model namelist

echo "member ${MEMBER} done at $(date)"

# Keep only the daily means; the hourly output is regenerated on demand.
python3 ${SLURM_SUBMIT_DIR}/tools/daily_means.py --in output/ --out means_${MEMBER}.nc
rm -rf output/
