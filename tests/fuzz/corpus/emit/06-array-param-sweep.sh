#!/bin/bash
# Parameter sweep: one serial task per parameter set, at most ten at once.
#SBATCH --job-name=sweep
#SBATCH --partition=debug
#SBATCH --array=0-99%10
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=2
#SBATCH --mem-per-cpu=2G
#SBATCH --time=00:45:00
#SBATCH --output=sweep/out_%A_%a.txt
#SBATCH --error=sweep/err_%A_%a.txt

module load python/3.11

# Every task writes into the shared results directory; make sure it exists
# even if this is the first task to start.
mkdir -p "${SLURM_SUBMIT_DIR}/results" "${SLURM_SUBMIT_DIR}/sweep"
cd "${SLURM_SUBMIT_DIR}"

# Record where and when this task ran, for the sweep's provenance log.
{
	printf '%s,%s,%s,%s\n' "${SLURM_ARRAY_JOB_ID}" "${SLURM_ARRAY_TASK_ID}" \
		"$(hostname -s)" "$(date +%s)"
} >> sweep/provenance.csv

PARAMS=${SLURM_SUBMIT_DIR}/params.csv
LINE=$((SLURM_ARRAY_TASK_ID + 2))   # skip the CSV header
read -r ALPHA BETA SEED < <(sed -n "${LINE}p" "${PARAMS}" | tr ',' ' ')

echo "task ${SLURM_ARRAY_TASK_ID} of ${SLURM_ARRAY_TASK_COUNT}: alpha=${ALPHA} beta=${BETA} seed=${SEED}"

export OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK}
python3 model.py --alpha "${ALPHA}" --beta "${BETA}" --seed "${SEED}" \
	--out results/run_${SLURM_ARRAY_TASK_ID}.json

# Summarise the run for the collector script (one JSON line per task).
python3 - "results/run_${SLURM_ARRAY_TASK_ID}.json" <<'PY' >> sweep/summary.jsonl
import json, sys
with open(sys.argv[1]) as fh:
    r = json.load(fh)
print(json.dumps({"task": r.get("task"), "loss": r.get("loss"), "acc": r.get("acc")}))
PY

if [ -s results/run_${SLURM_ARRAY_TASK_ID}.json ]; then
	echo "ok"
else
	echo "no result written" >&2
	exit 1
fi
