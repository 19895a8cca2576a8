#!/usr/bin/env bash
# doctor_slurm.test.sh - hpcbridge doctor's Slurm side against a real,
# private Slurm 22.05 (lib/slurm.sh): what `scontrol --json show nodes`
# says of node features and gres is read as RDMA and GPUs, and checked
# against scontrol's own text; a script that needs RDMA is told whether
# Slurm offers it.
#
# usage: doctor_slurm.test.sh BUILD_DIR SRC_DIR
set -euo pipefail

build=$(cd "${1:?BUILD_DIR}" && pwd -P)
src=$(cd "${2:?SRC_DIR}" && pwd -P)
hb=$build/bin/hpcbridge
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hb-doctor-slurm.XXXXXX")
# The munge user reads the Slurm directory under it.
chmod 0755 "$tmp"

# shellcheck source=lib/slurm.sh
. "$src/tests/integration/lib/slurm.sh"
# q, is and documented, over $tmp/d.json.
# shellcheck source=lib/doctor.sh
. "$src/tests/integration/lib/doctor.sh"
trap 'slurm_down "$tmp/slurm" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT

fails=0
ok() { printf 'ok: %s\n' "$*"; }
bad() {
	printf 'FAIL: %s\n' "$*"
	fails=$((fails + 1))
}

# up: a Slurm in $tmp/slurm with the HB_SLURM_* settings; its log on failure
up() {
	slurm_up "$tmp/slurm" >"$tmp/up.log" 2>&1 || {
		cat "$tmp/up.log"
		exit 1
	}
}

# Two node records with InfiniBand and GPUs, one slurmd.
export HB_SLURM_NODES=2 HB_SLURM_REAL_NODES=1 HB_SLURM_GPUS="a100:4"
export HB_SLURM_NODE_FEATURES="ib,a100"
up

rc=0
"$hb" doctor --json >"$tmp/d.json" 2>"$tmp/d.err" || rc=$?
[ "$rc" = 0 ] && ok "exit 0" || bad "exit $rc: $(cat "$tmp/d.err")"
nodes=$(scontrol -o show nodes | grep -c '^NodeName=')
ib=$(scontrol -o show nodes | grep -cE 'AvailableFeatures=([^ ]*,)?ib(,| )')
gpus=$(scontrol -o show nodes |
	sed -n 's/.* Gres=gpu:[^: ]*:\([0-9]*\).*/\1/p' | paste -sd+ | bc)
is "Slurm's nodes are read ($nodes)" 'd["sides"]["slurm"]["nodes"]' "$nodes"
is "the nodes with feature ib offer RDMA ($ib)" \
	'd["sides"]["slurm"]["nodes_rdma"]' "$ib"
is "the GPUs in their gres ($gpus)" 'd["sides"]["slurm"]["gpus"]' "$gpus"
is "the RDMA finding names a node and its feature" \
	'"hb1 (feature ib)" in f["slurm.rdma"]["message"]' True
is "no slurm.unreachable" '"slurm.unreachable" in f' False

# Without the feature, Slurm offers no RDMA: a warning.
slurm_down "$tmp/slurm" >/dev/null 2>&1
rm -rf "$tmp/slurm"
export HB_SLURM_NODE_FEATURES="a100"
up
rc=0
"$hb" doctor --json >"$tmp/d.json" 2>"$tmp/d.err" || rc=$?
is "no RDMA feature: slurm.no_rdma" 'f["slurm.no_rdma"]["level"]' warn
is "nodes_rdma is 0" 'd["sides"]["slurm"]["nodes_rdma"]' 0
[ "$rc" = 0 ] && ok "a warning: exit 0" || bad "exit $rc"

[ "$fails" = 0 ] || exit 1
echo "all doctor slurm checks passed"
