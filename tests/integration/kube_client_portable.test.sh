#!/usr/bin/env bash
# kube_client_portable.test.sh - the C Kubernetes client (gateway/kube/*.c,
# through tests/integration/kubecall.c) on what every API server does, with
# no fault injection and nothing particular to the emulator:
#
#   get of a missing object (404 NotFound), create and 409 AlreadyExists,
#   list by label with pages and a continue token, list-all, a field
#   selector, delete (and 404 after), server-side apply (a conflict
#   between managers, then force), an MPIJob left to another controller
#   (managedBy) with its status merge-patched and applied, and a reflector
#   that lists and then watches creates, a change and a delete, each once.
#
# It runs against an emulator it starts, and then, when
# HPCBRIDGE_TEST_KUBECONFIG is set, against that cluster too, in the
# namespace HPCBRIDGE_TEST_NAMESPACE (default: default), which needs the
# MPIJob CRD (kubeflow.org/v2beta1).  Every object it makes there is named
# hb-ct-<pid>-* and deleted at the end.
#
# Usage: kube_client_portable.test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail

build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
emu=$build/bin/hb-kubemu
kc=$build/tests/kubecall
crds=${HB_SHARED_DIR:-$src/../shared}/reference/crds
# shellcheck source=lib/kubecall.sh
. "$src/tests/integration/lib/kubecall.sh"

[ -x "$emu" ] || die "$emu not built"
[ -x "$kc" ] || die "$kc not built"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hb-kube-portable.XXXXXX")
pids=()
K=()
made=() # "RES NAME" of what the current cluster holds of ours
cleanup() {
	local m
	for m in "${made[@]}"; do
		# shellcheck disable=SC2086
		"$kc" "${K[@]}" delete $m >/dev/null 2>&1 || true
	done
	for p in "${pids[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT


# checks WHERE: every check against the cluster K names, in namespace $ns
checks() {
	local where=$1 p=hb-ct-$$ i n cont
	echo "--- the C client against $where (namespace $ns)"

	call "${K[@]}" get configmaps "$p-nope"
	expect "get of a missing object" ENOENT 404
	[ "$reason" = NotFound ] && ok "reason NotFound" || bad "reason $reason"

	cm "$p-one" 1 "hb-ct: one-$$"
	call "${K[@]}" create configmaps "$tmp/$p-one.yaml"
	expect "create" OK 201
	made+=("configmaps $p-one")
	[ -n "$(jget 'd["metadata"]["uid"]')" ] && ok "create returns the object" || bad "no uid"
	call "${K[@]}" create configmaps "$tmp/$p-one.yaml"
	expect "create again" EEXIST 409
	call "${K[@]}" get configmaps "$p-one"
	[ "$(jget 'd["data"]["v"]')" = 1 ] && ok "get returns the data" || bad "get data"

	for i in 1 2 3 4 5; do
		cm "$p-page-$i" "$i" "hb-ct-page: 'p$$'"
		call "${K[@]}" create configmaps "$tmp/$p-page-$i.yaml"
		made+=("configmaps $p-page-$i")
	done
	call "${K[@]}" list configmaps --selector "hb-ct-page=p$$" --limit 2
	expect "list, one page" OK 200
	n=$(jget 'len(d["items"])')
	cont=$(jget 'd["metadata"].get("continue","")')
	[ "$n" = 2 ] && [ -n "$cont" ] && ok "a page of 2 with a continue token" ||
		bad "page: $n items, continue '$cont'"
	call "${K[@]}" list configmaps --selector "hb-ct-page=p$$" --limit 2 --continue "$cont"
	[ "$(jget 'len(d["items"])')" = 2 ] && ok "the next page" ||
		bad "next page: $(head -c 300 "$tmp/out")"
	call "${K[@]}" list-all configmaps --selector "hb-ct-page=p$$" --limit 2
	expect "list-all" OK 200
	[ "$(jget 'sorted(i["metadata"]["name"][-6:] for i in d["items"])')" = "['page-1', 'page-2', 'page-3', 'page-4', 'page-5']" ] &&
		ok "list-all: all 5 over 3 pages" || bad "list-all: $(head -c 300 "$tmp/out")"
	call "${K[@]}" list configmaps --fields "metadata.name=$p-page-2"
	[ "$(jget '[i["metadata"]["name"] for i in d["items"]]')" = "['$p-page-2']" ] &&
		ok "field selector" || bad "field selector: $(head -c 300 "$tmp/out")"

	call "${K[@]}" delete configmaps "$p-one"
	expect "delete" OK 200
	call "${K[@]}" get configmaps "$p-one"
	expect "get after delete" ENOENT 404
	call "${K[@]}" delete configmaps "$p-one"
	expect "delete again" ENOENT 404

	cm "$p-ssa" a
	call "${K[@]}" apply configmaps "$tmp/$p-ssa.yaml" --manager hb-ct-a
	expect "server-side apply creates" OK
	made+=("configmaps $p-ssa")
	cm "$p-ssa" b
	call "${K[@]}" apply configmaps "$tmp/$p-ssa.yaml" --manager hb-ct-b
	expect "apply of another manager's field" ECONFLICT 409
	call "${K[@]}" apply configmaps "$tmp/$p-ssa.yaml" --manager hb-ct-b --force
	expect "apply with force" OK 200
	[ "$(jget 'd["data"]["v"]')" = b ] && ok "force took the field" || bad "force"

	cat >"$tmp/job.yaml" <<EOF
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata:
  name: $p-job
spec:
  slotsPerWorker: 1
  runPolicy: {managedBy: hpcbridge.io/gateway, cleanPodPolicy: Running}
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template: {spec: {containers: [{name: l, image: busybox, command: [/bin/true]}]}}
    Worker:
      replicas: 1
      template: {spec: {containers: [{name: w, image: busybox}]}}
EOF
	call "${K[@]}" create mpijobs "$tmp/job.yaml"
	expect "create an MPIJob another controller manages" OK 201
	made+=("mpijobs $p-job")
	cat >"$tmp/status.json" <<'EOF'
{"status": {"conditions": [{"type": "Created", "status": "True",
 "reason": "MPIJobCreated", "lastTransitionTime": "2024-01-01T00:00:00Z"}]}}
EOF
	call "${K[@]}" patch-status mpijobs "$p-job" "$tmp/status.json"
	expect "merge patch of its status" OK 200
	call "${K[@]}" get mpijobs "$p-job"
	[ "$(jget 'd["status"]["conditions"][0]["reason"]')" = MPIJobCreated ] &&
		ok "the status is there" || bad "status: $(head -c 300 "$tmp/out")"
	cat >"$tmp/apply-status.yaml" <<EOF
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: $p-job}
status:
  conditions:
  - {type: Running, status: "True", reason: MPIJobRunning,
     lastTransitionTime: "2024-01-01T00:00:01Z"}
EOF
	call "${K[@]}" apply mpijobs "$tmp/apply-status.yaml" --manager hb-ct --status --force
	expect "apply to the status subresource" OK 200
	[ "$(jget '[c["type"] for c in d["status"]["conditions"]][-1]')" = Running ] &&
		ok "applied status" || bad "applied status: $(head -c 300 "$tmp/out")"

	# a reflector: lists, then watches creates, a change and a delete
	"$kc" "${K[@]}" reflect configmaps --selector "hb-ct-w=w$$" \
		--poll-ms 100 >"$tmp/refl.out" 2>"$tmp/refl.err" &
	local rpid=$!
	pids+=("$rpid")
	wait_refl() {
		for _ in $(seq 150); do
			[ "$(grep -c "$1" "$tmp/refl.out" || true)" -ge "$2" ] && return 0
			sleep 0.1
		done
		return 1
	}
	wait_refl '^BOOKMARK' 1 || bad "the reflector did not list"
	cm "$p-w1" 1 "hb-ct-w: w$$"
	cm "$p-w2" 1 "hb-ct-w: w$$"
	call "${K[@]}" create configmaps "$tmp/$p-w1.yaml"
	made+=("configmaps $p-w1")
	call "${K[@]}" create configmaps "$tmp/$p-w2.yaml"
	made+=("configmaps $p-w2")
	cm "$p-w1" 2 "hb-ct-w: w$$"
	call "${K[@]}" apply configmaps "$tmp/$p-w1.yaml" --manager hb-ct --force
	call "${K[@]}" delete configmaps "$p-w2"
	wait_refl "^DELETED $ns/$p-w2" 1 || bad "the reflector missed the delete"
	kill -TERM "$rpid"
	wait "$rpid" && ok "the reflector stops on request" || bad "reflector exit $?"
	unset 'pids[-1]'
	events=$(grep -v '^BOOKMARK' "$tmp/refl.out" | awk '{print $1, $2}')
	want="ADDED $ns/$p-w1
ADDED $ns/$p-w2
MODIFIED $ns/$p-w1
DELETED $ns/$p-w2"
	[ "$events" = "$want" ] && ok "the reflector saw every change once, in order" ||
		bad "reflector events: $(cat "$tmp/refl.out")"

	for m in "${made[@]}"; do
		# shellcheck disable=SC2086
		"$kc" "${K[@]}" delete $m >/dev/null 2>&1 || true
	done
	made=()
}

