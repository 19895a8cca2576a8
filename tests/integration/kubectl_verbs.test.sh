#!/usr/bin/env bash
# kubectl_verbs.test.sh - the real kubectl, with its default flags, against
# hb-kubemu: the OpenAPI documents it reads (/openapi/v3 and each group
# version's, /openapi/v2), api-resources, apply (create, then a change
# sent as a merge patch with the last-applied annotation), an unknown
# field refused with the field named, create, explain of a CRD field and
# of a built-in one, get -o yaml, logs of a launcher the emulated kubelet
# ran, strategic merge patches of a Pod (kubectl apply and kubectl patch,
# merge keys and directives), server-side apply, and delete -f.  Then
# kubectl against an emulator that checks no token.
#
# Usage: kubectl_verbs.test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail

build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
emu=$build/bin/hb-kubemu
crds=${HB_SHARED_DIR:-$src/../shared}/reference/crds
kubectl=${KUBECTL:-/usr/bin/kubectl}

# ok, bad (counted in $fails) and die.
. "$src/tests/integration/lib/kubecall.sh"

[ -x "$emu" ] || die "$emu not built"
[ -x "$kubectl" ] || die "$kubectl missing"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hb-kubectl-test.XXXXXX")
# shellcheck source=lib/kubemu.sh
. "$src/tests/integration/lib/kubemu.sh"

# start_emu ARGS...: the emulator in the background, once its port file
# is there.
start_emu() {
	kubemu_start --tls-dir "$tmp/tls" --kubeconfig-out "$tmp/kubeconfig" \
		--pidfile "$tmp/pid" --pod-start-ms 100 --run-ms 500 \
		--kill-grace-ms 500 --image-user 1000 "$@" ||
		die "the emulator did not start"
}
start_emu --token "admin-$$"

export KUBECONFIG=$tmp/kubeconfig
# kubectl's discovery and OpenAPI cache, kept out of $HOME.
export KUBECACHEDIR=$tmp/cache

