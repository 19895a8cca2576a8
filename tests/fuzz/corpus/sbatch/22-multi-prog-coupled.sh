#!/bin/bash
#SBATCH --job-name=coupled-ocean-atmos
#SBATCH --partition=long
#SBATCH --nodes=3
#SBATCH --ntasks=160
#SBATCH --time=18:00:00
#SBATCH --mem=300G
#SBATCH --output=coupled-%j.out
#SBATCH --kill-on-invalid-dep=yes

# Coupled run: 96 atmosphere ranks, 60 ocean ranks, 4 coupler ranks,
# started as one MPI job with srun --multi-prog.

module purge
module load gcc/12.2.0 openmpi/4.1.5 netcdf-fortran/4.6.0 oasis3-mct/5.0

cd /scratch/${USER}/coupled

ATM=96
OCN=60
CPL=4
if [ $((ATM + OCN + CPL)) -ne "${SLURM_NTASKS}" ]; then
	echo "rank layout does not match the allocation" >&2
	exit 1
fi

cat > multi.conf <<CONF
0-$((ATM - 1))                      ./atmos.exe
${ATM}-$((ATM + OCN - 1))           ./ocean.exe
$((ATM + OCN))-$((SLURM_NTASKS - 1)) ./coupler.exe
CONF
cat multi.conf

# OASIS reads its namcouple from the run directory; refuse to start
# without it rather than fail after the atmosphere has initialised.
for f in namcouple rmp_*.nc grids.nc masks.nc areas.nc; do
	ls $f >/dev/null 2>&1 || { echo "missing $f" >&2; exit 1; }
done

export OMP_NUM_THREADS=1
srun --mpi=pmix --multi-prog multi.conf

echo "coupled run finished at $(date)"
ls -1 restart/ | tail -n 5
