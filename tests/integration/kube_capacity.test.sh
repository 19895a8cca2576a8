#!/usr/bin/env bash
# kube_capacity.test.sh - the daemon measures the Kubernetes cluster's free
# capacity, on the real Slurm and the emulated cluster (the sandbox, with
# nodes given to hb-kubemu):
#
#   * `hpcbridge explain --dump-state` (live) shows the free CPUs, memory
#     and GPUs (by the configuration's GPU type map) that the Ready nodes
#     offer, with a NotReady node left out;
#   * a burst job's pods, once bound, take their requests off, and a job
#     that fit before is then explained as not fitting now;
#   * a job whose pods fit nowhere stays Pending, counts as pending, and
#     then nothing fits now;
#   * when the jobs end, the capacity comes back;
#   * a cluster that fails to answer costs one warning, and the last
#     values stay until it answers again.
#
# usage: kube_capacity.test.sh BUILD_DIR SRC_DIR
set -euo pipefail

build=$(cd "${1:?BUILD_DIR}" && pwd)
src=$(cd "${2:?SRC_DIR}" && pwd)
tmp=$(mktemp -d /tmp/hb-kcap.XXXXXX)
chmod 755 "$tmp"
export HB_SANDBOX_BACKEND=kubernetes
# The cluster's own scheduling is measured here, without Kueue's quota.
export HB_SANDBOX_KUEUE=0
# Two Ready nodes (24 CPUs, 96Gi, 4 A100s) and one that is not.
export HB_SANDBOX_KUBEMU_ARGS="--node kn-1,cpu=8,memory=32Gi \
--node kn-gpu,cpu=16,memory=64Gi,nvidia.com/gpu=4,gpu-product=NVIDIA-A100-SXM4-80GB \
--node kn-down,cpu=64,memory=256Gi,ready=false"
# shellcheck source=lib/sandbox_test.sh
. "$src/tests/integration/lib/sandbox_test.sh"
sandbox_test_up
ok "sandbox up"
url=$(cat "$box/kube/url")
sock=$HPCBRIDGE_SOCKET
kube() { /usr/bin/python3 "$src/tests/integration/lib/kube.py" "$@"; }
# A policy whose Kubernetes side takes the gpu partition, the GPU type
# map, and a refresh every second; loaded with SIGHUP.
cat >"$tmp/policy.yaml" <<'EOF'
version: 1
defaults:
  prefer: slurm
  fallback: earliest
rules:
  - name: gpu-bursts
    partition: gpu
    prefer: kubernetes
slurm:
  default_partition: debug
  partitions:
    debug: {}
    gpu: {}
kubernetes:
  namespace: default
  max_nodes: 4
  node: {cpus: 16, memory: 64Gi, gpus: 4}
  gpu_types: [a100]
  startup: 0s
  default_wait: 10m
EOF
cfg=$box/hpcbridge.yaml
sed -e '/^placement:/,$d' \
	-e 's/^  namespace: default$/  namespace: default\n  node_selectors:\n    gpu_types:\n      a100: {nvidia.com\/gpu.product: NVIDIA-A100-SXM4-80GB}/' \
	"$cfg" >"$tmp/cfg.yaml"
printf 'placement:\n  policy: %s\n  refresh_s: 1\n' "$tmp/policy.yaml" \
	>>"$tmp/cfg.yaml"
cp "$tmp/cfg.yaml" "$cfg"
dpid=$(head -c 32 "$box/hpcbridged.pid" | tr -dc 0-9)
kill -HUP "$dpid"
for _ in $(seq 100); do
	grep -q "configuration reloaded\|reload refused" "$box/hpcbridged.log" &&
		break
	sleep 0.1
done
grep -q "configuration reloaded" "$box/hpcbridged.log" ||
	die "the configuration was not reloaded: $(grep reload "$box/hpcbridged.log")"

# wait_state PYTHON_EXPR: until the live snapshot's queue q (a dict)
# satisfies the expression (up to 30 s); the last state is in state.json.
wait_state() {
	local i
	for i in $(seq 60); do
		hpcbridge explain --socket "$sock" --dump-state --json \
			>"$tmp/state.json" 2>"$tmp/state.err" || true
		/usr/bin/python3 - "$tmp/state.json" "$1" <<'EOF' && return 0
import json, sys
try:
    s = json.load(open(sys.argv[1]))
    q = s["kubernetes"]["queues"]["default"]
except (ValueError, KeyError):
    sys.exit(1)
sys.exit(0 if eval("(%s)" % sys.argv[2], {"q": q}) else 1)
EOF
		sleep 0.5
	done
	return 1
}
queue() {
	/usr/bin/python3 -c '
import json, sys
print(json.dumps(json.load(open(sys.argv[1]))["kubernetes"]["queues"]))' \
		"$tmp/state.json" 2>/dev/null || cat "$tmp/state.json" "$tmp/state.err"
}

# 1. What the nodes offer.
wait_state 'q.get("free") == {"cpus": 24, "memory": "96Gi",
	"gpus": {"a100": 4}} and q["pending"] == 0' &&
	ok "dump-state: 24 CPUs, 96Gi and 4 a100 free, as the Ready nodes say" ||
	bad "dump-state after the first refresh: $(queue)"
grep -q '"expected_wait"' "$tmp/state.json" &&
	bad "a queue wait was made up: $(queue)" || true

