#!/usr/bin/env bash
# kubemu_dra.test.sh - hb-kubemu's resource.k8s.io/v1, with the real
# kubectl, and the translator's RDMA manifests against it.
#
# Discovery lists ResourceClaimTemplates, DeviceClasses and
# ResourceSlices; kubectl applies, gets and explains them.  A malformed
# template, slice or pod claim is a 422 whose causes name the fields.  A
# pod that claims from a template that does not exist stays Pending with
# the resource claim controller's FailedResourceClaimCreation event, and
# runs once the template exists.  The golden DRA MPIJob and its template
# run (IPC_LOCK on the workers only); in a namespace that enforces Pod
# Security "restricted" its workers are refused for IPC_LOCK, which is
# what the translation warns about.  The device-plugin MPIJob's workers
# go only where a node offers the RDMA resource.
#
# Usage: kubemu_dra.test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail

build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
kubectl=${KUBECTL:-/usr/bin/kubectl}
golden=$src/tests/golden

# ok, bad, die and $fails.
. "$src/tests/integration/lib/kubecall.sh"

[ -x "$build/bin/hb-kubemu" ] || die "hb-kubemu not built"
[ -x "$kubectl" ] || die "$kubectl missing"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hb-kubemu-dra.XXXXXX")
# shellcheck source=lib/kubemu.sh
. "$src/tests/integration/lib/kubemu.sh"
kubemu_start --tls-dir "$tmp/tls" --kubeconfig-out "$tmp/kubeconfig" \
	--pod-start-ms 100 --run-ms 60000 --image-user 1000 \
	--namespace hpc \
	--namespace "secure,pod-security.kubernetes.io/enforce=restricted" ||
	die "the emulator did not start"
export KUBECONFIG=$tmp/kubeconfig
export KUBECACHEDIR=$tmp/cache

# k, kin, has.
# shellcheck source=lib/kubectl.sh
. "$src/tests/integration/lib/kubectl.sh"
# wait_for WHAT CMD...: until CMD succeeds (10 s).
wait_for() {
	local what=$1 _
	shift
	for _ in $(seq 100); do
		if "$@" >/dev/null 2>&1; then
			ok "$what"
			return 0
		fi
		sleep 0.1
	done
	bad "$what"
}
phase() { # phase NS POD
	timeout 10 "$kubectl" -n "$1" get pod "$2" -o jsonpath='{.status.phase}'
}
is_phase() { [ "$(phase "$1" "$2")" = "$3" ]; }

# ---- discovery and the verbs ------------------------------------------
k api-resources --api-group=resource.k8s.io
has "discovery: resourceclaimtemplates, namespaced" \
	"resourceclaimtemplates                resource.k8s.io/v1   true"
has "discovery: deviceclasses, cluster-scoped" \
	"deviceclasses                         resource.k8s.io/v1   false"
has "discovery: resourceslices" "resourceslices"

kin "$golden/resourceclaimtemplate-rdma.yaml" apply -f -
[ "$rc" = 0 ] && ok "kubectl apply: the golden ResourceClaimTemplate" ||
	bad "kubectl apply: $out"
k -n hpc get resourceclaimtemplates
has "kubectl get resourceclaimtemplates" "allreduce-rdma"
k -n hpc get resourceclaimtemplate allreduce-rdma \
	-o 'jsonpath={.spec.spec.devices.config[0].opaque.parameters.interface.name}'
[ "$out" = rdma0 ] && ok "the interface name is stored as DraNet reads it" ||
	bad "interface name: $out"
k explain resourceclaimtemplates
has "kubectl explain resourceclaimtemplates" "KIND:       ResourceClaimTemplate"

cat >"$tmp/class.yaml" <<'EOF'
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: dranet.net}
spec:
  selectors:
  - cel: {expression: 'device.driver == "dra.net"'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-a-dra.net}
spec:
  driver: dra.net
  nodeName: node-a
  pool: {name: node-a, generation: 1, resourceSliceCount: 1}
  devices:
  - name: mlx5-0
    attributes:
      rdma: {bool: true}
EOF
kin "$tmp/class.yaml" apply -f -
[ "$rc" = 0 ] && ok "kubectl apply: a DeviceClass and a ResourceSlice" ||
	bad "DeviceClass/ResourceSlice: $out"
k get deviceclasses,resourceslices
has "kubectl get deviceclasses" "dranet.net"
has "kubectl get resourceslices" "node-a-dra.net"

