#!/usr/bin/env bash
# package.sh - build the Debian package hpcbridge_VERSION-REV_ARCH.deb
# from a Release build configured for /usr (docs/slurm-install.md).
#
# usage: scripts/package.sh [BUILD_DIR] [OUT_DIR]
#   BUILD_DIR  the build tree (default build-deb); made if missing
#   OUT_DIR    where the .deb goes (default: the current folder)
# HB_DEB_RELEASE sets the Debian revision (default 1), HB_JOBS the
# parallel compile jobs.
# Build it on a host with the Slurm release of the cluster: the plugins
# are built against that release's headers, and the package depends on it.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build-deb}
out=${2:-.}
jobs=${HB_JOBS:-$(nproc)}

# Debian's build flags, as dpkg-buildpackage would set them: the
# hardening (stack protector, _FORTIFY_SOURCE, relro, bindnow); CMake
# reads CFLAGS and LDFLAGS when it first configures the tree, and no
# CPPFLAGS.  CPack strips the debugging symbols.
export DEB_BUILD_MAINT_OPTIONS=${DEB_BUILD_MAINT_OPTIONS:-hardening=+all}
eval "$(cd "$src" && dpkg-buildflags --export=sh)"
export CFLAGS="$CPPFLAGS $CFLAGS"
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DHB_TESTS=OFF \
	-DCMAKE_INSTALL_PREFIX=/usr -DHB_DEB_RELEASE="${HB_DEB_RELEASE:-1}"
cmake --build "$build" -j"$jobs" --target hpcbridge hpcbridged \
	job_submit_hpcbridge spank_hpcbridge hb-man
(cd "$build" && cpack -G DEB)
mkdir -p "$out"
for f in "$build"/hpcbridge_*.deb; do
	mv "$f" "$out/"
	echo "$out/${f##*/}"
done