# k, kin, has.
# shellcheck source=lib/kubectl.sh
. "$src/tests/integration/lib/kubectl.sh"
# py EXPR: a Python expression over the last output parsed as JSON (d).
py() { /usr/bin/python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(eval(sys.argv[1]))' "$1" <<<"$out"; }

# ---- OpenAPI ------------------------------------------------------------

k get --raw /openapi/v3
[ $rc = 0 ] || die "GET /openapi/v3: $out"
urls=$(py '" ".join(sorted(v["serverRelativeURL"] for v in d["paths"].values()))')
k api-resources -o name
[ $rc = 0 ] || die "api-resources: $out"
resources=$out
# Every group version api-resources lists has its document in the index,
# and that document defines each of its kinds with its GVK.
k api-resources --no-headers
while read -r line; do
	kind=$(awk '{print $NF}' <<<"$line")
	gv=$(awk '{print $(NF-2)}' <<<"$line")
	case $gv in
	*/*) key=apis/$gv ;;
	*) key=api/$gv ;;
	esac
	url=$(tr ' ' '\n' <<<"$urls" | grep "^/openapi/v3/$key?hash=" || true)
	if [ -z "$url" ]; then
		bad "openapi v3 index lacks $key ($kind)"
		continue
	fi
	set +e
	doc=$(timeout 30 "$kubectl" get --raw "$url" 2>&1)
	set -e
	n=$(/usr/bin/python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
g, v = (sys.argv[1].split("/") + [""])[:2] if "/" in sys.argv[1] else ("", sys.argv[1])
want = {"group": g, "version": v, "kind": sys.argv[2]}
defs = [n for n, s in d["components"]["schemas"].items()
        if want in s.get("x-kubernetes-group-version-kind", [])]
patch = [op for p in d["paths"].values() for m, op in p.items()
         if m == "patch" and op.get("x-kubernetes-group-version-kind") == want
         and any(x.get("name") == "fieldValidation" for x in op["parameters"])]
print(len(defs), len(patch))' "$gv" "$kind" <<<"$doc" 2>&1)
	if [ "$n" = "1 2" ] || [ "$n" = "1 1" ]; then
		ok "openapi v3 $key defines $kind and its PATCH takes fieldValidation"
	else
		bad "openapi v3 $key for $kind: definitions, patches = $n"
	fi
done <<<"$out"
k get --raw /openapi/v3/apis/kubeflow.org/v2beta1
has "MPIJob definition named by the reversed group" '"org.kubeflow.v2beta1.MPIJob"'
has "MPIJob metadata refers to ObjectMeta" '"$ref":"#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"'
has "MPIJobList defined" '"org.kubeflow.v2beta1.MPIJobList"'
k get --raw /openapi/v2
[ "$(py 'd["swagger"]')" = 2.0 ] && ok "openapi v2 is a swagger 2.0 document" ||
	bad "openapi v2: $(head -c 300 <<<"$out")"
[ "$(py '"io.k8s.api.core.v1.Pod" in d["definitions"] and "org.kubeflow.v2beta1.MPIJob" in d["definitions"]')" = True ] &&
	ok "openapi v2 defines Pod and MPIJob" || bad "openapi v2 definitions"

# ---- api-resources ------------------------------------------------------

grep -qx "mpijobs.kubeflow.org" <<<"$resources" &&
	grep -qx "pods" <<<"$resources" &&
	ok "api-resources lists mpijobs.kubeflow.org and pods" ||
	bad "api-resources: $resources"

# ---- apply, create, explain, get ----------------------------------------

cp "$src/tests/golden/mpijob-minimal.yaml" "$tmp/job.yaml"
grep -q '^  slotsPerWorker: 1$' "$tmp/job.yaml" || die "golden manifest changed"
k apply -f "$tmp/job.yaml"
[ $rc = 0 ] && has "apply -f creates the MPIJob" "mpijob.kubeflow.org/job created" ||
	bad "apply -f: $out"
k get mpijob job -n hpc -o 'jsonpath={.spec.slotsPerWorker} {.spec.mpiReplicaSpecs.Launcher.template.spec.containers[0].image}'
[ "$out" = "1 docker.io/library/ubuntu:22.04" ] && ok "get -o jsonpath shows the applied spec" ||
	bad "get -o jsonpath: $out"

sed 's/^  slotsPerWorker: 1$/  slotsPerWorker: 2/' "$tmp/job.yaml" >"$tmp/job2.yaml"
k apply -f "$tmp/job2.yaml"
[ $rc = 0 ] && has "re-apply with a change" "mpijob.kubeflow.org/job configured" ||
	bad "re-apply: $out"
k get mpijob job -n hpc -o 'jsonpath={.spec.slotsPerWorker} {.metadata.generation}'
[ "$out" = "2 2" ] && ok "re-apply updated the spec (generation 2)" || bad "after re-apply: $out"
k get mpijob job -n hpc -o json
grep -q 'slotsPerWorker\\":2' <<<"$(py 'json.dumps(d["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"])')" &&
	ok "last-applied-configuration records the change" ||
	bad "last-applied annotation: $(head -c 300 <<<"$out")"
k apply -f "$tmp/job2.yaml"
has "apply of the same manifest is unchanged" "mpijob.kubeflow.org/job unchanged"

sed 's/^  slotsPerWorker: 1$/  slotsPerWorker: 1\n  bogusField: 3/; s/^  name: job$/  name: bad/' \
	"$tmp/job.yaml" >"$tmp/bad.yaml"
k apply -f "$tmp/bad.yaml"
[ $rc != 0 ] && has "apply of an unknown field is refused, naming it" \
	'unknown field "spec.bogusField"' || bad "apply of bad.yaml succeeded: $out"
k get mpijob bad -n hpc
[ $rc != 0 ] && has "the refused MPIJob was not stored" "NotFound" ||
	bad "bad MPIJob exists: $out"

sed 's/^  name: job$/  name: made/' "$tmp/job.yaml" >"$tmp/made.yaml"
k create -f "$tmp/made.yaml"
[ $rc = 0 ] && has "create -f" "mpijob.kubeflow.org/made created" || bad "create -f: $out"
k create -f "$tmp/made.yaml"
[ $rc != 0 ] && has "create -f again is AlreadyExists" "AlreadyExists" ||
	bad "second create -f: $out"

k explain mpijob.spec.mpiReplicaSpecs
[ $rc = 0 ] && has "explain mpijob.spec.mpiReplicaSpecs: the CRD's description" \
	"MPIReplicaSpecs contains maps from" || bad "explain: $out"
has "explain mpijob.spec.mpiReplicaSpecs: the map's fields" "restartPolicy"
k explain pods.spec.containers.securityContext
[ $rc = 0 ] && has "explain pods.spec.containers.securityContext" \
	"allowPrivilegeEscalation" || bad "explain pods...securityContext: $out"
has "explain of a built-in field: its description" "runAsNonRoot"
k explain mpijobs --recursive
has "explain --recursive reaches ObjectMeta" "ownerReferences"

k get mpijobs -n hpc -o yaml
[ $rc = 0 ] && has "get mpijobs -o yaml" "kind: MPIJob" || bad "get -o yaml: $out"
has "get -o yaml shows the applied change" "slotsPerWorker: 2"
has "get -o yaml lists the created MPIJob" "name: made"

# ---- logs ---------------------------------------------------------------

pod=
for _ in $(seq 100); do
	k get pods -n hpc -l hpcbridge.io/job-name=job,hpcbridge.io/role=launcher \
		-o 'jsonpath={.items[0].metadata.name} {.items[0].status.phase}'
	case $out in
	*" Succeeded") pod=${out% *} && break ;;
	esac
	sleep 0.2
done
[ -n "$pod" ] || bad "the launcher pod did not succeed: $out"
if [ -n "$pod" ]; then
	k logs -n hpc "$pod"
	[ $rc = 0 ] && has "logs of the launcher" "simulated launcher hpc/$pod" ||
		bad "logs: $out"
fi

# ---- strategic merge patches of a built-in kind -------------------------

cat >"$tmp/pod.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: p1
  labels: {tier: "1"}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: busybox:1
    command: ["sh", "-c", "echo hi"]
    env:
    - {name: A, value: "1"}
  - name: d
    image: busybox:1
EOF
k apply -f "$tmp/pod.yaml"
[ $rc = 0 ] && has "apply -f of a Pod" "pod/p1 created" || bad "apply pod: $out"
sed 's/tier: "1"/tier: "2"/' "$tmp/pod.yaml" |
	awk '/name: d/ { d = 1 } d && /busybox:1/ { sub("busybox:1", "busybox:2") } { print }' \
		>"$tmp/pod2.yaml"
k apply -f "$tmp/pod2.yaml" -v=8
has "re-apply of a Pod sends a strategic merge patch" \
	"Content-Type: application/strategic-merge-patch+json"
has "the patch merges containers by name" '"$setElementOrder/containers"'
[ $rc = 0 ] && has "re-apply of a Pod" "pod/p1 configured" || bad "re-apply pod: $(tail -3 <<<"$out")"
k get pod p1 -o json
got=$(py 'd["metadata"]["labels"]["tier"], [(c["name"], c["image"], c.get("command"), len(c.get("env", []))) for c in d["spec"]["containers"]], [x for x in d["spec"] if x.startswith("$")]')
[ "$got" = "('2', [('c', 'busybox:1', ['sh', '-c', 'echo hi'], 1), ('d', 'busybox:2', None, 0)], [])" ] &&
	ok "strategic merge: d's image changed, c kept its command and env, no directive stored" ||
	bad "pod after the strategic patch: $got"

k patch pod p1 -p '{"metadata":{"finalizers":["a.io/x"]}}'
k patch pod p1 -p '{"metadata":{"finalizers":["b.io/y"]}}'
k get pod p1 -o 'jsonpath={.metadata.finalizers}'
[ "$out" = '["a.io/x","b.io/y"]' ] && ok "kubectl patch: finalizers merge as a set" ||
	bad "finalizers after two strategic patches: $out"
k patch pod p1 -p '{"metadata":{"$deleteFromPrimitiveList/finalizers":["a.io/x"]}}'
k get pod p1 -o 'jsonpath={.metadata.finalizers}'
[ "$out" = '["b.io/y"]' ] && ok "\$deleteFromPrimitiveList removes one finalizer" ||
	bad "after \$deleteFromPrimitiveList: $out"
k patch pod p1 --type=merge -p '{"metadata":{"finalizers":null}}'
k get pod p1 -o 'jsonpath={.metadata.finalizers}'
[ -z "$out" ] && ok "merge patch: finalizers removed" || bad "finalizers left: $out"
k patch pod p1 -p '{"spec":{"containers":[{"name":"c","image":"busybox:3"}]}}'
k get pod p1 -o 'jsonpath={.spec.containers[*].image} {.spec.containers[0].command}'
[ "$out" = 'busybox:3 busybox:2 ["sh","-c","echo hi"]' ] &&
	ok "kubectl patch: a container patched by name keeps the others" ||
	bad "after patching container c: $out"
k patch configmap nosuch -p '{"data":{"a":"b"}}'
[ $rc != 0 ] && has "patch of a missing object" "NotFound" || bad "patch nosuch: $out"

# ConfigMaps: client-side apply removes a key dropped from the manifest;
# server-side apply records kubectl as its manager.
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  a: "1"\n  b: "2"\n' >"$tmp/cm.yaml"
k apply -f "$tmp/cm.yaml"
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  a: "3"\n' >"$tmp/cm2.yaml"
k apply -f "$tmp/cm2.yaml"
k get configmap cfg -o 'jsonpath={.data}'
[ "$out" = '{"a":"3"}' ] && ok "re-apply of a ConfigMap drops the removed key" ||
	bad "ConfigMap after re-apply: $out"
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  k: "v"\n' >"$tmp/ssa.yaml"
k apply --server-side -f "$tmp/ssa.yaml"
[ $rc = 0 ] && has "apply --server-side" "configmap/ssa serverside-applied" ||
	bad "apply --server-side: $out"
k get configmap ssa -o 'jsonpath={.data.k} {.metadata.managedFields[0].manager} {.metadata.managedFields[0].operation}'
[ "$out" = "v kubectl Apply" ] && ok "server-side apply: kubectl manages the fields" ||
	bad "server-side apply result: $out"

# ---- delete -------------------------------------------------------------

k delete -f "$tmp/job2.yaml"
[ $rc = 0 ] && has "delete -f" 'mpijob.kubeflow.org "job" deleted' || bad "delete -f: $out"
k get mpijob job -n hpc
[ $rc != 0 ] && has "get after delete -f is NotFound" "NotFound" ||
	bad "job still there: $out"
k delete -f "$tmp/made.yaml" -f "$tmp/pod.yaml" -f "$tmp/cm.yaml"
[ $rc = 0 ] && has "delete -f of several manifests" 'pod "p1" deleted' ||
	bad "delete -f several: $out"
k get mpijobs -n hpc -o name
[ -z "$out" ] && ok "no MPIJob left" || bad "MPIJobs left: $out"

kill -0 "$kubemu_pid" 2>/dev/null || bad "the emulator died: $(tail -5 "$tmp/emu.err")"

# ---- without --token ----------------------------------------------------

# kubectl prompts for a user name when the kubeconfig gives no credential:
# the kubeconfig of an emulator without tokens still carries one.
kill -TERM "$kubemu_pid"
wait "$kubemu_pid" || bad "the emulator exited with $? on SIGTERM"
kubemu_pid=
start_emu
k apply -f "$tmp/cm.yaml"
[ $rc = 0 ] && has "kubectl against an emulator without --token" \
	"configmap/cfg created" || bad "no-token apply: $out"
echo "kubectl_verbs: $fails failure(s)"
[ "$fails" = 0 ]
