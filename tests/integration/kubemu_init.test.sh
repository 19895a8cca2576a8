#!/usr/bin/env bash
# kubemu_init.test.sh - hb-kubemu in execute mode runs a launcher pod's
# init containers as the kubelet does, and resolves env secretKeyRef from
# v1 Secrets; checked with the real kubectl.
#
# - Two init containers append to a file in an emptyDir (bound at a
#   mount path of its own, so the directory is shared, not the path),
#   each with its own env, workingDir and identity; the main container
#   reads the file: the order is first, second, main.  While the first
#   one runs the pod is Pending, with its init container running and
#   the main one waiting PodInitializing; each init container's output
#   is its own log (kubectl logs -c NAME), and kubectl get pods shows
#   Init:0/2 (the emulator serves pods as Tables), then Completed.
# - A Secret made with kubectl create secret generic is stored base64,
#   with stringData (kubectl apply) merged into data; a secretKeyRef
#   reaches the env of an init container and of the main one, as does
#   envFrom, and a secret volume holds its data, decoded.
# - An init container that exits 3 (restartPolicy Never) fails the pod:
#   initContainerStatuses exitCode 3, reason Error, Initialized False,
#   and the main container never ran (its marker file is absent); an
#   MPIJob whose launcher does so ends Failed.  With OnFailure the
#   kubelet restarts it instead (restartCount, CrashLoopBackOff), and
#   the MPIJob fails when the restarts pass its backoffLimit.
# - A missing Secret, or key, keeps the container waiting with
#   CreateContainerConfigError and the kubelet's message until it
#   appears.
# - Deleting a pod while an init container runs ends its process group
#   (both PIDs checked).
# - A pod that is not executed takes its init containers as done.
#
# Needs root (the emptyDir is bound at its mount path, identities).
# Usage: kubemu_init.test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail

build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
kubectl=${KUBECTL:-/usr/bin/kubectl}

# ok, bad, die and $fails.
. "$src/tests/integration/lib/kubecall.sh"
check() { # check MSG COMMAND...
	local msg=$1
	shift
	if "$@"; then ok "$msg"; else bad "$msg"; fi
}

[ "$(id -u)" = 0 ] || die "needs root (bind mounts, setuid)"
[ -x "$build/bin/hb-kubemu" ] || die "hb-kubemu not built"
[ -x "$kubectl" ] || die "$kubectl missing"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hb-kubemu-init.XXXXXX")
chmod 755 "$tmp"
# shellcheck source=lib/kubemu.sh
. "$src/tests/integration/lib/kubemu.sh"
kubemu_start --execute --workdir "$tmp/work" --pod-start-ms 50 \
	--kill-grace-ms 1000 --tls-dir "$tmp/tls" \
	--kubeconfig-out "$tmp/kubeconfig" --token "t-$$" ||
	die "no emulator"
export KUBECONFIG=$tmp/kubeconfig
export KUBECACHEDIR=$tmp/cache

# k, kin, has.
# shellcheck source=lib/kubectl.sh
. "$src/tests/integration/lib/kubectl.sh"
# jp POD EXPR: a Python expression over the pod (as p); "" if none.
jp() {
	"$kubectl" get pod "$1" -o json 2>/dev/null |
		python3 -c "import json,sys; p=json.load(sys.stdin); print($2)" \
			2>/dev/null || true
}
# wait_for POD EXPR [TENTHS]: until EXPR over the pod is True.
wait_for() {
	for _ in $(seq "${3:-150}"); do
		[ "$(jp "$1" "$2")" = True ] && return 0
		sleep 0.1
	done
	return 1
}
# ics POD I KEY...: initContainerStatuses[I] walked down KEY...
ics() {
	local pod=$1 i=$2
	shift 2
	local path
	path=$(printf '.get("%s", {})' "$@")
	jp "$pod" "p['status']['initContainerStatuses'][$i]$path"
}
# status POD: the STATUS column of kubectl get pods (a server-side Table).
status() { "$kubectl" get pod "$1" --no-headers 2>/dev/null | awk '{print $3}'; }
events() {
	"$kubectl" get events -o json | python3 -c '
import json, sys
for e in json.load(sys.stdin)["items"]:
    print(e["involvedObject"]["name"], e["reason"], e["message"])'
}

