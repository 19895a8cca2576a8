#!/bin/bash
#SBATCH --job-name=ds-gpt
#SBATCH --partition=gpu
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=48
#SBATCH --gres=gpu:h100:4
#SBATCH --mem=480G
#SBATCH --time=2-00:00:00
#SBATCH --output=ds-%j.out
#SBATCH --requeue

# DeepSpeed ZeRO-3 pretraining: the launcher wants a hostfile with slots.

module load cuda/12.2 openmpi/4.1.5
source /apps/conda/etc/profile.d/conda.sh
conda activate deepspeed-0.12

export NCCL_IB_DISABLE=0
export NCCL_P2P_LEVEL=NVL
export NCCL_ASYNC_ERROR_HANDLING=1
export PDSH_RCMD_TYPE=ssh

HOSTFILE=${SLURM_SUBMIT_DIR}/hostfile-${SLURM_JOB_ID}
scontrol show hostnames "${SLURM_JOB_NODELIST}" | \
	awk '{ print $1 " slots=4" }' > "${HOSTFILE}"
cat "${HOSTFILE}"

MASTER=$(head -n 1 "${HOSTFILE}" | cut -d' ' -f1)

deepspeed --hostfile "${HOSTFILE}" \
	--master_addr "${MASTER}" --master_port 29600 \
	pretrain_gpt.py \
	--deepspeed_config ds_zero3.json \
	--num-layers 32 --hidden-size 4096 --num-attention-heads 32 \
	--seq-length 4096 --micro-batch-size 2 --global-batch-size 512 \
	--train-iters 100000 --save checkpoints --load checkpoints \
	--data-path data/pile_text_document

rm -f "${HOSTFILE}"
