#!/bin/bash
#SBATCH --job-name=nightly-report
#SBATCH --partition=debug
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=4
#SBATCH --mem=16G
#SBATCH --time=02:00:00
#SBATCH --begin=now+1hour
#SBATCH --deadline=2035-12-31T23:00:00
#SBATCH --mail-type=BEGIN,END,FAIL,TIME_LIMIT_80
#SBATCH --mail-user=reports@example.org
#SBATCH --comment="nightly usage report, owner: hpc-ops"
#SBATCH --output=/tmp/nightly-report-%j.out
#SBATCH --qos=normal

# Builds the nightly usage report from the accounting database and mails it.
# Deferred by an hour so that it runs after the accounting rollup.

set -euo pipefail
module load python/3.11

DAY=$(date -d yesterday +%F)
OUT=${SLURM_SUBMIT_DIR}/reports/${DAY}
mkdir -p "${OUT}"

sacct --allusers --starttime "${DAY}T00:00:00" --endtime "${DAY}T23:59:59" \
	--format=JobID,User,Account,Partition,Elapsed,AllocCPUS,AllocTRES%60,State \
	--parsable2 > "${OUT}/sacct.psv"

python3 ${SLURM_SUBMIT_DIR}/tools/usage_report.py \
	--input "${OUT}/sacct.psv" \
	--rates ${SLURM_SUBMIT_DIR}/config/rates.yaml \
	--html "${OUT}/report.html" \
	--csv "${OUT}/by_account.csv" \
	--threads ${SLURM_CPUS_PER_TASK}

lines=$(wc -l < "${OUT}/by_account.csv")
echo "report for ${DAY}: ${lines} accounts"
gzip -9 "${OUT}/sacct.psv"
