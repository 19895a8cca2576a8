#!/bin/bash
#SBATCH --job-name=hvd-bert
#SBATCH --partition=gpu
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=4
#SBATCH --cpus-per-task=10
#SBATCH --gres=gpu:4
#SBATCH --mem-per-gpu=80G
#SBATCH --time=20:00:00
#SBATCH --output=%x-%j.out
#SBATCH --open-mode=append

# BERT-large pretraining phase 1 with Horovod over Open MPI.

module purge
module load cuda/11.8 cudnn/8.6 nccl/2.16 openmpi/4.1.5
source ~/envs/tf2.13/bin/activate

export HOROVOD_GPU_OPERATIONS=NCCL
export HOROVOD_FUSION_THRESHOLD=67108864
export HOROVOD_CYCLE_TIME=5
export NCCL_DEBUG=WARN
export NCCL_IB_DISABLE=0
export TF_CPP_MIN_LOG_LEVEL=2
export TF_ENABLE_ONEDNN_OPTS=0

echo "start: $(date) on ${SLURM_JOB_NODELIST}"

mpirun -np ${SLURM_NTASKS} \
	--map-by ppr:4:node:PE=${SLURM_CPUS_PER_TASK} --bind-to core \
	-x NCCL_DEBUG -x NCCL_IB_DISABLE -x LD_LIBRARY_PATH -x PATH \
	-x HOROVOD_GPU_OPERATIONS -x HOROVOD_FUSION_THRESHOLD \
	python run_pretraining.py \
	--input_files_dir=/datasets/bert/phase1 \
	--output_dir=${SLURM_SUBMIT_DIR}/results/phase1 \
	--bert_config_file=bert_large_config.json \
	--train_batch_size=64 --max_seq_length=128 \
	--num_train_steps=7038 --learning_rate=6e-3 \
	--use_xla --amp

echo "end: $(date)"