mnt=$tmp/mnt/shared # the emptyDir's mount path (not its host path)
vol=$tmp/work/default/order/volumes/shared
mkdir -p "$tmp/wd2"
LABELS='labels: {training.kubeflow.org/job-role: launcher}'

# 1. A Secret from kubectl create secret generic: stored base64.
k create secret generic s3creds --from-literal=AWS_ACCESS_KEY_ID=AKIAINIT \
	--from-literal=AWS_SECRET_ACCESS_KEY='s3cr3t value'
check "kubectl create secret generic" [ "$rc" = 0 ]
k get secret s3creds -o 'jsonpath={.data.AWS_SECRET_ACCESS_KEY} {.type}'
check "the Secret's data is base64, type Opaque" \
	[ "$out" = "$(printf 's3cr3t value' | base64) Opaque" ]
cat >"$tmp/sd.yaml" <<'EOF'
apiVersion: v1
kind: Secret
metadata: {name: strdata}
stringData: {token: plain-text}
data: {other: b3RoZXI=}
EOF
k apply -f "$tmp/sd.yaml"
check "kubectl apply of a Secret with stringData" [ "$rc" = 0 ]
k get secret strdata -o 'jsonpath={.data.token} {.data.other} {.stringData}'
check "stringData is merged into data, base64, and not stored" \
	[ "$out" = "$(printf plain-text | base64) b3RoZXI= " ]
k create secret generic bad --from-literal='a/b=1'
check "a Secret key with a slash is refused" [ "$rc" != 0 ]

# 2. Two init containers, then the main one, sharing an emptyDir.
cat >"$tmp/order.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: order
  $LABELS
spec:
  restartPolicy: Never
  volumes:
  - {name: shared, emptyDir: {}}
  - {name: creds, secret: {secretName: s3creds}}
  initContainers:
  - name: first
    image: busybox
    command: [sh, -c, 'sleep 3; umask 0; echo "first X=\$X uid=\$(id -u)" >> $mnt/order; echo first-log']
    env:
    - {name: X, value: one}
    - name: KEYID
      valueFrom: {secretKeyRef: {name: s3creds, key: AWS_ACCESS_KEY_ID}}
    - {name: NOPE, valueFrom: {secretKeyRef: {name: absent, key: k, optional: true}}}
    volumeMounts: [{name: shared, mountPath: $mnt}]
  - name: second
    image: busybox
    command: [sh, -c]
    args: ['echo "second X=\$X wd=\$(pwd) key=\$KEYID nope=\${NOPE-unset}" >> $mnt/order; echo second-log']
    workingDir: $tmp/wd2
    securityContext: {runAsUser: 65534}
    env:
    - {name: X, value: two}
    - name: KEYID
      valueFrom: {secretKeyRef: {name: s3creds, key: AWS_ACCESS_KEY_ID}}
    - {name: NOPE, valueFrom: {secretKeyRef: {name: absent, key: k, optional: true}}}
    volumeMounts: [{name: shared, mountPath: $mnt}]
  containers:
  - name: main
    image: busybox
    command: [sh, -c, 'cat $mnt/order; echo "main secret=\$SECRET" >> $mnt/order; echo "file=\$(cat \$CREDS/AWS_ACCESS_KEY_ID) from=\$HB_AWS_ACCESS_KEY_ID" >> $mnt/order']
    envFrom: [{secretRef: {name: s3creds}, prefix: HB_}]
    env:
    - name: SECRET
      valueFrom: {secretKeyRef: {name: s3creds, key: AWS_SECRET_ACCESS_KEY}}
    - {name: CREDS, value: /etc/hb-creds}
    volumeMounts:
    - {name: shared, mountPath: $mnt}
    - {name: creds, mountPath: /etc/hb-creds, readOnly: true}
