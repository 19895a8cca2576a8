#!/usr/bin/env bash
# kubemu_kueue.test.sh - the emulated Kueue and MPIJob suspension in
# hb-kubemu, driven by python3-kubernetes (kubemu_kueue.py): queues and
# quota, admission, preemption by priority, the visibility API, finished
# jobs releasing quota, and a suspended MPIJob without a queue.  Also the
# visibility API through kubectl get --raw, when kubectl is there.
#
# Usage: kubemu_kueue.test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail

build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
emu=$build/bin/hb-kubemu
crds=${HB_SHARED_DIR:-$src/../shared}/reference/crds

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

[ -x "$emu" ] || fail "$emu not built"
/usr/bin/python3 -c 'import kubernetes' ||
	fail "python3-kubernetes missing (scripts/setup.sh installs it)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hb-kubemu-kueue.XXXXXX")
# shellcheck source=lib/kubemu.sh
. "$src/tests/integration/lib/kubemu.sh"
kubemu_start --tls-dir "$tmp/tls" --kubeconfig-out "$tmp/kubeconfig" \
	--token "admin-$$" --pidfile "$tmp/pid" --pod-start-ms 100 \
	--run-ms 1000 --kill-grace-ms 1000 || fail "the emulator did not start"

status=0
/usr/bin/python3 "$src/tests/integration/kubemu_kueue.py" \
	--kubeconfig "$tmp/kubeconfig" || status=$?
if [ "$status" -ne 0 ]; then
	echo "--- emulator log (tail)"
	tail -30 "$tmp/emu.err"
	fail "Kueue checks failed"
fi

if [ -x /usr/bin/kubectl ]; then
	out=$(/usr/bin/kubectl --kubeconfig "$tmp/kubeconfig" get --raw \
		/apis/visibility.kueue.x-k8s.io/v1beta1/namespaces/default/localqueues/orphan/pendingworkloads) ||
		fail "kubectl get --raw of the visibility API"
	grep -q '"kind":"PendingWorkloadsSummary"' <<<"$out" ||
		fail "kubectl get --raw: $out"
	# (Read whole outputs: with pipefail, grep -q ending a pipe early
	# would fail kubectl with SIGPIPE.)
	out=$(/usr/bin/kubectl --kubeconfig "$tmp/kubeconfig" get clusterqueues \
		-o name) || fail "kubectl get clusterqueues"
	[ "$out" = "$(printf '%s\n' clusterqueue.kueue.x-k8s.io/cq \
		clusterqueue.kueue.x-k8s.io/strict)" ] ||
		fail "kubectl get clusterqueues: $out"
	# Short names come from discovery.
	out=$(/usr/bin/kubectl --kubeconfig "$tmp/kubeconfig" get lq \
		-n default -o name) || fail "kubectl get lq"
	grep -qx 'localqueue.kueue.x-k8s.io/lq' <<<"$out" ||
		fail "kubectl get lq: $out"
	out=$(/usr/bin/kubectl --kubeconfig "$tmp/kubeconfig" get workloads \
		-n default -o name) || fail "kubectl get workloads"
	[ "$(grep -c '^workload.kueue.x-k8s.io/mpijob-' <<<"$out")" = 3 ] ||
		fail "kubectl get workloads: $out"
fi
# A clean stop, so that LeakSanitizer (HB_SANITIZE builds) reports.
kill -TERM "$kubemu_pid"
wait "$kubemu_pid" || fail "the emulator exited with $? on SIGTERM"
kubemu_pid=
if grep -q "ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error:" "$tmp/emu.err"; then
	cat "$tmp/emu.err" >&2
	fail "the sanitizers reported errors"
fi
echo "kubemu_kueue: all checks passed"
