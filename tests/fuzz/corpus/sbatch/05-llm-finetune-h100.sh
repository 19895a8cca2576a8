#!/usr/bin/env bash
#SBATCH --job-name=llama-ft
#SBATCH --partition=gpu
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=4
#SBATCH --cpus-per-task=16
#SBATCH --gpus-per-node=h100:4
#SBATCH --mem-per-gpu=96G
#SBATCH --time=1-12:00:00
#SBATCH --output=%x_%j.log
#SBATCH --exclusive

# Supervised fine-tuning of a 7B model with FSDP on one 4x H100 node.

set -eo pipefail
module load cuda/12.2 nccl/2.19

source ~/venvs/llm/bin/activate

export NCCL_DEBUG=INFO
export NCCL_NVLS_ENABLE=1
export TORCH_NCCL_ASYNC_ERROR_HANDLING=1
export HF_HOME=/scratch/${USER}/hf-cache
export TOKENIZERS_PARALLELISM=false
export CUDA_DEVICE_MAX_CONNECTIONS=1

nvidia-smi --query-gpu=index,name,memory.total --format=csv

RUN=ft-$(date +%Y%m%d-%H%M)-${SLURM_JOB_ID}
OUT=/scratch/${USER}/runs/${RUN}
mkdir -p "${OUT}"

srun --ntasks=1 torchrun \
	--standalone \
	--nproc_per_node=4 \
	finetune.py \
	--model meta-llama/Llama-2-7b-hf \
	--dataset data/instructions.jsonl \
	--output-dir "${OUT}" \
	--fsdp full_shard \
	--bf16 \
	--per-device-batch-size 8 \
	--gradient-accumulation 4 \
	--epochs 3

echo "finished ${RUN}"