# The emulator, over TLS with a token, as any cluster.
mkdir -p "$tmp/e"
"$emu" --listen 127.0.0.1:0 --port-file "$tmp/e/port" --crds "$crds" \
	--tls-dir "$tmp/e/tls" --kubeconfig-out "$tmp/e/kubeconfig" \
	--bookmark-ms 500 --token "t-$$" >"$tmp/e/out" 2>"$tmp/e/err" &
pids+=($!)
for _ in $(seq 100); do
	[ -s "$tmp/e/port" ] && [ -s "$tmp/e/kubeconfig" ] && break
	sleep 0.1
done
[ -s "$tmp/e/port" ] || die "the emulator did not start: $(tail -5 "$tmp/e/err")"
ns=default
K=(--kubeconfig "$tmp/e/kubeconfig" --ns "$ns")
checks "hb-kubemu"

if [ -n "${HPCBRIDGE_TEST_KUBECONFIG:-}" ]; then
	ns=${HPCBRIDGE_TEST_NAMESPACE:-default}
	K=(--kubeconfig "$HPCBRIDGE_TEST_KUBECONFIG" --ns "$ns")
	checks "$HPCBRIDGE_TEST_KUBECONFIG"
fi

if [ "$fails" -ne 0 ]; then
	echo "kube_client_portable: $fails failed"
	exit 1
fi
echo "kube_client_portable: all passed"
