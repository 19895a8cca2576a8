#!/usr/bin/env bash
# kubemu.test.sh - the Kubernetes API emulator as python3-kubernetes sees
# it: discovery, create/get/list with selectors and paging, 409s, the
# status subresource, generation, Strict validation, server-side apply,
# watch with resume, bookmarks and 410, the emulated MPI Operator, pods
# and logs, events, leases, TrainJobs, bearer tokens (401, 403), TLS with
# the generated CA (and a client with another CA refused), and faults
# (500, 429 with Retry-After, latency, forced 410, dropped watches,
# refused connections).  Then the emulator restarts on its tls-dir and
# keeps its CA.
#
# With HPCBRIDGE_TEST_KUBECONFIG set, the client checks (those that need
# no emulator) also run against that real cluster, in the namespace
# HPCBRIDGE_TEST_NAMESPACE (default "default").
#
# Usage: kubemu.test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail

build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
emu=$build/bin/hb-kubemu
# The reference CRDs (ctest passes HB_SHARED_DIR).
crds=${HB_SHARED_DIR:-$src/../shared}/reference/crds

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

[ -x "$emu" ] || fail "$emu not built"
/usr/bin/python3 -c 'import kubernetes' ||
	fail "python3-kubernetes missing (scripts/setup.sh installs it)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hb-kubemu-test.XXXXXX")
pid=
cleanup() {
	if [ -n "$pid" ]; then
		kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

# start_emu: run the emulator in the background; waits for its port file.
start_emu() {
	rm -f "$tmp/port"
	"$emu" --listen 127.0.0.1:0 --port-file "$tmp/port" --crds "$crds" \
		--tls-dir "$tmp/tls" --kubeconfig-out "$tmp/kubeconfig" \
		--token "admin-$$" --token "team-$$:team-a" \
		--pidfile "$tmp/pid" --watch-window 64 --bookmark-ms 300 \
		--pod-start-ms 100 --run-ms 1000 --kill-grace-ms 1000 "$@" \
		>>"$tmp/emu.out" 2>>"$tmp/emu.err" &
	pid=$!
	for _ in $(seq 100); do
		[ -s "$tmp/port" ] && return 0
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	cat "$tmp/emu.err" >&2
	fail "the emulator did not start"
}

stop_emu() {
	kill -TERM "$pid"
	wait "$pid" || fail "the emulator exited with $? on SIGTERM"
	pid=
}

start_emu
port=$(cat "$tmp/port")
[ "$(cat "$tmp/pid")" = "$pid" ] || fail "pidfile does not hold $pid"
grep -q "certificate-authority-data" "$tmp/kubeconfig" ||
	fail "the kubeconfig does not carry the CA"

# A CA the server does not use, for the negative TLS check.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	-subj /CN=other-ca -keyout "$tmp/other.key" -out "$tmp/other.crt" \
	-days 1 2>/dev/null

# Plain HTTP on the TLS port fails; HTTPS with the CA works (curl too).
curl -sf --cacert "$tmp/tls/ca.crt" "https://127.0.0.1:$port/version" \
	>/dev/null || fail "curl with the generated CA"
curl -sf --cacert "$tmp/tls/ca.crt" "https://localhost:$port/version" \
	>/dev/null || fail "the certificate does not name localhost"
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$tmp/tls/ca.crt" \
	"https://127.0.0.1:$port/apis/kubeflow.org/v2beta1/namespaces/default/mpijobs")
[ "$code" = 401 ] || fail "no token: HTTP $code, want 401"

status=0
/usr/bin/python3 "$src/tests/integration/kubemu_client.py" \
	--kubeconfig "$tmp/kubeconfig" --admin "https://127.0.0.1:$port" \
	--restricted-token "team-$$:team-a" --wrong-ca "$tmp/other.crt" \
	--window 64 || status=$?
if [ "$status" -ne 0 ]; then
	echo "--- emulator log (tail)"
	tail -30 "$tmp/emu.err"
	fail "python3-kubernetes checks failed"
fi

# A restart keeps the CA: the old kubeconfig's CA still verifies.  The
# restarted emulator has nodes, and schedules pods onto them.
ca_before=$(sha256sum <"$tmp/tls/ca.crt")
stop_emu
start_emu --node cpu-1,cpu=4,memory=16Gi \
	--node gpu-1,cpu=8,memory=32Gi,nvidia.com/gpu=2,gpu-product=NVIDIA-A100-SXM4-80GB \
	--node sick-1,cpu=64,memory=256Gi,ready=false
[ "$(sha256sum <"$tmp/tls/ca.crt")" = "$ca_before" ] ||
	fail "a restart made a new CA"
port=$(cat "$tmp/port")
curl -sf --cacert "$tmp/tls/ca.crt" "https://127.0.0.1:$port/version" \
	>/dev/null || fail "the restarted server's certificate"
/usr/bin/python3 "$src/tests/integration/kubemu_client.py" \
	--kubeconfig "$tmp/kubeconfig" --only nodes ||
	fail "python3-kubernetes checks of nodes failed"
stop_emu
# A bad node spec stops the start, naming the key.
if "$emu" --crds "$crds" --node 'x,cpu=lots' 2>"$tmp/bad.err"; then
	fail "a bad --node was accepted"
fi
grep -q "cpu=lots: not a quantity" "$tmp/bad.err" ||
	fail "a bad --node: $(cat "$tmp/bad.err")"
if grep -q "ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error:" "$tmp/emu.err"; then
	cat "$tmp/emu.err" >&2
	fail "the sanitizers reported errors"
fi

if [ -n "${HPCBRIDGE_TEST_KUBECONFIG:-}" ]; then
	echo "--- the same client checks against $HPCBRIDGE_TEST_KUBECONFIG"
	/usr/bin/python3 "$src/tests/integration/kubemu_client.py" \
		--kubeconfig "$HPCBRIDGE_TEST_KUBECONFIG" \
		--namespace "${HPCBRIDGE_TEST_NAMESPACE:-default}" \
		--only discovery,crud,validation,selectors_and_paging,watches,apply,core_objects ||
		fail "checks against the real cluster failed"
fi
echo "PASS: python3-kubernetes against hb-kubemu"
