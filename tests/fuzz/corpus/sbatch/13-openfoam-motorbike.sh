#!/bin/bash
# OpenFOAM v2306 motorBike tutorial at production size.
#SBATCH --job-name=of-motorbike
#SBATCH --partition=long
#SBATCH --nodes=2
#SBATCH --ntasks=128
#SBATCH --time=05:00:00
#SBATCH --mem=200G
#SBATCH --output=log.%x.%j
#SBATCH --chdir=/scratch/cfd/motorBike

module purge
module load gcc/12.2.0 openmpi/4.1.5 openfoam/v2306
source ${FOAM_BASH}

NP=${SLURM_NTASKS}
foamDictionary -entry numberOfSubdomains -set ${NP} system/decomposeParDict
foamDictionary -entry method -set scotch system/decomposeParDict

if [ ! -d constant/polyMesh ]; then
	blockMesh > log.blockMesh 2>&1
	surfaceFeatureExtract > log.surfaceFeatureExtract 2>&1
	decomposePar -copyZero > log.decomposePar 2>&1
	mpirun -np ${NP} snappyHexMesh -parallel -overwrite > log.snappyHexMesh 2>&1
	mpirun -np ${NP} checkMesh -parallel > log.checkMesh 2>&1
fi

restore0Dir -processor
mpirun -np ${NP} patchSummary -parallel > log.patchSummary 2>&1
mpirun -np ${NP} potentialFoam -parallel -writephi > log.potentialFoam 2>&1
mpirun -np ${NP} simpleFoam -parallel > log.simpleFoam 2>&1

reconstructParMesh -constant > log.reconstructParMesh 2>&1
reconstructPar -latestTime > log.reconstructPar 2>&1

foamLog log.simpleFoam > /dev/null
echo "final residuals:"
tail -n 5 logs/p_0
