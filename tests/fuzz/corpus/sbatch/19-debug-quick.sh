#!/bin/sh
# Quick interactive-style check of a freshly built binary on the debug queue.
#SBATCH -p debug -N1 -n4 -t 00:10:00
#SBATCH -J quickcheck -o quickcheck.out
#SBATCH --mem=8G            # plenty for the unit tests
#SBATCH --quiet

echo "host: $(hostname)"
echo "cpus: $(nproc)"
echo "slurm cpus on node: ${SLURM_CPUS_ON_NODE}"

cd "${SLURM_SUBMIT_DIR}" || exit 1

if [ ! -x build/bin/solver ]; then
	echo "no solver binary; did the build fail?" >&2
	exit 1
fi

# Run the unit tests first, then a tiny MPI case.
ctest --test-dir build --output-on-failure -j 4 || exit 1
srun -n 4 build/bin/solver --case tests/cases/tiny.yaml --steps 10

for f in output/tiny_*.h5; do
	h5dump -H "$f" > /dev/null || { echo "corrupt $f" >&2; exit 1; }
done
# Compare against the reference output committed with the test case.
python3 tests/tools/compare.py output/tiny_final.h5 tests/cases/tiny_reference.h5 \
	--rtol 1e-10 --atol 1e-12 || { echo "results differ from reference" >&2; exit 1; }

rm -rf output/tiny_*.h5
echo "quickcheck passed"
