#!/bin/bash
#SBATCH --job-name=hpl
#SBATCH --partition=long
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=16
#SBATCH --cpus-per-task=4
#SBATCH --mem=450G
#SBATCH --exclusive
#SBATCH --time=03:00:00
#SBATCH --output=hpl-%j.out
#SBATCH --switches=1@00:30:00

# HPL (Linpack) on four nodes, 16 ranks x 4 threads per node.  The problem
# size fills about 80% of memory.

module purge
module load gcc/12.2.0 openmpi/4.1.5 openblas/0.3.23-openmp hpl/2.3

export OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK}
export OMP_PLACES=cores
export OMP_PROC_BIND=close
export OPENBLAS_NUM_THREADS=${SLURM_CPUS_PER_TASK}

MEM_GB=450
NODES=${SLURM_JOB_NUM_NODES}
NB=232
N=$(python3 -c "import math; n=int(math.sqrt(${MEM_GB}*${NODES}*0.8*2**30/8)); print(n - n % ${NB})")
P=8
Q=8

cat > HPL.dat <<DAT
HPLinpack benchmark input file
Innovative Computing Laboratory, University of Tennessee
HPL.out      output file name (if any)
6            device out (6=stdout,7=stderr,file)
1            # of problems sizes (N)
${N}         Ns
1            # of NBs
${NB}        NBs
0            PMAP process mapping (0=Row-,1=Column-major)
1            # of process grids (P x Q)
${P}         Ps
${Q}         Qs
16.0         threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
4            NBMINs (>= 1)
DAT

echo "HPL N=${N} NB=${NB} P=${P} Q=${Q}"
mpirun -np ${SLURM_NTASKS} --map-by ppr:16:node:PE=${OMP_NUM_THREADS} --bind-to core xhpl