# ---- validation ---------------------------------------------------------
cat >"$tmp/bad.yaml" <<'EOF'
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: bad, namespace: hpc}
spec:
  spec:
    devices:
      requests:
      - name: nic
        exactly: {count: -1, selectors: [{cel: {}}]}
      - name: both
        exactly: {deviceClassName: dranet.net, allocationMode: Some}
        firstAvailable: [{name: a, deviceClassName: dranet.net}]
      - name: none
        firstAvailable: []
      - name: all
        exactly: {deviceClassName: dranet.net, allocationMode: All, count: 2}
      - name: one
        exactly: {deviceClassName: dranet.net, count: 0}
      - name: mode
        exactly: {deviceClassName: dranet.net, allocationMode: Some}
      config:
      - requests: [other]
        opaque: {driver: dra.net}
      - requests: [nic]
EOF
kin "$tmp/bad.yaml" apply -f -
[ "$rc" != 0 ] && ok "a malformed template is refused" || bad "accepted: $out"
has "422: the class is required" \
	"spec.spec.devices.requests[0].exactly.deviceClassName: Required value"
has "422: the count" \
	"spec.spec.devices.requests[0].exactly.count: Invalid value: -1: must be greater than zero"
has "422: a selector's CEL" \
	"spec.spec.devices.requests[0].exactly.selectors[0].cel.expression: Required value"
has "422: exactly and firstAvailable" \
	'spec.spec.devices.requests[1]: Invalid value: null: exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set'
has "422: an empty firstAvailable is none" \
	'spec.spec.devices.requests[2]: Required value: exactly one of `exactly` or `firstAvailable` is required'
has "422: no count with All" \
	"spec.spec.devices.requests[3].exactly.count: Invalid value: 2: must not be specified when allocationMode is 'All'"
has "422: the allocation mode" \
	'spec.spec.devices.requests[5].exactly.allocationMode: Unsupported value: "Some": supported values: "All", "ExactCount"'
has "422: a config names a request of the claim" \
	'spec.spec.devices.config[0].requests[0]: Invalid value: "other": must be the name of a request in the claim'
has "422: the opaque parameters" \
	"spec.spec.devices.config[0].opaque.parameters: Required value"
has "422: a config's opaque" \
	"spec.spec.devices.config[1].opaque: Required value"
if grep -qF "requests[4]" <<<"$out"; then
	bad "a count of 0 is the default 1, not an error: $out"
else
	ok "a count of 0 is the default 1"
fi
port=$(cat "$tmp/port")
code=$(curl -sk -o "$tmp/out" -w '%{http_code}' \
	--cacert "$tmp/tls/ca.crt" \
	-H "Authorization: Bearer $(sed -n 's/^ *token: *//p' "$tmp/kubeconfig" | head -n 1)" \
	-H 'Content-Type: application/json' -X POST \
	--data-binary '{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaimTemplate","metadata":{"name":"x"},"spec":{}}' \
	"https://127.0.0.1:$port/apis/resource.k8s.io/v1/namespaces/hpc/resourceclaimtemplates")
[ "$code" = 422 ] && grep -q '"field":"spec.spec"' "$tmp/out" &&
	ok "POST without spec.spec: 422 naming the field" ||
	bad "POST without spec.spec: $code $(cat "$tmp/out")"
cat >"$tmp/badslice.yaml" <<'EOF'
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: broken}
spec:
  pool: {name: p, resourceSliceCount: 1}
EOF
kin "$tmp/badslice.yaml" apply -f -
has "422: a slice names its driver" "spec.driver: Required value"
has "422: a slice says where its devices are" 'exactly one of `nodeName`'
cat >"$tmp/badpod.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: badclaim, namespace: hpc}
spec:
  resourceClaims:
  - name: rdma
  containers:
  - name: c
    image: busybox
    resources:
      claims: [{name: nic}]
EOF
kin "$tmp/badpod.yaml" apply -f -
has "422: a pod claim names its source" \
	'spec.resourceClaims[0]: Invalid value: {"Name":"rdma","ResourceClaimName":null,"ResourceClaimTemplateName":null}: must specify one of: `resourceClaimName`, `resourceClaimTemplateName`'
has "422: a container claim is one of the pod's" \
	'spec.containers[0].resources.claims[0]: Not found: "nic"'

# ---- a missing template -------------------------------------------------
cat >"$tmp/pod.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: waits, namespace: hpc}
spec:
  resourceClaims:
  - name: rdma
    resourceClaimTemplateName: later-rdma
  containers:
  - name: c
    image: busybox
    resources:
      claims: [{name: rdma}]
