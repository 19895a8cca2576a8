#!/bin/bash
#SBATCH --job-name=julia-mc
#SBATCH --partition=debug
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=24
#SBATCH --mem-per-cpu=2G
#SBATCH --time=01:00:00
#SBATCH --output=julia-mc-%j.out
#SBATCH --array=1-3
#SBATCH --propagate=STACK

# Monte Carlo option pricing with Distributed.jl; workers started through
# SlurmClusterManager, one per task.  Three independent replicas.

module load julia/1.9.3

export JULIA_NUM_THREADS=1
export JULIA_DEPOT_PATH=/scratch/${USER}/julia-depot
export JULIA_PROJECT=${SLURM_SUBMIT_DIR}

julia --startup-file=no -e '
	using Distributed, SlurmClusterManager
	addprocs(SlurmManager())
	@everywhere using Random, Statistics
	@everywhere function price(n, seed)
		rng = MersenneTwister(seed)
		S0, K, r, sigma, T = 100.0, 105.0, 0.02, 0.25, 1.0
		payoff = 0.0
		for _ in 1:n
			z = randn(rng)
			ST = S0 * exp((r - sigma^2 / 2) * T + sigma * sqrt(T) * z)
			payoff += max(ST - K, 0.0)
		end
		exp(-r * T) * payoff / n
	end
	replica = parse(Int, ENV["SLURM_ARRAY_TASK_ID"])
	seeds = (1000 * replica) .+ (1:nworkers())
	prices = pmap(s -> price(10^8, s), seeds)
	println("replica $replica: price = ", mean(prices), " +/- ", std(prices) / sqrt(length(prices)))
'
