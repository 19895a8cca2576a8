#!/usr/bin/env bash
# kube_client.test.sh - the Kubernetes client library (gateway/kube/*.c)
# against the emulator, through tests/integration/kubecall.c:
#
#   - every verb: create (and 409 AlreadyExists), get (404), list with
#     pages and list-all, delete, server-side apply (conflict, force, the
#     status subresource), merge patch of status, pod logs (whole, limited,
#     followed to the end), events;
#   - the kubeconfig: the emulator's own, a merged list with a missing
#     file, relative certificate-authority and tokenFile, a token file
#     rotated without a new mtime (re-read after the 401), an exec plugin
#     (cached until its expirationTimestamp), tls-server-name, a wrong CA,
#     insecure-skip-tls-verify, client certificates (files and -data)
#     checked by an openssl s_server that demands them;
#   - faults: 500s and 429 with Retry-After during a create (one object,
#     attempts counted), retries spent, latency past the timeout, refused
#     connections then recovery, a watch dropped mid-stream (the reflector
#     resumes: no event lost or twice), a 410 on resume (a relist, with
#     DELETED made up for what vanished meanwhile), 401 and 403;
#   - a second emulator with a namespace-limited token.
#
# Usage: kube_client.test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail

build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
emu=$build/bin/hb-kubemu
kc=$build/tests/kubecall
crds=${HB_SHARED_DIR:-$src/../shared}/reference/crds
# shellcheck source=lib/kubecall.sh
. "$src/tests/integration/lib/kubecall.sh"
# In-cluster settings come only from where a check sets them (a runner
# that is itself a pod has them in its environment).
unset KUBERNETES_SERVICE_HOST KUBERNETES_SERVICE_PORT

