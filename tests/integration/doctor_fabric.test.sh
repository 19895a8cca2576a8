#!/usr/bin/env bash
# doctor_fabric.test.sh - hpcbridge doctor --json on this machine, checked
# against what is true here, found by other means:
#   - the real libibverbs provider lists as many RDMA devices as
#     /sys/class/infiniband holds (none on these machines), and then the
#     fallback-to-TCP finding names "no RDMA device";
#   - Open MPI's version and CUDA support are what `ompi_info --parsable`
#     prints; NCCL's version is what ncclGetVersion() gives Python's ctypes
#     (or "not present" when the library cannot be loaded);
#   - the variables that turn RDMA off are named when set;
#   - no Slurm to reach is a warning, not a failure: exit 0;
#   - against the emulated cluster, nodes labelled RDMA-capable by NFD and
#     with GPUs are found, the DRA API's absence is said, and a script that
#     expects an MPI this node lacks fails with exit 1.
#
# usage: doctor_fabric.test.sh BUILD_DIR SRC_DIR
set -euo pipefail

build=$(cd "${1:?BUILD_DIR}" && pwd)
src=$(cd "${2:?SRC_DIR}" && pwd)
hb=$build/bin/hpcbridge
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hb-doctor-fabric.XXXXXX")
# ok, bad (counted in $fails) and die.
# shellcheck source=lib/kubecall.sh
. "$src/tests/integration/lib/kubecall.sh"
# shellcheck source=lib/kubemu.sh
. "$src/tests/integration/lib/kubemu.sh"
# q, is and documented, over $tmp/d.json.
# shellcheck source=lib/doctor.sh
. "$src/tests/integration/lib/doctor.sh"
trap 'rm -rf "$tmp"' EXIT

# No Slurm here: scontrol and sinfo fail at once, whatever the machine's
# Slurm configuration says.
mkdir "$tmp/bin"
for t in scontrol sinfo; do
	printf '#!/bin/sh\necho "%s: no Slurm in this test" >&2\nexit 1\n' "$t" \
		>"$tmp/bin/$t"
	chmod +x "$tmp/bin/$t"
done
export PATH=$tmp/bin:$PATH

# doctor ARGS...: its JSON in $tmp/d.json, its exit code in $rc
doctor() {
	rc=0
	"$hb" doctor --json "$@" >"$tmp/d.json" 2>"$tmp/d.err" || rc=$?
}

# 1. This node, no configuration (remote.backend local).
unset NCCL_IB_DISABLE UCX_TLS OMPI_MCA_btl OMPI_MCA_pml NCCL_NET
doctor
[ "$rc" = 0 ] && ok "warnings only: exit 0" || bad "exit $rc: $(cat "$tmp/d.err")"
kernel=0
if [ -d /sys/class/infiniband ]; then
	kernel=$(find /sys/class/infiniband -mindepth 1 -maxdepth 1 | wc -l)
fi
is "libibverbs lists the kernel's RDMA devices ($kernel)" \
	'len(d["node"]["rdma_devices"])' "$kernel"
if [ "$kernel" = 0 ]; then
	is "no RDMA device is a warning" 'f["rdma.no_device"]["level"]' warn
	is "the fallback to TCP says why" 'f["fabric.tcp_fallback"]["message"]' \
		"a multi-node job started here would run over TCP: no RDMA device"
	is "the TCP finding has a hint" \
		'"hpcbridge-fabric=rdma" in f["fabric.tcp_fallback"]["hint"]' True
fi
is "the worst level is a warning" 'd["worst"]' warn

if command -v ompi_info >/dev/null 2>&1; then
	want=$(ompi_info --parsable | sed -n 's/^ompi:version:full://p')
	is "Open MPI's version is ompi_info's ($want)" \
		'd["node"]["mpi"]["openmpi"]["version"]' "$want"
	cuda=$(ompi_info --parsable --all |
		sed -n 's/^mca:mpi:base:param:mpi_built_with_cuda_support:value://p')
	[ "$cuda" = true ] && cuda=True || cuda=False
	is "Open MPI's CUDA support is ompi_info's ($cuda)" \
		'd["node"]["mpi"]["openmpi"]["cuda"]' "$cuda"
	if ompi_info --parsable | grep -q '^mca:pml:ucx:'; then ucx=True; else ucx=False; fi
	is "Open MPI's UCX is ompi_info's ($ucx)" \
		'd["node"]["mpi"]["openmpi"]["ucx"]' "$ucx"
	is "the Open MPI finding" 'f["mpi.openmpi"]["message"].startswith("Open MPI " + d["node"]["mpi"]["openmpi"]["version"] + ":")' True
else
	bad "ompi_info is missing (scripts/setup.sh installs openmpi-bin)"
fi

