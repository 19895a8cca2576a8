#!/usr/bin/env bash
# Installs what the project needs, builds hpcbridge, and runs its main job
# on the built-in defaults: translate the bundled example scripts to
# Kubeflow MPIJobs and print what became of every directive.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
hb=build/bin/hpcbridge

for f in examples/sbatch/*.sh examples/pbs/*.pbs; do
	printf '\n===== %s\n' "$f"
	"$hb" translate --explain "$f"
done
for f in examples/manifests/*.yaml; do
	[ -e "$f" ] || continue
	printf '\n===== %s -> sbatch\n' "$f"
	"$hb" translate --to sbatch "$f"
done
printf '\n===== examples/sbatch/mpi-hello.sh -> MPIJob\n'
"$hb" translate examples/sbatch/mpi-hello.sh