EOF
k apply -f "$tmp/order.yaml"
check "the pod with two init containers is created" [ "$rc" = 0 ]
check "while the first init container runs: Pending, it running, main PodInitializing" \
	wait_for order "p['status'].get('phase') == 'Pending' and 'running' in p['status']['initContainerStatuses'][0]['state'] and p['status']['containerStatuses'][0]['state']['waiting']['reason'] == 'PodInitializing' and 'waiting' in p['status']['initContainerStatuses'][1]['state']" 30
check "while it runs: Initialized False, ContainersNotInitialized, both named" \
	[ "$(jp order "[(c['status'], c.get('reason'), c.get('message')) for c in p['status']['conditions'] if c['type'] == 'Initialized'][0]")" = "('False', 'ContainersNotInitialized', 'containers with incomplete status: [first second]')" ]
check "kubectl get pods: STATUS Init:0/2 while the first runs" \
	[ "$(status order)" = Init:0/2 ]
# Following the first init container's log ends when it does.
timeout 30 "$kubectl" logs -f order -c first >"$tmp/follow.out" 2>&1 &
follow=$!
k logs order
check "the main container's log waits: PodInitializing" \
	grep -q 'is waiting to start: PodInitializing' <<<"$out"
check "the pod succeeds" wait_for order "p['status'].get('phase') == 'Succeeded'"
want="first X=one uid=0
second X=two wd=$tmp/wd2 key=AKIAINIT nope=unset
main secret=s3cr3t value
file=AKIAINIT from=AKIAINIT"
check "init containers ran in order, each with its env, workingDir, identity" \
	[ "$(cat "$vol/order" 2>/dev/null)" = "$want" ]
check "the emptyDir was bound: nothing at the mount path on the host" \
	[ ! -e "$mnt/order" ]
k logs order
check "kubectl logs: the main container's log read the file" \
	[ "$(tail -n 2 <<<"$out")" = "$(head -2 <<<"$want")" ]
check "kubectl logs defaults to the main container, lists the init ones" \
	grep -qF 'Defaulted container "main" out of: main, first (init), second (init)' <<<"$out"
k logs order -c first
check "kubectl logs -c first: that init container's own log" \
	[ "$out" = first-log ]
frc=0
wait "$follow" || frc=$?
check "kubectl logs -f -c first ended with it, and had its output" \
	[ "$frc:$(cat "$tmp/follow.out")" = 0:first-log ]
k logs order -c second
check "kubectl logs -c second" [ "$out" = second-log ]
k logs order -c nosuch
check "kubectl logs -c of an unknown container is refused" [ "$rc" != 0 ]
check "initContainerStatuses: both Completed with exit code 0" \
	[ "$(jp order "[(s['name'], s['state']['terminated']['exitCode'], s['state']['terminated']['reason'], s['ready']) for s in p['status']['initContainerStatuses']]")" = "[('first', 0, 'Completed', True), ('second', 0, 'Completed', True)]" ]
check "kubectl get pods: Completed" [ "$(status order)" = Completed ]
check "Initialized True once they are done" \
	[ "$(jp order "[c['status'] for c in p['status']['conditions'] if c['type'] == 'Initialized'][0]")" = True ]

# 3. An init container that exits 3 fails the pod; main never runs.
cat >"$tmp/bad.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: bad
  $LABELS
spec:
  restartPolicy: Never
  initContainers:
  - {name: fails, image: busybox, command: [sh, -c, 'echo failing; exit 3']}
  - {name: after, image: busybox, command: [touch, $tmp/after-ran]}
  containers:
  - {name: main, image: busybox, command: [touch, $tmp/main-ran]}
EOF
k apply -f "$tmp/bad.yaml"
check "the pod whose init container fails ends Failed" \
	wait_for bad "p['status'].get('phase') == 'Failed'"
check "initContainerStatuses: exit code 3, reason Error" \
	[ "$(ics bad 0 state terminated exitCode) $(ics bad 0 state terminated reason)" = "3 Error" ]
