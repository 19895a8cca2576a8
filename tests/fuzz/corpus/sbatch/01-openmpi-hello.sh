#!/bin/bash
#
# Open MPI smoke test across two nodes: one rank per core, 32 per node.
# Used by the operations team after every OS image update.
#
#SBATCH --job-name=ompi-hello
#SBATCH --partition=debug
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=32
#SBATCH --cpus-per-task=1
#SBATCH --mem=64G
#SBATCH --time=00:15:00
#SBATCH --output=%x-%j.out
#SBATCH --error=%x-%j.err

set -euo pipefail

echo "Job ${SLURM_JOB_ID} on ${SLURM_JOB_NUM_NODES} nodes: ${SLURM_JOB_NODELIST}"
echo "Submitted from ${SLURM_SUBMIT_DIR} at $(date --iso-8601=seconds)"

module purge
module load gcc/12.2.0
module load openmpi/4.1.5

# Build the test program once per job in node-local scratch.
WORK="${TMPDIR:-/tmp}/ompi-hello-${SLURM_JOB_ID}"
mkdir -p "${WORK}"
cat > "${WORK}/hello.c" <<'SRC'
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	int rank, size, len;
	char host[MPI_MAX_PROCESSOR_NAME];

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Get_processor_name(host, &len);
	printf("rank %d of %d on %s\n", rank, size, host);
	MPI_Finalize();
	return 0;
}
SRC
mpicc -O2 -o "${WORK}/hello" "${WORK}/hello.c"

export OMPI_MCA_btl=^openib
export OMPI_MCA_pml=ucx
export UCX_TLS=rc,sm,self

mpirun --bind-to core --map-by ppr:32:node "${WORK}/hello" | sort -n -k2 > hello-${SLURM_JOB_ID}.txt

ranks=$(wc -l < hello-${SLURM_JOB_ID}.txt)
if [ "${ranks}" -ne "${SLURM_NTASKS}" ]; then
	echo "expected ${SLURM_NTASKS} ranks, got ${ranks}" >&2
	exit 1
fi
echo "all ${ranks} ranks reported"
rm -rf "${WORK}"
