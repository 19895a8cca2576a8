#!/bin/bash -l
#SBATCH -J wrf_conus12km
#SBATCH -p long
#SBATCH -N 4
#SBATCH --ntasks-per-node=48
#SBATCH -c 1
#SBATCH --mem-per-cpu=3500M
#SBATCH -t 2-00:00:00
#SBATCH -o logs/wrf-%j.log
#SBATCH --mail-type=END,FAIL
#SBATCH --mail-user=atmos-team@example.org
#SBATCH --requeue

# WRF 4.5 forecast run, CONUS 12 km domain, 48 h forecast.
# Input: met_em files staged by the WPS job into $RUNDIR.

module purge
module load intel-oneapi-compilers/2023.1.0
module load intel-oneapi-mpi/2021.9.0
module load netcdf-fortran/4.6.0
module load hdf5/1.14.1

export I_MPI_PMI_LIBRARY=/usr/lib/x86_64-linux-gnu/libpmi2.so
export I_MPI_FABRICS=shm:ofi
export I_MPI_PIN_DOMAIN=core
export FI_PROVIDER=mlx
export OMP_NUM_THREADS=1
ulimit -s unlimited

RUNDIR=/scratch/${USER}/wrf/conus12km/$(date +%Y%m%d)
WRFDIR=/apps/wrf/4.5/main

cd "${RUNDIR}"
echo "Running in $(pwd) with ${SLURM_NTASKS} MPI ranks"

for f in wrf.exe real.exe; do
	ln -sf "${WRFDIR}/${f}" .
done
ln -sf /apps/wrf/4.5/run/*.TBL .
ln -sf /apps/wrf/4.5/run/RRTMG_* .

if [ ! -f wrfinput_d01 ]; then
	echo "Running real.exe"
	srun --mpi=pmi2 ./real.exe
	mv rsl.out.0000 rsl.real.out
fi

echo "Starting wrf.exe at $(date)"
srun --mpi=pmi2 --kill-on-bad-exit=1 ./wrf.exe
status=$?
echo "wrf.exe finished with ${status} at $(date)"

grep -q "SUCCESS COMPLETE WRF" rsl.out.0000 || exit 2
tar czf rsl-${SLURM_JOB_ID}.tgz rsl.out.* rsl.error.*
rm -f rsl.out.* rsl.error.*
exit ${status}