check "kubectl get pods: Init:Error" [ "$(status bad)" = Init:Error ]
check "the next init container stays waiting PodInitializing" \
	[ "$(ics bad 1 state waiting reason)" = PodInitializing ]
check "Initialized False, ContainersNotInitialized" \
	[ "$(jp bad "[(c['status'], c.get('reason')) for c in p['status']['conditions'] if c['type'] == 'Initialized'][0]")" = "('False', 'ContainersNotInitialized')" ]
sleep 0.5
check "neither the next init container nor the main one ran" \
	test ! -e "$tmp/main-ran" -a ! -e "$tmp/after-ran"
k logs bad -c fails
check "the failed init container's log" [ "$out" = failing ]

# 4. restartPolicy OnFailure: the kubelet restarts it after a back-off.
sed -e 's/name: bad/name: again/' -e 's/Never/OnFailure/' "$tmp/bad.yaml" \
	>"$tmp/again.yaml"
k apply -f "$tmp/again.yaml"
check "OnFailure: the failed init container waits to restart (CrashLoopBackOff)" \
	wait_for again "p['status']['initContainerStatuses'][0]['state'].get('waiting', {}).get('reason') == 'CrashLoopBackOff'"
check "OnFailure: restartCount 1, lastState exit code 3, pod Pending" \
	[ "$(ics again 0 restartCount) $(ics again 0 lastState terminated exitCode) $(jp again "p['status']['phase']")" = "1 3 Pending" ]
k get pod again --no-headers
check "kubectl get pods: Init:CrashLoopBackOff, 1 restart" \
	[ "$(awk '{print $3, $4}' <<<"$out")" = "Init:CrashLoopBackOff 1" ]
k delete pod again --wait=true --timeout=20s

# 5. A missing Secret, then a missing key: CreateContainerConfigError.
cat >"$tmp/nosec.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: nosec
  $LABELS
spec:
  restartPolicy: Never
  initContainers:
  - name: pull
    image: busybox
    command: [sh, -c, 'echo "pulled with \$KEY"']
    env:
    - name: KEY
      valueFrom: {secretKeyRef: {name: late, key: key}}
  containers:
  - {name: main, image: busybox, command: ['true']}
EOF
k apply -f "$tmp/nosec.yaml"
check "a missing Secret: the init container waits, CreateContainerConfigError" \
	wait_for nosec "p['status']['initContainerStatuses'][0]['state'].get('waiting', {}).get('message') == 'secret \"late\" not found' and p['status']['initContainerStatuses'][0]['state']['waiting']['reason'] == 'CreateContainerConfigError'"
check "... and the pod stays Pending" [ "$(jp nosec "p['status']['phase']")" = Pending ]
check "kubectl get pods: Init:CreateContainerConfigError" \
	[ "$(status nosec)" = Init:CreateContainerConfigError ]
check "a Warning event says Error: secret \"late\" not found" \
	grep -qF 'nosec Failed Error: secret "late" not found' <<<"$(events)"
k create secret generic late --from-literal=other=x
check "a Secret without the key: couldn't find key" \
	wait_for nosec "p['status']['initContainerStatuses'][0]['state'].get('waiting', {}).get('message') == \"couldn't find key key in Secret default/late\""
k delete secret late
k create secret generic late --from-literal=key=now-here
check "once the key is there the pod runs and succeeds" \
	wait_for nosec "p['status'].get('phase') == 'Succeeded'"
k logs nosec -c pull
check "the init container saw the Secret's value" [ "$out" = "pulled with now-here" ]

# 6. Deleting a pod while its init container runs ends its processes.
cat >"$tmp/long.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: long
  $LABELS
spec:
  restartPolicy: Never
  initContainers:
  - {name: wait, image: busybox, command: [sh, -c, 'sleep 300 & echo \$! > $tmp/child; wait']}
  containers:
  - {name: main, image: busybox, command: [touch, $tmp/long-main-ran]}
