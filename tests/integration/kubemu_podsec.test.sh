#!/usr/bin/env bash
# kubemu_podsec.test.sh - hb-kubemu's PodSecurity admission, and executed
# pods that run as the uid and groups they ask for with their volumes at
# their mount paths.
#
# Namespaces come from --namespace with the pod-security.kubernetes.io
# labels.  "secure" enforces restricted: a plain pod is refused with 403
# and the real plugin's message, a compliant one is created, a hostPath
# volume is refused, and an MPIJob whose pods are not compliant gets no
# pods but the operator's Warning event.  "base" enforces baseline and
# warns restricted: hostNetwork and privileged are refused, the plain
# pod is created with a Warning header (kubectl prints it).  In execute
# mode a compliant launcher runs as uid 65534 with a supplementary group
# and fsGroup; a claim (--pvc-root) and a hostPath are mounted at other
# paths than theirs on the host, one read-only: the file it writes lands
# at the host path, owned by 65534, and not at the mount path on the
# host.  runAsNonRoot without runAsUser leaves the pod waiting with
# CreateContainerConfigError; a missing hostPath of type Directory fails
# the pod.
#
# Needs root (mount namespaces, setuid).
# Usage: kubemu_podsec.test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail

build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
emu=$build/bin/hb-kubemu
crds=${HB_SHARED_DIR:-$src/../shared}/reference/crds

# ok, bad, die and $fails.
. "$src/tests/integration/lib/kubecall.sh"
check() { # check MSG COMMAND...
	local msg=$1
	shift
	if "$@"; then ok "$msg"; else bad "$msg"; fi
}

[ "$(id -u)" = 0 ] || die "needs root (mount namespaces, setuid)"
[ -x "$emu" ] || die "$emu not built"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hb-kubemu-podsec.XXXXXX")
chmod 755 "$tmp"
# shellcheck source=lib/kubemu.sh
. "$src/tests/integration/lib/kubemu.sh"

PSA=pod-security.kubernetes.io
# A spec that is not NAME,LABEL=VALUE... stops the start.
if timeout 10 "$emu" --namespace "x,nolabel" --listen 127.0.0.1:0 \
	2>"$tmp/bad.err" >&2; then
	die "--namespace x,nolabel was accepted"
fi
check "a bad --namespace is refused with a message" \
	grep -qF '"nolabel" is not LABEL=VALUE' "$tmp/bad.err"
kubemu_start --execute --workdir "$tmp/work" --pod-start-ms 50 \
	--kill-grace-ms 1000 --pvc-root "$tmp/pvc" \
	--namespace "secure,$PSA/enforce=restricted,annotation:openshift.io/sa.scc.uid-range=1000/10000" \
	--namespace "base,$PSA/enforce=baseline,$PSA/warn=restricted" \
	--namespace open || die "no emulator"
url=http://127.0.0.1:$(cat "$tmp/port")

# post NS JSON: create a pod; the code in $code, body in $tmp/out,
# headers in $tmp/hdr.
post() {
	code=$(curl -s -o "$tmp/out" -D "$tmp/hdr" -w '%{http_code}' \
		-H 'Content-Type: application/json' -X POST \
		--data-binary "$2" "$url/api/v1/namespaces/$1/pods")
}
msg() { python3 -c 'import json,sys; print(json.load(sys.stdin)["message"])' <"$tmp/out"; }
# jpod NS NAME EXPR: a Python expression over the pod (as p).
jpod() {
	curl -s "$url/api/v1/namespaces/$1/pods/$2" |
		python3 -c "import json,sys; p=json.load(sys.stdin); print($3)"
}
# wait_pod NS NAME EXPR: until EXPR over the pod is True (10 s).
wait_pod() {
	for _ in $(seq 100); do
		[ "$(jpod "$1" "$2" "$3" 2>/dev/null)" = True ] && return 0
		sleep 0.1
	done
	return 1
}
# events NS: "REASON MESSAGE" a line.
events() {
	curl -s "$url/api/v1/namespaces/$1/events" | python3 -c '
import json, sys
for e in json.load(sys.stdin)["items"]:
    print(e["involvedObject"]["name"], e["reason"], e["message"])'
}

