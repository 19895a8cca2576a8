#!/bin/bash
#SBATCH --job-name=nccl-allreduce
#SBATCH --partition=gpu
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=4
#SBATCH --gpus-per-node=a100:4
#SBATCH --cpus-per-task=8
#SBATCH --time=00:30:00
#SBATCH --exclusive
#SBATCH --output=nccl-%j.txt

# Fabric acceptance test: NCCL all_reduce bandwidth across 16 GPUs.

module load cuda/12.1 nccl/2.18.3 openmpi/4.1.5 nccl-tests/2.13.8

export NCCL_DEBUG=INFO
export NCCL_DEBUG_SUBSYS=INIT,NET
export NCCL_IB_HCA=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1
export NCCL_IB_GID_INDEX=3
export NCCL_NET_GDR_LEVEL=PHB
export NCCL_SOCKET_IFNAME=^lo,docker0
export NCCL_ALGO=Ring
export UCX_NET_DEVICES=mlx5_0:1

echo "== topology on $(hostname -s)"
nvidia-smi topo -m

for op in all_reduce_perf all_gather_perf reduce_scatter_perf; do
	echo "== ${op}"
	srun --mpi=pmix ${op} -b 8 -e 8G -f 2 -g 1 -c 1 -n 50 -w 5
done | tee nccl-${SLURM_JOB_ID}.log

busbw=$(awk '/Avg bus bandwidth/ {print $NF}' nccl-${SLURM_JOB_ID}.log | head -n 1)
echo "average bus bandwidth: ${busbw} GB/s"
awk -v b="${busbw}" 'BEGIN { exit !(b > 150) }' || {
	echo "bandwidth below acceptance threshold" >&2
	exit 1
}
