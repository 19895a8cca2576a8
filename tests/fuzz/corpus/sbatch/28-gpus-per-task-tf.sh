#!/bin/bash
#SBATCH --job-name=tf-multiworker
#SBATCH --partition=gpu
#SBATCH --ntasks=6
#SBATCH --nodes=2
#SBATCH --gpus-per-task=a100:1
#SBATCH --cpus-per-task=8
#SBATCH --mem-per-cpu=8G
#SBATCH --time=05:30:00
#SBATCH --output=tfmw-%j.out
#SBATCH --gres-flags=enforce-binding

# TensorFlow MultiWorkerMirroredStrategy, one worker per GPU; TF_CONFIG is
# built per task from the Slurm environment.

module load cuda/11.8 cudnn/8.6
source ~/envs/tf2.13/bin/activate

export NCCL_DEBUG=WARN
export TF_FORCE_GPU_ALLOW_GROWTH=true

HOSTS=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | paste -sd, -)
echo "hosts: ${HOSTS}"

cat > run_worker.sh <<'WRK'
#!/bin/bash
IFS=, read -ra hosts <<< "${HOSTS}"
workers=""
per_node=$(( (SLURM_NTASKS + SLURM_NNODES - 1) / SLURM_NNODES ))
for ((t = 0; t < SLURM_NTASKS; t++)); do
	h=${hosts[$((t / per_node))]}
	workers+="\"${h}:$((12345 + t))\","
done
export TF_CONFIG="{\"cluster\": {\"worker\": [${workers%,}]}, \"task\": {\"type\": \"worker\", \"index\": ${SLURM_PROCID}}}"
exec python -u train_mw.py --epochs 40 --batch-size 128
WRK
chmod +x run_worker.sh

export HOSTS
srun --kill-on-bad-exit=1 ./run_worker.sh