plain='{"apiVersion":"v1","kind":"Pod","metadata":{"name":"plain"},
 "spec":{"containers":[{"name":"c","image":"busybox"}]}}'
# What restricted asks of a pod and its containers.
SC='"securityContext":{"allowPrivilegeEscalation":false,
 "capabilities":{"drop":["ALL"]}}'
PSC='"securityContext":{"runAsNonRoot":true,"runAsUser":1000,
 "seccompProfile":{"type":"RuntimeDefault"}}'

# 1. restricted refuses a plain pod with the real plugin's message.
post secure "$plain"
want='pods "plain" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")'
check "restricted: a plain pod is 403" [ "$code" = 403 ]
check "restricted: the message names the violated checks" \
	[ "$(msg)" = "$want" ]
check "restricted: reason Forbidden" \
	grep -q '"reason":"Forbidden"' "$tmp/out"

# 2. ... and creates a compliant one (a volume without a source is an
# emptyDir).
post secure '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"good"},
 "spec":{'"$PSC"',"volumes":[{"name":"e"},{"name":"p","projected":{"sources":[]}}],
 "containers":[{"name":"c","image":"busybox",'"$SC"'}]}}'
check "restricted: a compliant pod is created" [ "$code" = 201 ]

# 3. restricted refuses hostPath, capabilities beyond NET_BIND_SERVICE,
# runAsUser 0.
post secure '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"hp"},
 "spec":{"securityContext":{"runAsNonRoot":true,"runAsUser":0,
 "seccompProfile":{"type":"RuntimeDefault"}},
 "volumes":[{"name":"h","hostPath":{"path":"/tmp"}}],
 "containers":[{"name":"c","image":"busybox","securityContext":{
 "allowPrivilegeEscalation":false,
 "capabilities":{"drop":["ALL"],"add":["NET_BIND_SERVICE","SYS_TIME"]}}}]}}'
m=$(msg)
check "restricted: hostPath is 403" [ "$code" = 403 ]
check "restricted: names the hostPath volume" \
	grep -qF 'hostPath volumes (volume "h")' <<<"$m"
check "restricted: names the restricted volume type" \
	grep -qF 'restricted volume types (volume "h" uses restricted volume type "hostPath")' <<<"$m"
check "restricted: names the added capability" \
	grep -qF 'unrestricted capabilities (container "c" must not include "SYS_TIME" in securityContext.capabilities.add)' <<<"$m"
check "restricted: names runAsUser=0" \
	grep -qF 'runAsUser=0 (pod must not set runAsUser=0)' <<<"$m"

# refuse NS NAME METADATA SPEC WANT: NS refuses the pod, the message has
# WANT.
refuse() {
	post "$1" '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"'"$2"'"'"$3"'},"spec":'"$4"'}'
	local m
	m=$(msg 2>/dev/null || true)
	if [ "$code" = 403 ] && grep -qF -- "$5" <<<"$m"; then
		ok "$1 refuses $2"
	else
		bad "$1 refuses $2 with \"$5\": got $code: $m"
	fi
}
A='"containers":[{"name":"a","image":"x"'
refuse base unconfined '' '{"securityContext":{"seccompProfile":{"type":"Unconfined"}},'"$A"'}]}' \
	'seccompProfile (pod must not set securityContext.seccompProfile.type to "Unconfined")'
refuse base sysctl '' '{"securityContext":{"sysctls":[{"name":"kernel.msgmax","value":"1"},{"name":"net.ipv4.tcp_syncookies","value":"1"}]},'"$A"'}]}' \
	'violates PodSecurity "baseline:latest": forbidden sysctls (kernel.msgmax)'
refuse base procmount '' '{'"$A"',"securityContext":{"procMount":"Unmasked"}}]}' \
	'procMount (container "a" must not set securityContext.procMount to "Unmasked")'
refuse base ports '' '{'"$A"',"ports":[{"containerPort":80,"hostPort":80}]},{"name":"b","image":"x","ports":[{"containerPort":1,"hostPort":8080}]}]}' \
	'hostPort (containers "a", "b" use hostPorts 80, 8080)'
