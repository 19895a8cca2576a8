#!/bin/bash
#SBATCH --job-name=climate-spinup
#SBATCH --partition=long
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=64
#SBATCH --time=7-00:00:00
#SBATCH --time-min=1-00:00:00
#SBATCH --mem-per-cpu=1G
#SBATCH --signal=B:USR1@600
#SBATCH --requeue
#SBATCH --open-mode=append
#SBATCH --output=spinup-%j.out
#SBATCH --dependency=singleton

# Multi-week climate model spin-up.  The job checkpoints when Slurm sends
# USR1 ten minutes before the limit, then requeues itself.

module purge
module load intel-oneapi-compilers/2023.1.0 intel-oneapi-mpi/2021.9.0 \
	netcdf-fortran/4.6.0 pnetcdf/1.12.3

export I_MPI_PMI_LIBRARY=/usr/lib/x86_64-linux-gnu/libpmi2.so
RUNDIR=/scratch/${USER}/spinup
cd "${RUNDIR}"

checkpoint_and_requeue() {
	echo "$(date): USR1 received, writing restart"
	touch "${RUNDIR}/WRITE_RESTART_NOW"
	# give the model time to write, then requeue this same job
	wait "${MODEL_PID}"
	scontrol requeue "${SLURM_JOB_ID}"
}
trap checkpoint_and_requeue USR1

if ls restart/*.nc >/dev/null 2>&1; then
	echo "restarting from $(ls -t restart/*.nc | head -n 1)"
	sed -i 's/^ *start_type *=.*/start_type = "continue"/' namelist
fi

srun --mpi=pmi2 ./cesm.exe &
MODEL_PID=$!
wait "${MODEL_PID}"
echo "model exited with $? at $(date)"
