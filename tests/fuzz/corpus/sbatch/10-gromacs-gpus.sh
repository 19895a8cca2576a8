#!/bin/bash
#SBATCH -J gmx-lysozyme
#SBATCH -p gpu
#SBATCH -N 2
#SBATCH -n 8
#SBATCH -c 12
#SBATCH --gpus=8
#SBATCH --mem-per-cpu=4G
#SBATCH -t 10:00:00
#SBATCH -o gromacs-%j.out
#SBATCH -e gromacs-%j.err

# GROMACS 2023 production MD: 8 PP ranks over two nodes, 8 GPUs in total,
# PME on GPU, update on GPU.

module purge
module load cuda/12.1
module load openmpi/4.1.5
module load gromacs/2023.2-cuda

export OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK}
export GMX_ENABLE_DIRECT_GPU_COMM=1
export GMX_GPU_PME_DECOMPOSITION=1

cd ${SLURM_SUBMIT_DIR}/md
echo "GROMACS on ${SLURM_JOB_NODELIST}: ${SLURM_NTASKS} ranks x ${OMP_NUM_THREADS} threads"
nvidia-smi -L

if [ ! -f md.tpr ]; then
	gmx grompp -f md.mdp -c npt.gro -t npt.cpt -p topol.top -o md.tpr
fi

# Continue from the last checkpoint if one exists.
CPT=""
[ -f md.cpt ] && CPT="-cpi md.cpt"

srun gmx_mpi mdrun -deffnm md ${CPT} \
	-ntomp ${OMP_NUM_THREADS} \
	-nb gpu -pme gpu -npme 1 -update gpu -bonded gpu \
	-maxh 9.75 -cpt 15 -v

gmx energy -f md.edr -o energy.xvg <<< "Potential"