refuse base selinux '' '{'"$A"',"securityContext":{"seLinuxOptions":{"type":"spc_t","user":"u"}}}]}' \
	'seLinuxOptions (container "a" set forbidden securityContext.seLinuxOptions: type "spc_t"; user may not be set)'
refuse base hostpid '' '{"hostPID":true,"hostIPC":true,'"$A"'}]}' \
	'host namespaces (hostPID=true, hostIPC=true)'
refuse base apparmor ',"annotations":{"container.apparmor.security.beta.kubernetes.io/a":"unconfined"}' '{'"$A"'}]}' \
	'forbidden AppArmor profile ('
refuse secure nfs '' '{"securityContext":{"runAsNonRoot":false},"volumes":[{"name":"n","nfs":{"server":"s","path":"/e"}}],'"$A"'}]}' \
	'restricted volume types (volume "n" uses restricted volume type "nfs"), runAsNonRoot != true (pod must not set securityContext.runAsNonRoot=false)'
post base '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"caps"},"spec":{'"$A"',"securityContext":{"capabilities":{"add":["CHOWN","NET_BIND_SERVICE"]},"seccompProfile":{"type":"RuntimeDefault"}}}]}}'
check "baseline: default capabilities and RuntimeDefault are fine" [ "$code" = 201 ]

# 4. baseline refuses host namespaces and privileged containers ...
post base '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"hn"},
 "spec":{"hostNetwork":true,"containers":[{"name":"c","image":"busybox"}]}}'
check "baseline: hostNetwork is 403" [ "$code" = 403 ]
check "baseline: message" \
	[ "$(msg)" = 'pods "hn" is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true)' ]
post base '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"pr"},
 "spec":{"containers":[{"name":"c","image":"busybox",
 "securityContext":{"privileged":true}}]}}'
check "baseline: privileged is 403" [ "$code" = 403 ]
check "baseline: privileged message" \
	grep -qF 'privileged (container "c" must not set securityContext.privileged=true)' <<<"$(msg)"

# 5. ... but creates what restricted refuses, with a warning.
post base "$plain"
check "baseline: a plain pod is created" [ "$code" = 201 ]
check "warn=restricted: a Warning header" \
	grep -qF 'Warning: 299 - "would violate PodSecurity \"restricted:latest\": allowPrivilegeEscalation != false' "$tmp/hdr"
if command -v kubectl >/dev/null; then
	sed 's/"plain"/"plain2"/' <<<"$plain" >"$tmp/plain2.json"
	# (--validate=false: no /openapi here to validate with)
	kubectl -s "$url" -n base create --validate=false -f "$tmp/plain2.json" \
		>"$tmp/kc.out" 2>"$tmp/kc.err" || true
	check "kubectl prints the PodSecurity warning" \
		grep -q 'Warning: would violate PodSecurity "restricted:latest"' "$tmp/kc.err"
	check "kubectl reads the namespace's labels" \
		[ "$(kubectl -s "$url" get ns secure \
			-o "jsonpath={.metadata.labels.pod-security\.kubernetes\.io/enforce}")" = restricted ]
fi

ns=$(curl -s "$url/api/v1/namespaces/secure")
check "the namespace has its labels" grep -qF '"pod-security.kubernetes.io/enforce":"restricted"' <<<"$ns"
check "and annotations" grep -qF '"openshift.io/sa.scc.uid-range":"1000/10000"' <<<"$ns"
check "an unknown namespace is 404" [ "$(curl -s -o /dev/null -w '%{http_code}' "$url/api/v1/namespaces/nope")" = 404 ]

# 6. No labels: privileged, hostNetwork is fine.
post open '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"hn"},
 "spec":{"hostNetwork":true,"containers":[{"name":"c","image":"busybox"}]}}'
check "no labels: hostNetwork is created" [ "$code" = 201 ]

