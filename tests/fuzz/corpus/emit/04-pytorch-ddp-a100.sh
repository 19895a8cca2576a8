#!/bin/bash
#SBATCH --job-name=resnet50-ddp
#SBATCH --partition=gpu
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=4
#SBATCH --cpus-per-task=12
#SBATCH --gres=gpu:a100:4
#SBATCH --mem=400G
#SBATCH --time=08:00:00
#SBATCH --output=train-%x-%j.out
#SBATCH --signal=B:USR1@300

# Distributed data-parallel training of ResNet-50 on ImageNet.
# One process per GPU; NCCL over InfiniBand between the two nodes.

module purge
module load cuda/12.1 cudnn/8.9 nccl/2.18 openmpi/4.1.5
source /apps/conda/etc/profile.d/conda.sh
conda activate torch-2.1

export NCCL_DEBUG=WARN
export NCCL_IB_DISABLE=0
export NCCL_IB_HCA=mlx5_0,mlx5_1
export NCCL_SOCKET_IFNAME=ib0
export NCCL_P2P_DISABLE=0
export OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK}

export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
export MASTER_PORT=29500
export WORLD_SIZE=${SLURM_NTASKS}

CKPT=/shared/ckpt/resnet50
mkdir -p "${CKPT}"

# On the warning signal, ask the trainer to checkpoint and requeue.
trap 'echo "caught USR1, checkpointing"; touch "${CKPT}/STOP"; wait' USR1

srun --cpu-bind=cores --gpus-per-task=1 \
	python -u train.py \
	--data /shared/datasets/imagenet \
	--arch resnet50 \
	--epochs 90 \
	--batch-size 256 \
	--lr 0.1 \
	--workers ${SLURM_CPUS_PER_TASK} \
	--checkpoint-dir "${CKPT}" \
	--resume auto &
wait