[ -x "$emu" ] || die "$emu not built"
[ -x "$kc" ] || die "$kc not built"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hb-kube-client.XXXXXX")
pids=()
cleanup() {
	for p in "${pids[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
	done
	for p in "${pids[@]}"; do
		for _ in $(seq 50); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

# start_emu DIR ARGS...: an emulator serving TLS from DIR; sets port.
start_emu() {
	local dir=$1
	shift
	mkdir -p "$dir"
	"$emu" --listen 127.0.0.1:0 --port-file "$dir/port" --crds "$crds" \
		--tls-dir "$dir/tls" --kubeconfig-out "$dir/kubeconfig" \
		--bookmark-ms 500 --pod-start-ms 100 --run-ms 1000 \
		--kill-grace-ms 500 "$@" >"$dir/emu.out" 2>"$dir/emu.err" &
	pids+=($!)
	for _ in $(seq 100); do
		[ -s "$dir/port" ] && break
		sleep 0.1
	done
	[ -s "$dir/port" ] || die "the emulator did not start: $(tail -5 "$dir/emu.err")"
	port=$(cat "$dir/port")
}

# stop_last: stop the last process started, by its PID.
stop_last() {
	local p=${pids[-1]}
	kill -TERM "$p" 2>/dev/null || true
	wait "$p" 2>/dev/null || true
	unset 'pids[-1]'
}



start_emu "$tmp/e1" --token "admin-$$" --token "other-$$"
cfg=$tmp/e1/kubeconfig
K=(--kubeconfig "$cfg")
admin() { # admin METHOD [BODY]: the faults endpoint
	curl -sf --cacert "$tmp/e1/tls/ca.crt" -X "$1" \
		"https://127.0.0.1:$port/_hb/faults" ${2:+-d "$2"}
}

# ---------------------------------------------------------------- verbs
call "${K[@]}" get configmaps nope
expect "get of a missing object" ENOENT 404
[ "$reason" = NotFound ] && ok "reason NotFound" || bad "reason $reason"

cm one 1 "app: one"
call "${K[@]}" create configmaps "$tmp/one.yaml"
expect "create" OK 201
[ -n "$(jget 'd["metadata"]["uid"]')" ] && ok "create returns the object" || bad "no uid"
call "${K[@]}" create configmaps "$tmp/one.yaml"
expect "create again" EEXIST 409
call "${K[@]}" get configmaps one
expect "get" OK 200
[ "$(jget 'd["data"]["v"]')" = 1 ] && ok "get returns the data" || bad "get data"

for i in 1 2 3 4 5; do
	cm "page-$i" "$i" "page: 'yes'"
	call "${K[@]}" create configmaps "$tmp/page-$i.yaml"
done
call "${K[@]}" list configmaps --selector page=yes --limit 2
expect "list, one page" OK 200
n=$(jget 'len(d["items"])')
cont=$(jget 'd["metadata"].get("continue","")')
[ "$n" = 2 ] && [ -n "$cont" ] && ok "a page of 2 with a continue token" ||
	bad "page: $n items, continue '$cont'"
call "${K[@]}" list configmaps --selector page=yes --limit 2 --continue "$cont"
[ "$(jget '[i["metadata"]["name"] for i in d["items"]]')" = "['page-3', 'page-4']" ] &&
	ok "the next page" || bad "next page: $(cat "$tmp/out" | head -c 300)"
call "${K[@]}" list-all configmaps --selector page=yes --limit 2
expect "list-all" OK 200
[ "$(jget 'len(d["items"])')" = 5 ] && [ -n "$(jget 'd["resourceVersion"]')" ] &&
	ok "list-all: 5 items over 3 pages, and a version" || bad "list-all: $(head -c 300 "$tmp/out")"
call "${K[@]}" list configmaps --fields metadata.name=page-2
[ "$(jget '[i["metadata"]["name"] for i in d["items"]]')" = "['page-2']" ] &&
	ok "field selector" || bad "field selector"

call "${K[@]}" delete configmaps one --propagation Background
expect "delete" OK 200
call "${K[@]}" get configmaps one
expect "get after delete" ENOENT 404
call "${K[@]}" delete configmaps one
expect "delete again" ENOENT 404
call "${K[@]}" delete configmaps one --propagation Sideways
expect "delete with a bad propagation" EINVAL

cm ssa a
call "${K[@]}" apply configmaps "$tmp/ssa.yaml" --manager mgr-a
expect "server-side apply creates" OK
cm ssa b
call "${K[@]}" apply configmaps "$tmp/ssa.yaml" --manager mgr-b
expect "apply of another manager's field" ECONFLICT 409
call "${K[@]}" apply configmaps "$tmp/ssa.yaml" --manager mgr-b --force
expect "apply with force" OK 200
[ "$(jget 'd["data"]["v"]')" = b ] && ok "force took the field" || bad "force"
call "${K[@]}" apply configmaps "$tmp/ssa.yaml"
expect "apply without a field manager" EINVAL

# An MPIJob the operator leaves alone (managedBy), for the status verbs.
cat >"$tmp/job.yaml" <<'EOF'
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata:
  name: gw-job
spec:
  slotsPerWorker: 1
  runPolicy: {managedBy: hpcbridge.io/gateway}
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template: {spec: {containers: [{name: l, image: x, command: [/bin/true]}]}}
    Worker:
      replicas: 1
      template: {spec: {containers: [{name: w, image: x}]}}
EOF
call "${K[@]}" create mpijobs "$tmp/job.yaml"
expect "create an MPIJob" OK 201
cat >"$tmp/status.json" <<'EOF'
{"status": {"conditions": [{"type": "Created", "status": "True",
 "reason": "MPIJobCreated", "lastTransitionTime": "2024-01-01T00:00:00Z"}]}}
EOF
call "${K[@]}" patch-status mpijobs gw-job "$tmp/status.json"
expect "merge patch of status" OK 200
call "${K[@]}" get mpijobs gw-job
[ "$(jget 'd["status"]["conditions"][0]["reason"]')" = MPIJobCreated ] &&
	ok "the status is there" || bad "status: $(head -c 300 "$tmp/out")"
cat >"$tmp/apply-status.yaml" <<'EOF'
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: gw-job}
status:
  conditions:
  - {type: Running, status: "True", reason: MPIJobRunning,
     lastTransitionTime: "2024-01-01T00:00:01Z"}
EOF
call "${K[@]}" apply mpijobs "$tmp/apply-status.yaml" --manager hpcbridge-gw --status --force
expect "apply to the status subresource" OK 200
[ "$(jget 'd["status"]["conditions"][-1]["type"]')" = Running ] &&
	ok "applied status" || bad "applied status: $(head -c 300 "$tmp/out")"
call "${K[@]}" patch-status mpijobs missing "$tmp/status.json"
expect "patch status of a missing object" ENOENT 404