nccl=$(python3 -c '
import ctypes
try:
    lib = ctypes.CDLL("libnccl.so.2")
except OSError:
    print("not present")
else:
    v = ctypes.c_int()
    lib.ncclGetVersion(ctypes.byref(v))
    v = v.value
    print("%d.%d.%d" % ((v // 10000, v // 100 % 100, v % 100) if v >= 10000
                        else (v // 1000, v // 100 % 10, v % 100)))
')
is "NCCL's version is ncclGetVersion's ($nccl)" 'd["node"]["nccl"]["version"]' "$nccl"
gpus=$(python3 -c '
import glob
n = 0
for d in glob.glob("/sys/bus/pci/devices/*"):
    v = open(d + "/vendor").read().strip()
    c = int(open(d + "/class").read(), 16) >> 8
    n += v in ("0x10de", "0x1002") and c in (0x300, 0x302, 0x380)
print(n)')
is "the GPUs are sysfs's ($gpus)" 'len(d["node"]["gpus"])' "$gpus"
is "no Slurm to reach is a warning" 'f["slurm.unreachable"]["level"]' warn
is "it says which tool failed" 'f["slurm.unreachable"]["message"]' \
	"cannot read Slurm's nodes: sinfo --json exited 1"
is "no cluster configured" 'f["k8s.none"]["level"]' ok
documented

# 2. Variables that turn RDMA off are named, with the reason.
NCCL_IB_DISABLE=1 UCX_TLS=tcp,self doctor
is "NCCL_IB_DISABLE is named" 'f["env.nccl_ib_disabled"]["level"]' warn
is "UCX_TLS without RDMA is named" 'f["env.ucx_tls_tcp"]["level"]' warn
is "the TCP finding gives every reason" \
	'"NCCL_IB_DISABLE is set" in f["fabric.tcp_fallback"]["message"]' True
[ "$rc" = 0 ] && ok "still warnings only: exit 0" || bad "exit $rc"
documented

# 3. The text form: one line per finding with its code, hints below.
rc=0
out=$("$hb" doctor 2>&1) || rc=$?
grep -qE '^warn +a multi-node job started here would run over TCP: .* \[fabric.tcp_fallback\]$' <<<"$out" &&
	ok "the text names the finding's code" || bad "text: $out"
grep -qE '^      hint: ' <<<"$out" && ok "hints are printed" || bad "no hint: $out"

# 4. The emulated cluster: NFD-labelled RDMA nodes with GPUs, and a node
# with a device plugin's RDMA resource.
kubemu_start --tls-dir "$tmp/tls" --kubeconfig-out "$tmp/kubeconfig" \
	--token "admin-$$" --namespace hpc \
	--node "gpu-ib-1,gpu=8,label:feature.node.kubernetes.io/rdma.capable=true" \
	--node "gpu-ib-2,gpu=8,label:feature.node.kubernetes.io/rdma.capable=true" \
	--node "cpu-1" \
	--node "ib-3,rdma/hca_shared_devices_a=4" ||
	die "the emulator did not start"
cat >"$tmp/hpcbridge.yaml" <<-YAML
remote:
  backend: kubernetes
  kubeconfig: $tmp/kubeconfig
kubernetes:
  namespace: hpc
YAML
doctor --config "$tmp/hpcbridge.yaml"
is "the cluster's nodes are read" 'd["sides"]["kubernetes"]["nodes"]' 4
is "a node offering a device plugin's rdma/* resource is found" \
	'"1 of 4 nodes offer RDMA: ib-3" in f["k8s.rdma"]["message"]' True
is "their GPUs are counted" 'f["k8s.gpu"]["message"]' "kubernetes: 16 GPUs on 2 nodes"
is "NFD-labelled nodes without an rdma resource are named" \
	'f["k8s.rdma_unallocatable"]["message"]' \
	"2 nodes are labelled feature.node.kubernetes.io/rdma.* but offer no rdma/* resource"
is "DRA's presence is said" \
	'f.get("k8s.dra.unserved", f.get("k8s.dra", {})).get("level")' ok
is "the MPIJob API" 'f["k8s.mpijob_api"]["level"]' ok
is "the MPI Operator's failures are named with what to check" \
	'"sshAuthMountPath" in f["mpiop.ok"]["hint"] and "hostNetwork" in f["mpiop.ok"]["hint"]' True
[ "$rc" = 0 ] && ok "nothing failed: exit 0" || bad "exit $rc: $(cat "$tmp/d.err")"
documented

# 5. --job: a script that expects Intel MPI, on a node with Open MPI.
printf '%s\n' '#!/bin/bash' '#SBATCH -N 2' 'module load intel-mpi/2021.9' \
	'export NCCL_IB_DISABLE=1' 'mpirun ./a.out' >"$tmp/job.sh"
doctor --config "$tmp/hpcbridge.yaml" --job "$tmp/job.sh"
if [ -n "$(q 'd["node"]["mpi"]["openmpi"]["version"]')" ] &&
	[ "$(q 'd["node"]["mpi"]["other"]')" = None ]; then
	is "the MPI mismatch fails" 'f["job.mpi.mismatch"]["level"]' fail
	[ "$rc" = 1 ] && ok "a failed check: exit 1" || bad "exit $rc"
fi
is "the script's NCCL_IB_DISABLE is named" \
	'f["job.env.nccl_ib_disabled"]["message"]' \
	"$tmp/job.sh sets NCCL_IB_DISABLE=1: NCCL will not use InfiniBand or RoCE"
documented
rc=0
"$hb" doctor --job "$tmp/nowhere.sh" >/dev/null 2>"$tmp/d.err" || rc=$?
[ "$rc" = 1 ] && grep -q "nowhere.sh" "$tmp/d.err" &&
	ok "a script that is not there: exit 1, named" ||
	bad "missing script: exit $rc, $(cat "$tmp/d.err")"

[ "$fails" = 0 ] || exit 1
echo "all doctor fabric checks passed"
