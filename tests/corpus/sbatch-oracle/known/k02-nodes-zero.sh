#!/bin/bash
# oracle-known: acceptance - sbatch accepts a zero-node job (NumNodes=0,
# NumTasks=0, meant for burst-buffer-only work); hpcbridge rejects it.
#SBATCH -N 0
hostname