# A job the emulated operator runs: its launcher's log, and its events.
cat >"$tmp/run.yaml" <<'EOF'
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata:
  name: run-job
  annotations:
    kubemu.hpcbridge.io/run-ms: "6000"
    kubemu.hpcbridge.io/log: "hello from the launcher\nsecond line\n"
spec:
  slotsPerWorker: 1
  runPolicy: {cleanPodPolicy: Running}
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template: {spec: {containers: [{name: launcher, image: x, command: [/bin/true]}]}}
    Worker:
      replicas: 1
      template: {spec: {containers: [{name: worker, image: x}]}}
EOF
call "${K[@]}" create mpijobs "$tmp/run.yaml"
expect "create a running MPIJob" OK 201
launcher=
for _ in $(seq 50); do
	call "${K[@]}" list pods --selector training.kubeflow.org/job-name=run-job,training.kubeflow.org/job-role=launcher
	launcher=$(jget '(d["items"] or [{"metadata":{"name":""}}])[0]["metadata"]["name"]')
	[ -n "$launcher" ] && break
	sleep 0.1
done
[ -n "$launcher" ] || die "no launcher pod"
phase=
for _ in $(seq 100); do
	call "${K[@]}" get pods "$launcher"
	phase=$(jget 'd.get("status",{}).get("phase")')
	[ "$phase" = Pending ] || break
	sleep 0.1
done
[ "$phase" = Running ] ||
	bad "the launcher was $phase, not Running, before the follow"
call "${K[@]}" follow "$launcher" --follow-timeout-ms 20000
expect "follow the launcher's log to its end" OK 200
grep -q "second line" "$tmp/out" && ok "the followed log" || bad "followed log: $(cat "$tmp/out")"
fms=$ms
call "${K[@]}" get pods "$launcher"
phase=$(jget 'd.get("status",{}).get("phase")')
[ "$phase" = Succeeded ] && [ "${fms:-0}" -ge 300 ] &&
	ok "follow waited for the end (${fms} ms; then $phase)" ||
	bad "follow returned in ${fms} ms with the launcher $phase"
call "${K[@]}" log "$launcher"
expect "log" OK 200
[ "$(head -1 "$tmp/out")" = "hello from the launcher" ] && ok "log text" || bad "log: $(cat "$tmp/out")"
call "${K[@]}" log "$launcher" --limit 5
[ "$(cat "$tmp/out")" = hello ] && ok "log limited to 5 bytes" || bad "limited log: $(cat "$tmp/out")"
call "${K[@]}" log "$launcher" --container nope
expect "log of a missing container" EINVAL 400
call "${K[@]}" events run-job
expect "events" OK 200
[ "$(jget 'len(d["items"]) > 0 and all(i["involvedObject"]["name"] == "run-job" for i in d["items"])')" = True ] &&
	ok "events about the job: $(jget 'sorted(set(i["reason"] for i in d["items"]))')" ||
	bad "events: $(head -c 300 "$tmp/out")"

# --------------------------------------------------------------- faults
admin DELETE >/dev/null
cm retried 1
admin POST '{"error_500": 2, "error_429": 1, "retry_after": 1, "path": "/configmaps", "method": "POST"}' >/dev/null
call "${K[@]}" create configmaps "$tmp/retried.yaml"
expect "create through two 500s and a 429" OK 201
[ "$attempts" = 4 ] && ok "4 attempts" || bad "attempts $attempts, want 4"
[ "$ms" -ge 1000 ] && ok "Retry-After honoured (${ms} ms)" || bad "Retry-After: ${ms} ms"
st=$(admin GET)
grep -q '"injected_500":2' <<<"$st" && grep -q '"injected_429":1' <<<"$st" &&
	ok "the emulator injected 2 and 1" || bad "faults: $st"
call "${K[@]}" list configmaps --fields metadata.name=retried
[ "$(jget 'len(d["items"])')" = 1 ] && ok "one object created" || bad "objects: $(jget 'len(d["items"])')"
admin DELETE >/dev/null

cm spent 1
admin POST '{"error_500": 10, "path": "/configmaps", "method": "POST"}' >/dev/null
call "${K[@]}" --retries 2 --backoff-ms 50 create configmaps "$tmp/spent.yaml"
expect "500s past the retries" EUNAVAIL 500
[ "$attempts" = 3 ] && ok "3 attempts" || bad "attempts $attempts, want 3"
admin DELETE >/dev/null

