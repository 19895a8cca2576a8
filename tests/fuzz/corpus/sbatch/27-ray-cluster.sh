#!/bin/bash
#SBATCH --job-name=ray-tune
#SBATCH --partition=gpu
#SBATCH --nodes=3
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=32
#SBATCH --gpus-per-task=2
#SBATCH --mem=200G
#SBATCH --time=06:00:00
#SBATCH --output=ray-%j.log

# Ray cluster inside the allocation: head on the first node, workers on
# the rest, then a Ray Tune hyper-parameter search.

module load cuda/12.1
source ~/venvs/ray/bin/activate

nodes=($(scontrol show hostnames "${SLURM_JOB_NODELIST}"))
head_node=${nodes[0]}
head_ip=$(srun --nodes=1 --ntasks=1 -w "${head_node}" hostname --ip-address | awk '{print $1}')
port=6379
export RAY_ADDRESS="${head_ip}:${port}"
echo "Ray head at ${RAY_ADDRESS}"

srun --nodes=1 --ntasks=1 -w "${head_node}" \
	ray start --head --node-ip-address="${head_ip}" --port=${port} \
	--num-cpus=${SLURM_CPUS_PER_TASK} --num-gpus=2 --block &
sleep 20

for ((i = 1; i < SLURM_JOB_NUM_NODES; i++)); do
	srun --nodes=1 --ntasks=1 -w "${nodes[$i]}" \
		ray start --address="${RAY_ADDRESS}" \
		--num-cpus=${SLURM_CPUS_PER_TASK} --num-gpus=2 --block &
	sleep 5
done

python -u tune_search.py --num-samples 64 --gpus-per-trial 1 \
	--storage /scratch/${USER}/ray_results

ray stop || true