EOF
kin "$tmp/pod.yaml" apply -f -
[ "$rc" = 0 ] && ok "a pod naming a missing template is created" ||
	bad "pod: $out"
sleep 1.5
[ "$(phase hpc waits)" = Pending ] &&
	ok "without its template the pod stays Pending" ||
	bad "phase $(phase hpc waits)"
k -n hpc get events -o 'jsonpath={range .items[*]}{.reason} {.message}{"\n"}{end}'
has "the controller's Warning event" \
	'FailedResourceClaimCreation PodResourceClaim rdma: resource claim template "later-rdma": resourceclaimtemplate.resource.k8s.io "later-rdma" not found'
sed 's/allreduce-rdma/later-rdma/' "$golden/resourceclaimtemplate-rdma.yaml" >"$tmp/later.yaml"
kin "$tmp/later.yaml" apply -f -
wait_for "once the template exists the pod runs" is_phase hpc waits Running

# ---- the translator's DRA MPIJob ---------------------------------------
kin "$golden/mpijob-rdma-dra.yaml" apply -f -
[ "$rc" = 0 ] && ok "kubectl apply: the golden DRA MPIJob" || bad "$out"
wait_for "its workers run" is_phase hpc allreduce-worker-1 Running
k -n hpc get pod allreduce-worker-0 -o \
	'jsonpath={.spec.resourceClaims[0].resourceClaimTemplateName} {.spec.containers[0].securityContext.capabilities.add}'
has "a worker claims from the job's template, with IPC_LOCK" \
	'allreduce-rdma ["IPC_LOCK"]'
launcher=$(timeout 10 "$kubectl" -n hpc get pods -o name | grep allreduce-launcher || true)
k -n hpc get "$launcher" -o 'jsonpath={.spec.containers[0].securityContext.capabilities}'
if [ -n "$launcher" ] && ! grep -q IPC_LOCK <<<"$out"; then
	ok "the launcher adds no capability"
else
	bad "launcher: $launcher $out"
fi

# Pod Security "restricted" refuses IPC_LOCK: the operator makes no
# worker and says why.
sed 's/namespace: hpc/namespace: secure/' "$golden/resourceclaimtemplate-rdma.yaml" >"$tmp/s.yaml"
sed 's/namespace: hpc/namespace: secure/' "$golden/mpijob-rdma-dra.yaml" >>"$tmp/s.yaml"
kin "$tmp/s.yaml" apply -f -
sleep 1.5
k -n secure get events -o 'jsonpath={range .items[*]}{.reason} {.message}{"\n"}{end}'
has "restricted refuses the workers for IPC_LOCK" "IPC_LOCK"
k -n secure get pods -o name
if grep -q allreduce-worker <<<"$out"; then
	bad "workers created under restricted: $out"
else
	ok "no worker under restricted"
fi

# ---- the device plugin's resource, scheduled ---------------------------
# Two nodes with AMD GPUs, one of them with an RDMA device: of the golden
# device-plugin MPIJob's two workers one is bound there, the other stays
# Pending for want of the device.
kubemu_stop
kubemu_start --tls-dir "$tmp/tls2" --kubeconfig-out "$tmp/kubeconfig" \
	--pod-start-ms 100 --run-ms 60000 --image-user 1000 --namespace hpc \
	--node "ib-1,cpu=8,memory=32Gi,amd.com/gpu=4,rdma/rdma_shared_device_a=1" \
	--node "eth-1,cpu=8,memory=32Gi,amd.com/gpu=4" ||
	die "the emulator did not start with nodes"
rm -rf "$KUBECACHEDIR"
kin "$golden/mpijob-rdma-plugin.yaml" apply -f -
[ "$rc" = 0 ] && ok "kubectl apply: the golden device-plugin MPIJob" ||
	bad "$out"
bound() { # bound POD NODE
	[ "$(timeout 10 "$kubectl" -n hpc get pod "$1" \
		-o 'jsonpath={.spec.nodeName}')" = "$2" ]
}
wait_for "a worker is bound to the node with the RDMA device" \
	bound allreduce-worker-0 ib-1
sleep 1
k -n hpc get pod allreduce-worker-1 -o \
	'jsonpath={.spec.nodeName}|{.status.conditions[0].reason} {.status.conditions[0].message}'
has "the other stays unschedulable, for the device" \
	"|Unschedulable"
has "the scheduler names the device" "rdma/rdma_shared_device_a"

[ "$fails" = 0 ] || exit 1
echo "kubemu_dra: all checks passed"
