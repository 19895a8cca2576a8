#!/usr/bin/env bash
# Installs every Debian 12 package hpcbridge needs to build and test.
# Idempotent; run as root.
set -euo pipefail

pkgs=(
	build-essential cmake pkg-config git
	clang libclang-rt-14-dev llvm
	libcmocka-dev libcjson-dev libyaml-dev libsqlite3-dev sqlite3
	libmicrohttpd-dev libcurl4-openssl-dev libssl-dev python3-kubernetes
	munge slurm-wlm slurmctld slurmd slurm-client libslurm-dev
	slurmdbd mariadb-server
	python3 python3-yaml openmpi-bin libopenmpi-dev curl openssl
	# the fabric inventory (gateway/fabric) lists RDMA devices through it
	libibverbs-dev
	procps util-linux passwd binutils
	# report_html.test.sh renders the HTML report in headless Chromium
	chromium fonts-dejavu-core
	# S3: OpenStack Swift with s3api (tests/integration/lib/swift.sh),
	# and the S3 clients people use, as peers and checks
	swift swift-proxy swift-account swift-container swift-object
	python3-swift awscli rclone s3cmd
	# Slurm's own qsub/qstat/qdel wrappers: the peer hpcbridge qsub is
	# scored against (tests/integration/pbs_vs_torque.test.sh)
	slurm-wlm-torque
	# the daemon's service: sd_notify and the watchdog (libsystemd),
	# systemd-analyze verify; the Debian package (dpkg-dev, fakeroot);
	# the metrics scrape parser; bash completion
	libsystemd-dev systemd dpkg-dev fakeroot
	python3-prometheus-client bash-completion
)

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# kubectl (Debian's package `kubectl`) checks the Kubernetes emulator with
# the client people use.  Installed apart: a machine whose sources lack it
# still builds, and the tests that need it say so.
if ! command -v kubectl >/dev/null 2>&1; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends kubectl ||
		echo "setup: package kubectl is not available here" >&2
fi
