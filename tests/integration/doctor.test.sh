#!/usr/bin/env bash
# doctor.test.sh - hpcbridge doctor against the emulated cluster: the
# namespace burst jobs go to (missing; then with Pod Security "restricted"
# and an OpenShift uid range that holds some users and not others), the
# MPIJob API, and the Kueue LocalQueue (missing, then made with kubectl).
# Each finding's line and the exit code are checked.
#
# usage: doctor.test.sh BUILD_DIR SRC_DIR
set -euo pipefail

build=$(cd "${1:?BUILD_DIR}" && pwd)
src=$(cd "${2:?SRC_DIR}" && pwd)
hb=$build/bin/hpcbridge
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hb-doctor.XXXXXX")
# ok, bad (counted in $fails) and die.
# shellcheck source=lib/kubecall.sh
. "$src/tests/integration/lib/kubecall.sh"
# shellcheck source=lib/kubemu.sh
. "$src/tests/integration/lib/kubemu.sh"

# The range 0/100 holds root (0) and daemon (1); nobody (65534) is out.
kubemu_start --tls-dir "$tmp/tls" --kubeconfig-out "$tmp/kubeconfig" \
	--token "admin-$$" \
	--namespace "hpc,pod-security.kubernetes.io/enforce=restricted,annotation:openshift.io/sa.scc.uid-range=0/100" ||
	die "the emulator did not start"

# config NAMESPACE [UID_RANGE]: a configuration for the emulated cluster
config() {
	cat >"$tmp/hpcbridge.yaml" <<-YAML
	remote:
	  backend: kubernetes
	  kubeconfig: $tmp/kubeconfig
	kubernetes:
	  namespace: $1
	  queues:
	    default: burst
	  openshift:
	    uid_range: ${2:-null}
	YAML
}

# doctor ARGS...: its output in $out, its exit code in $rc
doctor() {
	rc=0
	out=$("$hb" doctor --config "$tmp/hpcbridge.yaml" "$@" 2>&1) || rc=$?
}
has() {
	if grep -qE -- "$2" <<<"$out"; then ok "$1"; else bad "$1: no /$2/ in: $out"; fi
}

# 1. A namespace that does not exist.
config nowhere
doctor --user root
[ "$rc" = 1 ] && ok "a missing namespace fails (exit 1)" || bad "exit $rc: $out"
has "a missing namespace is named" '^FAIL +namespace nowhere does not exist'

# 2. The namespace: Pod Security and the uid range against the users.
config hpc
doctor --user root --user daemon --user nobody
has "Pod Security's level is read" '^ok +namespace hpc: Pod Security enforces restricted'
has "the OpenShift uid range is read" '^ok +namespace hpc assigns uids 0/100 \(OpenShift\)'
has "a user inside the range" '^ok +user daemon \(uid 1\) is inside the range'
has "a user outside the range" '^warn +user nobody \(uid 65534\) is outside the range'
has "the MPIJob API" '^ok +MPIJobs \(kubeflow.org/v2beta1\) are served'
has "a missing LocalQueue fails" '^FAIL +Kueue LocalQueue hpc/burst'
has "no uid_range nor SCC configured: a warning" \
	'^warn +neither kubernetes.openshift.uid_range nor'
[ "$rc" = 1 ] && ok "with a check failed, exit 1" || bad "exit $rc"

# 3. The LocalQueue made with kubectl: every check passes.
if command -v kubectl >/dev/null 2>&1; then
	printf '%s\n' 'apiVersion: kueue.x-k8s.io/v1beta1' 'kind: LocalQueue' \
		'metadata: {name: burst, namespace: hpc}' \
		'spec: {clusterQueue: hpc}' >"$tmp/lq.yaml"
	KUBECONFIG=$tmp/kubeconfig kubectl apply -f "$tmp/lq.yaml" >/dev/null ||
		bad "kubectl apply of the LocalQueue"
	config hpc '"0/100"'
	doctor --user daemon
	has "the LocalQueue is found" '^ok +Kueue LocalQueue hpc/burst exists'
	[ "$rc" = 0 ] && ok "nothing failed: exit 0" || bad "exit $rc: $out"
	if grep -q "neither kubernetes.openshift" <<<"$out"; then
		bad "uid_range set, yet: $out"
	else
		ok "the configured uid range is the namespace's: no warning"
	fi
	config hpc '"1000660000/10000"'
	doctor --user daemon
	has "a configured uid range that is not the namespace's fails" \
		'^FAIL +kubernetes.openshift.uid_range is 1000660000/10000, not the namespace.s 0/100'
	[ "$rc" = 1 ] && ok "and exits 1" || bad "exit $rc"
else
	bad "kubectl is missing (scripts/setup.sh installs it)"
fi

# 4. Usage and a bad configuration.
rc=0
"$hb" doctor --bogus >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] && ok "a bad option: exit 2" || bad "a bad option: exit $rc"
printf 'kubernetes:\n  namespace: [x]\n' >"$tmp/bad.yaml"
rc=0
out=$("$hb" doctor --config "$tmp/bad.yaml" 2>&1) || rc=$?
[ "$rc" = 1 ] && grep -q "bad.yaml:2" <<<"$out" &&
	ok "a bad configuration names its file and line" ||
	bad "bad configuration: exit $rc, $out"

[ "$fails" = 0 ] || exit 1
echo "all doctor checks passed"