admin POST '{"error_429": 1, "retry_after": 30, "path": "/configmaps/page-1"}' >/dev/null
call "${K[@]}" --timeout-ms 2000 get configmaps page-1
expect "a Retry-After beyond the deadline is not waited for" EUNAVAIL 429
[ "$ms" -lt 1500 ] && ok "gave up at once (${ms} ms)" || bad "waited ${ms} ms"
admin DELETE >/dev/null

admin POST '{"latency_ms": 2000, "path": "/configmaps/page-1"}' >/dev/null
call "${K[@]}" --timeout-ms 500 get configmaps page-1
expect "latency past the timeout" ETIMEDOUT
[ "$ms" -lt 1500 ] && ok "timed out in ${ms} ms" || bad "timeout took ${ms} ms"
admin DELETE >/dev/null

admin POST '{"refuse_ms": 1500}' >/dev/null || true
sleep 0.3
call "${K[@]}" --retries 10 --backoff-ms 200 --backoff-cap-ms 500 get configmaps page-1
expect "refused connections, then back" OK 200
[ "$attempts" -gt 1 ] && ok "retried through the refusals ($attempts attempts)" ||
	bad "attempts $attempts"
for _ in $(seq 50); do admin GET >/dev/null 2>&1 && break; sleep 0.1; done

# The reflector: a dropped watch, then a 410 on resume.  Its backoff
# (2-4 s) leaves the changes below to happen while it is away.
"$kc" "${K[@]}" --backoff-ms 4000 --ns default reflect configmaps \
	--selector grp=w --poll-ms 100 >"$tmp/refl.out" 2>"$tmp/refl.err" &
rpid=$!
pids+=($rpid)
wait_lines() { # wait_lines PATTERN COUNT
	for _ in $(seq 100); do
		[ "$(grep -c "$1" "$tmp/refl.out" || true)" -ge "$2" ] && return 0
		sleep 0.1
	done
	return 1
}
wait_lines '^BOOKMARK' 1 || bad "the reflector did not list"
cm w1 1 "grp: w"
cm w2 1 "grp: w"
call "${K[@]}" create configmaps "$tmp/w1.yaml"
call "${K[@]}" create configmaps "$tmp/w2.yaml"
wait_lines '^ADDED' 2 || bad "the reflector missed the creates"
admin POST '{"drop_watches": true}' >/dev/null
cm w3 1 "grp: w"
call "${K[@]}" create configmaps "$tmp/w3.yaml"
cm w1 2 "grp: w"
call "${K[@]}" apply configmaps "$tmp/w1.yaml" --manager t --force
call "${K[@]}" delete configmaps w2
wait_lines '^DELETED default/w2' 1 || bad "no DELETED w2 after the drop"
grep -q "watch resumed from version" "$tmp/refl.err" && ok "the reflector resumed" ||
	bad "no resume: $(tail -3 "$tmp/refl.err")"
admin POST '{"gone_next_watch": 1, "drop_watches": true}' >/dev/null
call "${K[@]}" delete configmaps w3
cm w1 3 "grp: w"
call "${K[@]}" apply configmaps "$tmp/w1.yaml" --manager t --force
cm w4 1 "grp: w"
call "${K[@]}" create configmaps "$tmp/w4.yaml"
wait_lines '^BOOKMARK' 2 || bad "no relist after the 410"
kill -TERM "$rpid"
wait "$rpid" && ok "the reflector stops on request" || bad "reflector exit $?"
unset 'pids[-1]'
events=$(grep -v '^BOOKMARK' "$tmp/refl.out" | awk '{print $1, $2}')
want="ADDED default/w1
ADDED default/w2
ADDED default/w3
MODIFIED default/w1
DELETED default/w2
MODIFIED default/w1
ADDED default/w4
DELETED default/w3"
[ "$events" = "$want" ] && ok "every change once, in order" ||
	bad "reflector events:
$(cat "$tmp/refl.out")"
grep -q '^DELETED default/w3 .* synth$' "$tmp/refl.out" &&
	ok "DELETED made up for what vanished during the 410" ||
	bad "w3's deletion was not synthesised: $(cat "$tmp/refl.out")"
grep -q 'is gone (410), listing again' "$tmp/refl.err" && ok "410 made it list again" ||
	bad "no 410 relist: $(tail -5 "$tmp/refl.err")"
[ "$(grep -c 'listed at version' "$tmp/refl.err")" = 2 ] && ok "two lists (start, 410)" ||
	bad "lists: $(grep -c 'listed at version' "$tmp/refl.err")"
