#!/bin/bash
#SBATCH -N2 -n8 -c2 -t2:00:00 -plong
#SBATCH -Jmd-short -o%x-%j.out -e%x-%j.err
#SBATCH -HQ
#SBATCH --mem 16G
#SBATCH --ntasks-per-node 4
#SBATCH --mail-type ALL --mail-user=md@example.org

# Short options clustered the way old scripts write them: -N2, -plong,
# -HQ (hold, quiet).  Long options with the value as the next word.

module purge
module load gcc/11.3.0 openmpi/4.1.4 amber/22

export OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK}
export AMBERHOME=/apps/amber/22
cd ${SLURM_SUBMIT_DIR}/amber
[ -f complex.prmtop ] || { echo "run tleap first" >&2; exit 1; }

for stage in min heat equil; do
	if [ ! -f ${stage}.rst7 ]; then
		prev=$(case ${stage} in min) echo complex;; heat) echo min;; equil) echo heat;; esac)
		mpirun -np ${SLURM_NTASKS} pmemd.MPI -O -i ${stage}.in -o ${stage}.out \
			-p complex.prmtop -c ${prev}.rst7 -r ${stage}.rst7 \
			-x ${stage}.nc -ref ${prev}.rst7
	fi
done

tail -n 30 equil.out | grep -E "NSTEP|Etot" || true
# The production stage is a separate job; print the command for it.
echo "next: sbatch --dependency=afterok:${SLURM_JOB_ID} prod.sh"
echo "stages done: $(ls *.rst7 | wc -l)"