# 7. An executed launcher as uid 65534, gid 65533, groups 4242 and
# fsGroup 4343, writing into a claim mounted at another path.
mnt=$tmp/mnt
post secure '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"run",
 "labels":{"training.kubeflow.org/job-role":"launcher"}},
 "spec":{"securityContext":{"runAsNonRoot":true,"runAsUser":65534,
 "runAsGroup":65533,"supplementalGroups":[4242],"fsGroup":4343,
 "seccompProfile":{"type":"RuntimeDefault"}},
 "volumes":[{"name":"data","persistentVolumeClaim":{"claimName":"data"}},
  {"name":"scratch","emptyDir":{}}],
 "containers":[{"name":"c","image":"busybox",'"$SC"',
 "command":["/bin/sh","-c","id -u; id -g; id -G; touch '"$mnt"'/data/f && echo wrote; touch '"$mnt"'/scratch/s && echo scratch"],
 "volumeMounts":[{"name":"data","mountPath":"'"$mnt"'/data"},
  {"name":"scratch","mountPath":"'"$mnt"'/scratch"}]}]}}'
check "restricted: the executed pod is created" [ "$code" = 201 ]
wait_pod secure run 'p["status"].get("phase") in ("Succeeded","Failed")' ||
	bad "the executed pod did not end"
log=$(curl -s "$url/api/v1/namespaces/secure/pods/run/log")
printf '%s\n' "$log" | sed 's/^/  log: /'
check "the pod succeeded" \
	[ "$(jpod secure run 'p["status"]["phase"]')" = Succeeded ]
check "it ran as uid 65534" [ "$(sed -n 1p <<<"$log")" = 65534 ]
check "with gid 65533" [ "$(sed -n 2p <<<"$log")" = 65533 ]
check "with supplementary groups 4242 and the fsGroup 4343" \
	[ "$(sed -n 3p <<<"$log")" = "65533 4242 4343" ]
f=$tmp/pvc/secure/data/f
check "the file is at the claim's host path" [ -f "$f" ]
check "owned by 65534 and the fsGroup 4343 (the claim is setgid)" \
	[ "$(stat -c %u:%g "$f" 2>/dev/null)" = 65534:4343 ]
check "and not at the mount path on the host" [ ! -e "$mnt/data/f" ]
check "the emptyDir was writable" grep -qx scratch <<<"$log"

# 8. hostPath (no enforcement) at another path, one mount read-only.
mkdir -p "$tmp/host" "$tmp/ro"
chmod 777 "$tmp/host" "$tmp/ro"
post open '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"hostp",
 "labels":{"training.kubeflow.org/job-role":"launcher"}},
 "spec":{"securityContext":{"runAsUser":65534,"runAsGroup":65534},
 "volumes":[{"name":"h","hostPath":{"path":"'"$tmp"'/host"}},
  {"name":"r","hostPath":{"path":"'"$tmp"'/ro"}}],
 "containers":[{"name":"c","image":"busybox",
 "command":["/bin/sh","-c","touch '"$mnt"'/h/g && echo wrote; touch '"$mnt"'/ro/x 2>/dev/null && echo rw || echo ro"],
 "volumeMounts":[{"name":"h","mountPath":"'"$mnt"'/h"},
  {"name":"r","mountPath":"'"$mnt"'/ro","readOnly":true}]}]}}'
wait_pod open hostp 'p["status"].get("phase") in ("Succeeded","Failed")' ||
	bad "the hostPath pod did not end"
log=$(curl -s "$url/api/v1/namespaces/open/pods/hostp/log")
printf '%s\n' "$log" | sed 's/^/  log: /'
check "hostPath: written through the mount path" grep -qx wrote <<<"$log"
check "hostPath: the file is at the host path, owned by 65534:65534" \
	[ "$(stat -c %u:%g "$tmp/host/g" 2>/dev/null)" = 65534:65534 ]
check "and not at the mount path on the host" [ ! -e "$mnt/h/g" ]
check "a readOnly mount is read-only" grep -qx ro <<<"$log"
check "and nothing was written behind it" [ ! -e "$tmp/ro/x" ]