st=$(admin GET)
grep -q '"injected_gone":1' <<<"$st" && ok "the 410 was injected" || bad "faults: $st"
cat "$tmp/refl.err" >>"$tmp/all.err"

# ----------------------------------------------------------- kubeconfig
call --kubeconfig "$tmp/missing.yaml:$cfg" get configmaps page-1
expect "a list of files with a missing one" OK 200
call --kubeconfig "$tmp/missing.yaml" get configmaps page-1
expect "no file at all" ENOENT
KUBECONFIG=$cfg call get configmaps page-1
expect "\$KUBECONFIG" OK 200

ca_b64=$(base64 -w0 <"$tmp/e1/tls/ca.crt")
mkdir -p "$tmp/kc/sub"
cp "$tmp/e1/tls/ca.crt" "$tmp/kc/sub/ca.crt"
printf 'admin-%s\n' "$$" >"$tmp/kc/sub/token"
# kubeconfig FILE USER-YAML [CLUSTER-EXTRA]: a kubeconfig for the emulator
kubeconfig() {
	cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: emu
  cluster:
    server: https://127.0.0.1:$port
${3:-    certificate-authority-data: $ca_b64}
users:
- name: u
  user:
$2
contexts:
- name: c
  context: {cluster: emu, user: u, namespace: default}
current-context: c
EOF
}
kubeconfig "$tmp/kc/rel.yaml" "    tokenFile: sub/token" \
	"    certificate-authority: sub/ca.crt"
call --kubeconfig "$tmp/kc/rel.yaml" get configmaps page-1
expect "relative certificate-authority and tokenFile" OK 200

# A rotated token the mtime does not show: the 401 makes it re-read.
printf 'bogus-%s' "$$" >"$tmp/kc/sub/rot"
kubeconfig "$tmp/kc/rot.yaml" "    tokenFile: sub/rot"
call --kubeconfig "$tmp/kc/rot.yaml" --rewrite-keep-mtime "$tmp/kc/sub/rot" "admin-$$" get configmaps page-1
expect "a token re-read after a 401" OK 200
[ "$attempts" = 2 ] && ok "401, re-read, then 200 (2 attempts)" || bad "attempts $attempts"
# A rotation with a new mtime is seen without a 401.
printf 'bogus-%s' "$$" >"$tmp/kc/sub/rot"
call --kubeconfig "$tmp/kc/rot.yaml" get configmaps page-1
expect "a wrong token" EPERM 401
[ "$attempts" = 2 ] && ok "401 after one re-read (2 attempts)" || bad "attempts $attempts"

kubeconfig "$tmp/kc/bad-token.yaml" "    token: wrong"
call --kubeconfig "$tmp/kc/bad-token.yaml" get configmaps page-1
expect "a static wrong token" EPERM 401
[ "$attempts" = 1 ] && ok "not retried" || bad "attempts $attempts"
[ "$reason" = Unauthorized ] && ok "reason Unauthorized" || bad "reason $reason"

# Merging: the first file to name a user wins.
kubeconfig "$tmp/kc/first.yaml" "    token: wrong"
call --kubeconfig "$tmp/kc/first.yaml:$tmp/kc/rel.yaml" get configmaps page-1
expect "the first file's user wins" EPERM 401
call --kubeconfig "$tmp/kc/rel.yaml:$tmp/kc/first.yaml" get configmaps page-1
expect "the first file's user wins (other order)" OK 200

# Exec credential plugins.
cat >"$tmp/kc/sub/plugin.sh" <<EOF
#!/bin/sh
echo run >>"\$COUNT_FILE"
case "\$KUBERNETES_EXEC_INFO" in
*'"interactive":false'*) ;;
*) echo "no KUBERNETES_EXEC_INFO" >&2; exit 3 ;;
esac
exp=\$(date -u -d "\$EXPIRES" +%Y-%m-%dT%H:%M:%SZ)
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s","expirationTimestamp":"%s"}}\n' "\$1" "\$exp"
EOF
chmod +x "$tmp/kc/sub/plugin.sh"
plugin_user() { # plugin_user TOKEN EXPIRES COUNT_FILE
	printf '    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: ./sub/plugin.sh\n      args: [%s]\n      interactiveMode: Never\n      env:\n      - {name: EXPIRES, value: "%s"}\n      - {name: COUNT_FILE, value: %s}\n' "$1" "$2" "$3"
}
kubeconfig "$tmp/kc/exec.yaml" "$(plugin_user "admin-$$" "+1 hour" "$tmp/runs1")"
call --kubeconfig "$tmp/kc/exec.yaml" --repeat 3 get configmaps page-1
expect "an exec plugin's token" OK 200
[ "$(wc -l <"$tmp/runs1")" = 1 ] && ok "the token is cached until it expires (1 run for 3 calls)" ||
	bad "plugin runs: $(wc -l <"$tmp/runs1")"
