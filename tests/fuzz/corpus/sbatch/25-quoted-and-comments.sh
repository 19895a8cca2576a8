#!/bin/bash
## -------------------------------------------------------------------- ##
##  Post-processing of the "Big Run #2" campaign.  Directive arguments   ##
##  use quotes, escapes and trailing comments the way people write them. ##
## -------------------------------------------------------------------- ##
#SBATCH --job-name="Big Run #2 post"    # quotes keep the space and the '#'
#SBATCH --comment='campaign: big-run-2; step: post'
#SBATCH --partition=debug               # short queue is enough
#SBATCH --ntasks=8 --cpus-per-task=2    # two options on one line
#SBATCH --mem-per-cpu=1500M
#SBATCH --time=45                       # minutes
#SBATCH --output=post\#%j.log               # backslash keeps the #
#SBATCH --mail-type=END  --mail-user="data team <data@example.org>"

#   Blank and comment lines between directives do not stop sbatch.

#SBATCH --array=1-4

module load python/3.11 parallel/20230722

CAMPAIGN=/project/big-run-2
PART=${SLURM_ARRAY_TASK_ID}
echo "post-processing part ${PART} of ${SLURM_ARRAY_TASK_COUNT}"

# One Python worker per task, fed by GNU parallel through srun.
find ${CAMPAIGN}/raw/part${PART} -name '*.h5' | sort > files-${PART}.txt
parallel --jobs ${SLURM_NTASKS} --joblog post-${PART}.joblog \
	"srun --exclusive -n1 -c${SLURM_CPUS_PER_TASK} python3 reduce.py {} ${CAMPAIGN}/reduced/" \
	:::: files-${PART}.txt

failed=$(awk 'NR > 1 && $7 != 0' post-${PART}.joblog | wc -l)
echo "part ${PART}: ${failed} failed files"
[ "${failed}" -eq 0 ]