# 9. runAsNonRoot without runAsUser: the image would run as root.
post secure '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"nonroot",
 "labels":{"training.kubeflow.org/job-role":"launcher"}},
 "spec":{"securityContext":{"runAsNonRoot":true,
 "seccompProfile":{"type":"RuntimeDefault"}},
 "containers":[{"name":"c","image":"busybox",'"$SC"',
 "command":["/bin/sh","-c","echo ran"]}]}}'
check "runAsNonRoot without runAsUser passes admission" [ "$code" = 201 ]
wait_pod secure nonroot \
	'p["status"].get("containerStatuses",[{}])[0].get("state",{}).get("waiting",{}).get("reason")=="CreateContainerConfigError"' ||
	bad "the pod did not wait with CreateContainerConfigError"
m=$(jpod secure nonroot 'p["status"]["containerStatuses"][0]["state"]["waiting"]["message"]')
check "the kubelet's message" \
	grep -qF 'container has runAsNonRoot and image will run as root (pod: "nonroot_secure(' <<<"$m"
check "the pod stays Pending" \
	[ "$(jpod secure nonroot 'p["status"]["phase"]')" = Pending ]
check "an Event says why" \
	grep -qF 'nonroot Failed Error: container has runAsNonRoot and image will run as root' <<<"$(events secure)"

# 10. A mount that cannot be made fails the pod.
post open '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"nomount",
 "labels":{"training.kubeflow.org/job-role":"launcher"}},
 "spec":{"volumes":[{"name":"h","hostPath":{"path":"'"$tmp"'/absent","type":"Directory"}}],
 "containers":[{"name":"c","image":"busybox","command":["/bin/true"],
 "volumeMounts":[{"name":"h","mountPath":"/data"}]}]}}'
wait_pod open nomount 'p["status"].get("phase")=="Failed"' ||
	bad "the pod with a missing hostPath did not fail"
check "the failed mount's message" \
	grep -qF "hostPath type check failed: $tmp/absent is not a directory" \
	<<<"$(jpod open nomount 'p["status"]["containerStatuses"][0]["state"]["terminated"]["message"]')"
check "and an Event" grep -qF 'nomount FailedMount MountVolume.SetUp failed' \
	<<<"$(events open)"

# 11. An MPIJob whose pods restricted refuses: no pods, a Warning event.
job='{"apiVersion":"kubeflow.org/v2beta1","kind":"MPIJob",
 "metadata":{"name":"pj"},"spec":{"slotsPerWorker":1,
 "mpiImplementation":"OpenMPI","runPolicy":{"cleanPodPolicy":"Running"},
 "mpiReplicaSpecs":{
 "Launcher":{"replicas":1,"template":{"spec":{"containers":[
  {"name":"launcher","image":"x","command":["/bin/true"]}]}}},
 "Worker":{"replicas":1,"template":{"spec":{"containers":[
  {"name":"worker","image":"x"}]}}}}}}'
code=$(curl -s -o "$tmp/out" -w '%{http_code}' -H 'Content-Type: application/json' \
	-X POST --data-binary "$job" \
	"$url/apis/kubeflow.org/v2beta1/namespaces/secure/mpijobs")
check "the MPIJob itself is created" [ "$code" = 201 ]
for _ in $(seq 50); do
	ev=$(events secure)
	grep -q '^pj MPIJobFailed' <<<"$ev" && break
	sleep 0.1
done
ev=$(events secure)
check "the MPIJob gets the operator's event" \
	grep -qF 'pj MPIJobFailed worker pod created failed: pods "pj-worker-0" is forbidden: violates PodSecurity "restricted:latest"' <<<"$ev"
check "and has no pods" [ -z "$(curl -s "$url/api/v1/namespaces/secure/pods" |
	python3 -c 'import json,sys; print(" ".join(p["metadata"]["name"] for p in json.load(sys.stdin)["items"] if p["metadata"]["name"].startswith("pj-")))')" ]

kill -0 "$kubemu_pid" || bad "the emulator died"
if [ "$fails" -gt 0 ]; then
	echo "--- emulator log" >&2
	tail -n 40 "$tmp/emu.err" >&2
	die "$fails checks failed"
fi
echo "PASS: PodSecurity admission, identities and mounts in hb-kubemu"