kubeconfig "$tmp/kc/exec2.yaml" "$(plugin_user "admin-$$" "-1 minute" "$tmp/runs2")"
call --kubeconfig "$tmp/kc/exec2.yaml" --repeat 3 get configmaps page-1
expect "an exec token that expires at once" OK 200
[ "$(wc -l <"$tmp/runs2")" = 3 ] && ok "an expired token is asked again (3 runs)" ||
	bad "plugin runs: $(wc -l <"$tmp/runs2")"
kubeconfig "$tmp/kc/exec3.yaml" "$(plugin_user "wrong" "+1 hour" "$tmp/runs3")"
call --kubeconfig "$tmp/kc/exec3.yaml" get configmaps page-1
expect "an exec plugin's wrong token" EPERM 401
[ "$(wc -l <"$tmp/runs3")" = 2 ] && ok "a 401 runs the plugin again, once" ||
	bad "plugin runs: $(wc -l <"$tmp/runs3")"
kubeconfig "$tmp/kc/exec4.yaml" "$(plugin_user "x" "+1 hour" "$tmp/runs4" | sed 's/plugin.sh/nothere.sh/')"
call --kubeconfig "$tmp/kc/exec4.yaml" get configmaps page-1
expect "a missing exec plugin" ENOENT
grep -q 'users\[0\].user.exec' "$tmp/err" && ok "the error names the field" || bad "$(cat "$tmp/err")"

# TLS.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	-subj /CN=other-ca -keyout "$tmp/other.key" -out "$tmp/other.crt" \
	-days 1 2>/dev/null
kubeconfig "$tmp/kc/wrong-ca.yaml" "    token: admin-$$" \
	"    certificate-authority-data: $(base64 -w0 <"$tmp/other.crt")"
call --kubeconfig "$tmp/kc/wrong-ca.yaml" get configmaps page-1
expect "another CA" EUNAVAIL
[ "$attempts" = 1 ] && ok "a failed verification is not retried" || bad "attempts $attempts"
kubeconfig "$tmp/kc/no-ca.yaml" "    token: admin-$$" "    {}"
sed -i '/^    {}$/d' "$tmp/kc/no-ca.yaml"
call --kubeconfig "$tmp/kc/no-ca.yaml" get configmaps page-1
expect "no CA: the system's, which do not know the emulator" EUNAVAIL
kubeconfig "$tmp/kc/insecure.yaml" "    token: admin-$$" \
	"    insecure-skip-tls-verify: true"
call --kubeconfig "$tmp/kc/insecure.yaml" get configmaps page-1
expect "insecure-skip-tls-verify" OK 200
kubeconfig "$tmp/kc/tsn.yaml" "    token: admin-$$" \
	"    certificate-authority-data: $ca_b64
    tls-server-name: localhost"
call --kubeconfig "$tmp/kc/tsn.yaml" get configmaps page-1
expect "tls-server-name (a name the certificate has)" OK 200
kubeconfig "$tmp/kc/tsn2.yaml" "    token: admin-$$" \
	"    certificate-authority-data: $ca_b64
    tls-server-name: elsewhere.example"
call --kubeconfig "$tmp/kc/tsn2.yaml" get configmaps page-1
expect "tls-server-name (a name it lacks)" EUNAVAIL

# Client certificates, against a server that demands one signed by the
# emulator's CA (openssl s_server -www answers HTML: EPROTO means the
# handshake went through).
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	-subj /CN=hb-client -keyout "$tmp/client.key" -out "$tmp/client.csr" 2>/dev/null
openssl x509 -req -in "$tmp/client.csr" -CA "$tmp/e1/tls/ca.crt" \
	-CAkey "$tmp/e1/tls/ca.key" -CAcreateserial -days 1 \
	-out "$tmp/client.crt" 2>/dev/null
