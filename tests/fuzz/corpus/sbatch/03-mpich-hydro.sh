#!/bin/bash
# CFD solver built against MPICH 4.1 with the Hydra process manager.
#SBATCH --job-name=hydro-sod
#SBATCH --partition=debug
#SBATCH --nodes=2
#SBATCH --ntasks=96
#SBATCH --time=01:30:00
#SBATCH --mem=120G
#SBATCH --output=hydro.%j.out

module load gcc/12.2.0 mpich/4.1.1 hdf5/1.14.1-mpich

export MPIR_CVAR_CH4_OFI_ENABLE_TAGGED=1
export MPIR_CVAR_ASYNC_PROGRESS=0
export HYDRO_CASE=sod-3d-512

CASE_DIR=${SLURM_SUBMIT_DIR}/cases/${HYDRO_CASE}
OUT_DIR=${SLURM_SUBMIT_DIR}/out/${HYDRO_CASE}-${SLURM_JOB_ID}
mkdir -p "${OUT_DIR}"
cp "${CASE_DIR}/input.nml" "${OUT_DIR}/"
cd "${OUT_DIR}"

# Hydra reads the allocation from Slurm, but spell it out for the log.
scontrol show hostnames "${SLURM_JOB_NODELIST}" > hosts.txt
echo "hosts:"; cat hosts.txt

mpiexec -n ${SLURM_NTASKS} -ppn 48 -f hosts.txt \
	-bind-to core -map-by core \
	${SLURM_SUBMIT_DIR}/bin/hydro input.nml > solver.log 2>&1

tail -n 20 solver.log
python3 ${SLURM_SUBMIT_DIR}/tools/plot_density.py --input snapshots/ --out density.png || true
echo "done: $(ls snapshots | wc -l) snapshots"