EOF
k apply -f "$tmp/long.yaml"
check "the long init container runs" \
	wait_for long "'running' in p['status']['initContainerStatuses'][0]['state']"
ipid=$(jp long "p['status']['initContainerStatuses'][0]['containerID'].split('//')[1]")
for _ in $(seq 50); do [ -s "$tmp/child" ] && break; sleep 0.1; done
cpid=$(cat "$tmp/child" 2>/dev/null || true)
alive() { [ -n "$1" ] && [ -n "$2" ] && kill -0 "$1" && kill -0 "$2"; }
check "its process ($ipid) and its child ($cpid) run" alive "$ipid" "$cpid"
k delete pod long --wait=true --timeout=20s
check "kubectl delete pod returns" [ "$rc" = 0 ]
gone=1
for _ in $(seq 50); do
	gone=1
	kill -0 "$ipid" 2>/dev/null && gone=0
	kill -0 "$cpid" 2>/dev/null && gone=0
	[ $gone = 1 ] && break
	sleep 0.1
done
check "no process of the init container is left (PIDs $ipid $cpid)" [ $gone = 1 ]
check "the main container never ran" [ ! -e "$tmp/long-main-ran" ]

# 7. A pod that is not executed (no launcher): init containers done at once.
cat >"$tmp/sim.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: sim}
spec:
  initContainers: [{name: prep, image: busybox}]
  containers: [{name: c, image: busybox}]
EOF
k apply -f "$tmp/sim.yaml"
check "a simulated pod runs with its init container Completed" \
	wait_for sim "p['status'].get('phase') == 'Running' and p['status']['initContainerStatuses'][0]['state']['terminated']['reason'] == 'Completed'"

# 8. An MPIJob whose launcher's init container fails ends Failed.
cat >"$tmp/job.yaml" <<EOF
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: initfail}
spec:
  slotsPerWorker: 1
  runPolicy: {backoffLimit: 0}
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          initContainers:
          - {name: hpcbridge-ckpt, image: busybox, command: [sh, -c, 'exit 3']}
          containers:
          - {name: launcher, image: busybox, command: [touch, $tmp/job-main-ran]}
    Worker:
      replicas: 1
      template:
        spec:
          containers: [{name: worker, image: busybox}]
EOF
k apply -f "$tmp/job.yaml"
check "kubectl apply of the MPIJob" [ "$rc" = 0 ]
jobfailed() {
	[ "$("$kubectl" get mpijob initfail -o 'jsonpath={.status.conditions[?(@.type=="Failed")].status}' 2>/dev/null)" = True ]
}
ok_job=0
for _ in $(seq 150); do jobfailed && { ok_job=1; break; }; sleep 0.1; done
check "the MPIJob ends Failed" [ $ok_job = 1 ]
check "its launcher never ran" [ ! -e "$tmp/job-main-ran" ]
# With OnFailure the init container restarts in place, and the Job's
# backoffLimit counts the restarts (pastBackoffLimitOnFailure).
sed -e 's/name: initfail/name: initretry/' \
	-e 's/restartPolicy: Never/restartPolicy: OnFailure/' \
	"$tmp/job.yaml" >"$tmp/job2.yaml"
k apply -f "$tmp/job2.yaml"
ok_job=0
for _ in $(seq 150); do
	r=$("$kubectl" get mpijob initretry -o 'jsonpath={.status.conditions[?(@.type=="Failed")].reason}' 2>/dev/null || true)
	[ "$r" = BackoffLimitExceeded ] && { ok_job=1; break; }
	sleep 0.1
done
check "OnFailure: the MPIJob fails, BackoffLimitExceeded, after a restart" \
	[ $ok_job = 1 ]

kubemu_stop
if grep -q "ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error:" "$tmp/emu.err"; then
	cat "$tmp/emu.err" >&2
	bad "the sanitizers reported errors"
fi
[ "$fails" = 0 ] || die "$fails checks failed"
echo "PASS: init containers and Secrets in hb-kubemu"