# Port 0, and the port read from its "ACCEPT 127.0.0.1:PORT" line: a port
# picked free here and bound by s_server later could be taken meanwhile
# by a test running at the same time.
openssl s_server -accept 127.0.0.1:0 -cert "$tmp/e1/tls/server.crt" \
	-key "$tmp/e1/tls/server.key" -CAfile "$tmp/e1/tls/ca.crt" \
	-Verify 1 -verify_return_error -www \
	</dev/null >"$tmp/s_server.out" 2>&1 &
pids+=($!)
sport=
for _ in $(seq 50); do
	sport=$(sed -n 's/^ACCEPT 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$tmp/s_server.out")
	[ -n "$sport" ] && break
	sleep 0.1
done
[ -n "$sport" ] || die "openssl s_server did not say its port: $(cat "$tmp/s_server.out")"
certcfg() { # certcfg FILE USER-YAML
	kubeconfig "$1" "$2"
	sed -i "s|https://127.0.0.1:$port|https://127.0.0.1:$sport|" "$1"
}
certcfg "$tmp/kc/cert-data.yaml" "    client-certificate-data: $(base64 -w0 <"$tmp/client.crt")
    client-key-data: $(base64 -w0 <"$tmp/client.key")"
call --kubeconfig "$tmp/kc/cert-data.yaml" --retries -1 get configmaps x
expect "client certificate from -data: the handshake passes" EPROTO 200
cp "$tmp/client.crt" "$tmp/client.key" "$tmp/kc/sub/"
certcfg "$tmp/kc/cert-file.yaml" "    client-certificate: sub/client.crt
    client-key: sub/client.key"
call --kubeconfig "$tmp/kc/cert-file.yaml" --retries -1 get configmaps x
expect "client certificate from files" EPROTO 200
certcfg "$tmp/kc/cert-none.yaml" "    token: x"
call --kubeconfig "$tmp/kc/cert-none.yaml" --retries -1 get configmaps x
expect "no client certificate: refused" EUNAVAIL
certcfg "$tmp/kc/cert-half.yaml" "    client-certificate: sub/client.crt"
call --kubeconfig "$tmp/kc/cert-half.yaml" get configmaps x
expect "a certificate without its key" EINVAL
grep -q 'users\[0\].user.client-key' "$tmp/err" && ok "the error names client-key" || bad "$(cat "$tmp/err")"

# In-cluster, pointed at the emulator.
mkdir -p "$tmp/sa"
cp "$tmp/e1/tls/ca.crt" "$tmp/sa/ca.crt"
printf 'admin-%s\n' "$$" >"$tmp/sa/token"
printf 'sa-ns\n' >"$tmp/sa/namespace"
KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT=$port \
	call --incluster "$tmp/sa" create configmaps "$tmp/page-1.yaml"
expect "in-cluster configuration" OK 201
[ "$(jget 'd["metadata"]["namespace"]')" = sa-ns ] && ok "the service account's namespace" ||
	bad "namespace $(jget 'd["metadata"]["namespace"]')"
call --incluster "$tmp/sa" get configmaps page-1
expect "in-cluster without the environment" ENOENT

stop_last # s_server

# ------------------------------------ a token limited to one namespace
start_emu "$tmp/e2" --token "team-$$:team-a"
K2=(--kubeconfig "$tmp/e2/kubeconfig")
call "${K2[@]}" create configmaps "$tmp/page-1.yaml"
expect "create in the token's namespace" OK 201
[ "$(jget 'd["metadata"]["namespace"]')" = team-a ] && ok "the kubeconfig's namespace" ||
	bad "namespace $(jget 'd["metadata"]["namespace"]')"
call "${K2[@]}" --ns default get configmaps page-1
expect "another namespace" EPERM 403
[ "$reason" = Forbidden ] && ok "reason Forbidden" || bad "reason $reason"
call "${K2[@]}" reflect configmaps --all-namespaces --for-ms 5000
expect "a reflector the server forbids gives up" EPERM 403
stop_last

if grep -q "ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error:" "$tmp/all.err"; then
	grep -B2 -A20 "ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error:" "$tmp/all.err" | head -60
	bad "the sanitizers reported errors"
fi
if [ "$fails" != 0 ]; then
	echo "--- emulator log (tail)"
	tail -20 "$tmp/e1/emu.err"
	die "$fails checks failed"
fi
echo "all kube client checks passed"
