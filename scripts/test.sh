#!/usr/bin/env bash
# Installs what the project needs, builds it with AddressSanitizer and
# UBSan, and runs every test: unit, integration (real Slurm on loopback,
# real Open MPI) and a bounded run of each fuzz target.
#
#   HB_FUZZ_SECONDS   seconds per fuzz target (default 30)
#   HB_JOBS           build parallelism (default: nproc)
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
# The loopback Slurm needs this host's name to resolve to 127.x; as root the
# test library may add it to /etc/hosts when it does not.
export HB_SLURM_FIX_HOSTS=${HB_SLURM_FIX_HOSTS:-1}
jobs=${HB_JOBS:-$(nproc)}

# Warnings are errors here (HB_WERROR), not in a user's or a
# distribution's build.  Release builds first, with gcc and with clang, as
# a distribution builds: their optimisers find warnings
# (maybe-uninitialized) the sanitizer build does not.
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DHB_WERROR=ON
cmake --build build-release -j"$jobs"
cmake -S . -B build-release-clang -DCMAKE_C_COMPILER=clang \
	-DCMAKE_BUILD_TYPE=Release -DHB_WERROR=ON -DHB_TESTS=OFF
cmake --build build-release-clang -j"$jobs"

cmake -S . -B build-asan -DHB_SANITIZE=ON -DHB_WERROR=ON
cmake --build build-asan -j"$jobs"
ctest --test-dir build-asan --output-on-failure -j"$jobs" -LE fuzz

cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DHB_FUZZ=ON -DHB_WERROR=ON \
	-DHB_FUZZ_SECONDS="${HB_FUZZ_SECONDS:-30}"
cmake --build build-fuzz -j"$jobs"
ctest --test-dir build-fuzz --output-on-failure -j"$jobs" -L fuzz