# 2. A job of 20 CPUs fits now.
printf '#!/bin/bash\n#SBATCH -p gpu -N 2 --ntasks-per-node=10 --mem=8G -t 30\ntrue\n' \
	>"$tmp/twenty.sh"
explain_kube() { # SCRIPT: the Kubernetes line of a live explanation,
	# for the sandbox's user (root's jobs never burst)
	chmod 644 "$1"
	runuser -u "$HB_SANDBOX_USER" -- \
		hpcbridge explain --socket "$sock" --no-env "$1" 2>&1 |
		grep '^Kubernetes (queue default): ' || true
}
line=$(explain_kube "$tmp/twenty.sh")
case $line in
*"free capacity now"*) ok "20 CPUs fit now: $line" ;;
*) bad "20 CPUs before the burst: $line" ;;
esac

# 3. A burst job: a launcher (1 CPU, 1Gi) and two workers (2 CPUs, 3Gi).
cat >"$tmp/long.sh" <<'EOF'
#!/bin/sh
#SBATCH --partition=gpu
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=2
#SBATCH --mem=3G
#SBATCH --output=long-%j.out
echo "long job started"
sleep 300
EOF
long=$(submit_user "$tmp/long.sh")
[ -n "$long" ] || die "sbatch long.sh: $(cat "$tmp/sbatch.err")"
hb=$(gateway_id "$long")
for _ in $(seq 150); do
	n=$(kube pods "training.kubeflow.org/job-name=$hb" |
		awk '$2 != "-" && $3 == "Running"' | wc -l)
	[ "$n" = 3 ] && break
	sleep 0.2
done
[ "$n" = 3 ] && ok "the burst job's three pods run on nodes" ||
	bad "burst pods: $(kube pods "training.kubeflow.org/job-name=$hb")"
wait_state 'q.get("free", {}).get("cpus") == 19 and
	q["free"]["memory"] == "89Gi" and q["free"]["gpus"] == {"a100": 4}' &&
	ok "their requests are taken off: 19 CPUs and 89Gi free" ||
	bad "dump-state with the burst job running: $(queue)"
line=$(explain_kube "$tmp/twenty.sh")
case $line in
*"free capacity now"* | "") bad "20 CPUs with 19 free: '$line'" ;;
*) ok "20 CPUs no longer fit now: $line" ;;
esac

# 4. A job whose second worker fits nowhere: Unschedulable, pending.
cat >"$tmp/wide.sh" <<'EOF'
#!/bin/sh
#SBATCH --partition=gpu
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=14
#SBATCH --mem=4G
#SBATCH --output=wide-%j.out
sleep 300
EOF
wide=$(submit_user "$tmp/wide.sh")
[ -n "$wide" ] || die "sbatch wide.sh: $(cat "$tmp/sbatch.err")"
whb=$(gateway_id "$wide")
wait_state 'q["pending"] == 1' &&
	ok "a job with an unschedulable pod is pending" ||
	bad "pending: $(queue); pods: $(kube pods "training.kubeflow.org/job-name=$whb")"
kube pods "training.kubeflow.org/job-name=$whb" | grep -q ' - Pending$' &&
	ok "its pod is Pending, unbound" ||
	bad "wide pods: $(kube pods "training.kubeflow.org/job-name=$whb")"
printf '#!/bin/bash\n#SBATCH -p gpu -N 1 -n 1 --mem=1G -t 30\ntrue\n' \
	>"$tmp/small.sh"
line=$(explain_kube "$tmp/small.sh")
case $line in
*"free capacity now"* | "") bad "a small job with a job pending: '$line'" ;;
*) ok "behind a pending job even a small one does not start now: $line" ;;
esac

# 5. The jobs end: the capacity comes back.
scancel "$long" "$wide"
wait_final "$long" >/dev/null
wait_final "$wide" >/dev/null
wait_state 'q.get("free") == {"cpus": 24, "memory": "96Gi",
	"gpus": {"a100": 4}} and q["pending"] == 0' &&
	ok "cancelled: 24 CPUs and 96Gi free again, nothing pending" ||
	bad "dump-state after scancel: $(queue)"

# 6. The cluster fails to list nodes: one warning, the values stay.
kube faults "$url" '{"error_500":100000,"path":"/api/v1/nodes","method":"GET"}'
for _ in $(seq 100); do
	grep -q "Kubernetes capacity: " "$box/hpcbridged.log" && break
	sleep 0.1
done
sleep 4 # several refreshes fail
n=$(grep -c "Kubernetes capacity: .*the last values stay" \
	"$box/hpcbridged.log" || true)
[ "$n" = 1 ] && ok "a failing cluster: one warning over several refreshes" ||
	bad "$n capacity warnings: $(grep 'Kubernetes capacity' "$box/hpcbridged.log")"
wait_state 'q.get("free") == {"cpus": 24, "memory": "96Gi",
	"gpus": {"a100": 4}}' &&
	ok "the last values stay" || bad "after failures: $(queue)"
kube faults "$url"
for _ in $(seq 100); do
	grep -q "Kubernetes capacity: read again" "$box/hpcbridged.log" &&
		break
	sleep 0.1
done
grep -q "Kubernetes capacity: read again" "$box/hpcbridged.log" &&
	ok "read again once the cluster answers" ||
	bad "no recovery: $(grep 'Kubernetes capacity' "$box/hpcbridged.log")"

sandbox_test_end
echo "all Kubernetes capacity checks passed"
