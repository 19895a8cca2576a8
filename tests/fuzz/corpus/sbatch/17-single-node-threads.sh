#!/bin/bash
#SBATCH --job-name=genome-assembly
#SBATCH --partition=long
#SBATCH --nodes=1
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=64
#SBATCH --mem=0
#SBATCH --exclusive
#SBATCH --time=3-00:00:00
#SBATCH --output=assembly_%j.log
#SBATCH --mail-type=BEGIN,END,FAIL
#SBATCH --mail-user=genomics-core@example.org

# De novo assembly of a plant genome from HiFi reads with hifiasm, then
# purge haplotigs and run BUSCO.  Uses the whole node (--mem=0).

set -euo pipefail
module load hifiasm/0.19.5 purge_dups/1.2.6 busco/5.4.7 samtools/1.17

THREADS=${SLURM_CPUS_PER_TASK}
SAMPLE=Qrob_PM1N
READS=/data/genomics/${SAMPLE}/hifi/*.fastq.gz
OUT=/scratch/${USER}/assembly/${SAMPLE}
mkdir -p "${OUT}"
cd "${OUT}"

echo "[$(date)] hifiasm with ${THREADS} threads"
hifiasm -o ${SAMPLE} -t ${THREADS} --primary ${READS} 2> hifiasm.log
awk '/^S/{print ">"$2; print $3}' ${SAMPLE}.p_ctg.gfa > ${SAMPLE}.p_ctg.fa

echo "[$(date)] purge_dups"
minimap2 -t ${THREADS} -xasm20 ${SAMPLE}.p_ctg.fa ${READS} | gzip -c > reads.paf.gz
pbcstat reads.paf.gz
calcuts PB.stat > cutoffs 2> calcuts.log
split_fa ${SAMPLE}.p_ctg.fa > split.fa
minimap2 -t ${THREADS} -xasm5 -DP split.fa split.fa | gzip -c > self.paf.gz
purge_dups -2 -T cutoffs -c PB.base.cov self.paf.gz > dups.bed 2> purge_dups.log
get_seqs -e dups.bed ${SAMPLE}.p_ctg.fa

echo "[$(date)] BUSCO"
busco -i purged.fa -l embryophyta_odb10 -m genome -c ${THREADS} -o busco_${SAMPLE}
samtools faidx purged.fa
echo "[$(date)] done: $(wc -l < purged.fa.fai) contigs"
