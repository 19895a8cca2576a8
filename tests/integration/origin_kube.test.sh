#!/usr/bin/env bash
# origin_kube.test.sh - MPIJobs created by a Kubernetes user with
# spec.runPolicy.managedBy: hpcbridge.io/gateway run on the real Slurm
# (the sandbox: hb-kubemu, whose emulated operator leaves them alone, and
# hpcbridged with remote.backend kubernetes).  Read and written with
# python3-kubernetes:
#
#   * a managed MPIJob labelled hpcbridge.io/user=USER, a user that
#     origin.namespaces grants to its namespace, becomes one Slurm job
#     (run as USER) (tagged in its AdminComment, and in `hpcbridge jobs --all` with
#     target slurm); its status goes Running -> Succeeded with startTime
#     and completionTime and the Launcher's replica counts; its output is
#     in the working directory on the Slurm side;
#   * a failing launcher command ends Failed, the exit code in the message;
#   * without the user label (MissingUser), with root (SystemUser, though
#     the namespace lists it: below origin.min_uid), or with a user the
#     namespace does not list, known or not (UserNotGranted), it ends
#     Failed with the reason, and no Slurm job;
#   * deleting a running one cancels its Slurm job (CANCELLED);
#   * hpcbridged killed while one runs and restarted: still exactly one
#     Slurm job, and the status ends Succeeded;
#   * an MPIJob without managedBy is not taken;
#   * what an MPIJob asks of Slurm through hpcbridge.io/ annotations
#     reaches its Slurm job (scontrol show job -o): a QoS made for the
#     test, a constraint (a feature of the node), whole nodes, an array
#     and a start time; one asking what Slurm cannot take (PBS -k oe:
#     output kept on the execution host) ends Failed, InvalidSpec, the
#     field named in the message, and no Slurm job.
#
# usage: origin_kube.test.sh BUILD_DIR SRC_DIR
set -euo pipefail

build=$(cd "${1:?BUILD_DIR}" && pwd)
src=$(cd "${2:?SRC_DIR}" && pwd)
tmp=$(mktemp -d /tmp/hb-origin.XXXXXX)
chmod 755 "$tmp"
export HB_SANDBOX_BACKEND=kubernetes
# shellcheck source=lib/sandbox_test.sh
. "$src/tests/integration/lib/sandbox_test.sh"
# shellcheck source=lib/origin.sh
. "$src/tests/integration/lib/origin.sh"
# The user the MPIJobs run as, granted to namespace default (root too, to
# show that the uid floor refuses it all the same), and one not granted.
granted=hbog$$
other=hbon$$
export HB_SANDBOX_ORIGIN_NAMESPACES="{default: [$granted, root]}"
export HB_SLURM_NODE_FEATURES=hbfeat,hbother
sandbox_test_up
trap 'origin_users_del; _sandbox_test_cleanup' EXIT
origin_user "$granted" && origin_user "$other" || die "cannot make users"
ok "sandbox up"
work=$tmp/work
mkdir -p "$work"
chmod 1777 "$work" # the jobs' working directory: theirs to write

# mpijob NAME COMMAND [USER|-] [MANAGED(1|0)] > the manifest (JSON);
# $HB_MPIJOB_ANNOTATIONS (a JSON object), if set, its annotations
mpijob() {
	/usr/bin/python3 - "$@" "$work" <<'EOF'
import json, os, sys
name, cmd, user, managed, work = sys.argv[1:6]
labels = {'hpcbridge.io/account': 'physics'}
if user != '-':
    labels['hpcbridge.io/user'] = user
meta = {'name': name, 'labels': labels}
if os.environ.get('HB_MPIJOB_ANNOTATIONS'):
    meta['annotations'] = json.loads(os.environ['HB_MPIJOB_ANNOTATIONS'])
job = {
    'apiVersion': 'kubeflow.org/v2beta1', 'kind': 'MPIJob',
    'metadata': meta,
    'spec': {
        'slotsPerWorker': 1,
        'runPolicy': {'cleanPodPolicy': 'None'},
        'mpiReplicaSpecs': {
            'Launcher': {'replicas': 1, 'template': {'spec': {
                'containers': [{'name': 'launcher', 'image': 'busybox',
                                'workingDir': work,
                                'command': ['/bin/sh', '-c', cmd]}]}}},
            'Worker': {'replicas': 1, 'template': {'spec': {
                'containers': [{'name': 'worker',
                                'image': 'busybox'}]}}}}}}
if managed == '1':
    job['spec']['runPolicy']['managedBy'] = 'hpcbridge.io/gateway'
print(json.dumps(job))
EOF
}

create() { # NAME COMMAND [USER] [MANAGED]
	mpijob "$1" "$2" "${3:-$granted}" "${4:-1}" >"$tmp/$1.json"
	kube create "$tmp/$1.json" >/dev/null || die "create MPIJob $1"
}

# 1. A managed MPIJob runs on Slurm, Running -> Succeeded.
create hello 'echo "hello from slurm job $SLURM_JOB_ID"; sleep 4; echo bye'
wait_cond hello Running && ok "hello: Running" ||
	bad "hello: not Running: $(kube status hello)"
sid=$(slurm_ids hello)
[ "$(printf '%s\n' "$sid" | grep -c .)" = 1 ] &&
	ok "hello: one Slurm job ($sid)" || bad "hello: Slurm jobs '$sid'"
hb=$(field "$sid" AdminComment | sed -n 's/^hpcbridge:\(hb-[0-9]*\).*/\1/p')
[ -n "$hb" ] && ok "hello: tagged $hb" ||
	bad "hello: AdminComment $(field "$sid" AdminComment)"
[ "$(field "$sid" UserId | cut -d'(' -f1)" = "$granted" ] &&
	ok "hello: runs as the labelled user" ||
	bad "hello: UserId $(field "$sid" UserId)"
[ "$(field "$sid" Account)" = physics ] &&
	ok "hello: the labelled account" ||
	bad "hello: Account $(field "$sid" Account)"
hpcbridge jobs --all 2>&1 | grep -E "^$hb +$granted +slurm " >/dev/null &&
	ok "hello: in hpcbridge jobs, target slurm" ||
	bad "hello: hpcbridge jobs: $(hpcbridge jobs --all 2>&1)"
[ "$(st hello "'startTime' in s and s['replicaStatuses']['Launcher']['active']")" = 1 ] &&
	ok "hello: startTime, Launcher active" ||
	bad "hello: running status $(kube status hello)"
wait_cond hello Succeeded && ok "hello: Succeeded" ||
	bad "hello: not Succeeded: $(kube status hello)"
[ "$(kube phase hello)" = Succeeded ] && ok "hello: last True condition Succeeded" ||
	bad "hello: phase $(kube phase hello)"
[ "$(st hello "bool(s.get('startTime')) and bool(s.get('completionTime')) and s['startTime'] <= s['completionTime']")" = True ] &&
	ok "hello: startTime <= completionTime" ||
	bad "hello: times $(kube status hello)"
[ "$(st hello "s['replicaStatuses']['Launcher']")" = "{'active': 0, 'failed': 0, 'succeeded': 1}" ] &&
	ok "hello: Launcher succeeded 1" || bad "hello: $(kube status hello)"
case $(st hello "cond('Running')") in "False "*) ok "hello: Running False" ;;
*) bad "hello: Running $(st hello "cond('Running')")" ;; esac
[ "$(field "$sid" JobState)" = COMPLETED ] && ok "hello: Slurm COMPLETED" ||
	bad "hello: Slurm $(field "$sid" JobState)"
grep -qx "hello from slurm job $sid" "$work/slurm-$sid.out" 2>/dev/null &&
	grep -qx bye "$work/slurm-$sid.out" &&
	ok "hello: its output on the Slurm side" ||
	bad "hello: output: $(cat "$work/slurm-$sid.out" 2>&1)"

# 2. A failing launcher ends Failed with its exit code.
create failing 'echo about to fail; sleep 1; exit 3'
wait_cond failing Failed && ok "failing: Failed" ||
	bad "failing: $(kube status failing)"
case $(st failing "cond('Failed')") in
*"exit code 3"*) ok "failing: exit code 3 in the message" ;;
*) bad "failing: $(st failing "cond('Failed')")" ;;
esac
sid=$(slurm_ids failing)
[ "$(field "$sid" JobState)" = FAILED ] && ok "failing: Slurm FAILED" ||
	bad "failing: Slurm '$sid' $(field "$sid" JobState)"
[ "$(st failing "s['replicaStatuses']['Launcher']['failed']")" = 1 ] &&
	ok "failing: Launcher failed 1" || bad "failing: $(kube status failing)"

# 3. No user label, an unknown user, root, a user not granted: Failed
# with the reason, no Slurm job.
create nouser 'echo never' -
create nobody-here 'echo never' no-such-user-hb
create rooted 'echo never' root
create stranger 'echo never' "$other"
for n in nouser:MissingUser nobody-here:UserNotGranted rooted:SystemUser \
	stranger:UserNotGranted; do
	name=${n%%:*} reason=${n#*:}
	if wait_cond "$name" Failed; then
		case $(st "$name" "cond('Failed')") in
		"True $reason "*) ok "$name: Failed, reason $reason" ;;
		*) bad "$name: $(st "$name" "cond('Failed')")" ;;
		esac
	else
		bad "$name: not Failed: $(kube status "$name")"
	fi
	[ -z "$(slurm_ids "$name")" ] && ok "$name: no Slurm job" ||
		bad "$name: Slurm job $(slurm_ids "$name")"
done

# 4. An MPIJob without managedBy is not ours.
create unmanaged 'echo operator' "$granted" 0
sleep 2
[ -z "$(slurm_ids unmanaged)" ] && ok "unmanaged: no Slurm job" ||
	bad "unmanaged: Slurm job $(slurm_ids unmanaged)"
hpcbridge jobs --all 2>&1 | grep -q " unmanaged$" &&
	bad "unmanaged: in the gateway's table" || ok "unmanaged: not recorded"

# 5. Deleting a running one cancels its Slurm job.
create doomed 'echo started; sleep 120; echo not reached'
wait_cond doomed Running || bad "doomed: not Running: $(kube status doomed)"
sid=$(slurm_ids doomed)
kube delete doomed || bad "doomed: delete failed"
wait_slurm "$sid" CANCELLED &&
	ok "doomed: deleting the MPIJob cancelled Slurm job $sid" ||
	bad "doomed: Slurm job '$sid' $state"

# 6. hpcbridged killed while a job runs, and restarted.
create survivor 'echo up; sleep 6; echo survived'
wait_cond survivor Running || bad "survivor: not Running"
dpid=$(daemon_pid)
kill -KILL "$dpid"
sleep 1
bash "$src/scripts/sandbox.sh" up "$box" "$build" >/dev/null 2>"$tmp/up2.err" ||
	die "sandbox up after the kill: $(cat "$tmp/up2.err")"
wait_cond survivor Succeeded && ok "survivor: Succeeded after the restart" ||
	bad "survivor: $(kube status survivor)"
sleep 2 # a second list after the restart must not submit again
n=$(slurm_ids survivor | grep -c . || true)
[ "$n" = 1 ] && ok "survivor: exactly one Slurm job" ||
	bad "survivor: $n Slurm jobs"
n=$(slurm_ids hello | grep -c . || true)
[ "$n" = 1 ] && ok "hello: still one Slurm job after the restart" ||
	bad "hello: $n Slurm jobs after the restart"
[ "$(kube phase hello)" = Succeeded ] && ok "hello: still Succeeded" ||
	bad "hello: phase $(kube phase hello) after the restart"

# 7. What the MPIJob asks of Slurm is what Slurm is asked.  A QoS of
# its own (slurmctld hears of it from slurmdbd), the node's feature,
# whole nodes, an array of three, and a start in an hour (so that the
# array stays one pending record).
timeout 10 sacctmgr -i add qos hbfast >/dev/null 2>&1 ||
	bad "sacctmgr could not add QoS hbfast"
for _ in $(seq 50); do
	scontrol show assoc_mgr flags=qos 2>/dev/null | grep -q '^QOS=hbfast(' &&
		break
	sleep 0.2
done
export HB_MPIJOB_ANNOTATIONS='{"hpcbridge.io/qos": "hbfast",
  "hpcbridge.io/constraint": "hbfeat", "hpcbridge.io/exclusive": "true",
  "hpcbridge.io/array": "0-2", "hpcbridge.io/begin": "now+1hour"}'
create asks 'echo task $SLURM_ARRAY_TASK_ID'
unset HB_MPIJOB_ANNOTATIONS
sid=
for _ in $(seq 150); do
	sid=$(slurm_ids asks)
	[ -n "$sid" ] && break
	sleep 0.2
done
line=$(scontrol show job -o "$sid" 2>/dev/null || true)
[ -n "$sid" ] && [ "$(printf '%s\n' "$line" | grep -c .)" = 1 ] &&
	ok "asks: one Slurm job ($sid)" ||
	bad "asks: Slurm jobs '$sid': $(kube status asks)"
for want in QOS=hbfast Features=hbfeat OverSubscribe=NO ArrayJobId=$sid \
	ArrayTaskId=0-2 JobState=PENDING; do
	case " $line " in
	*" $want "*) ok "asks: $want" ;;
	*) bad "asks: no $want in: $line" ;;
	esac
done
start=$(printf '%s\n' "$line" | tr ' ' '\n' | sed -n 's/^EligibleTime=//p')
start_s=$(date -d "$start" +%s 2>/dev/null || echo 0)
[ "$start_s" -ge $(($(date +%s) + 3000)) ] &&
	ok "asks: eligible in an hour ($start)" || bad "asks: EligibleTime '$start'"
kube delete asks || bad "asks: delete failed"
wait_slurm "$sid" CANCELLED &&
	ok "asks: deleted, Slurm job $sid cancelled" ||
	bad "asks: Slurm job '$sid' $state"

# 8. What Slurm cannot take refuses the job, the field named.
export HB_MPIJOB_ANNOTATIONS='{"hpcbridge.io/keep": "oe"}'
create keeps 'echo never'
unset HB_MPIJOB_ANNOTATIONS
if wait_cond keeps Failed; then
	case $(st keeps "cond('Failed')") in
	"True InvalidSpec "*"field keep:"*"cannot be submitted to Slurm"*)
		ok "keeps: Failed, InvalidSpec, field keep named" ;;
	*) bad "keeps: $(st keeps "cond('Failed')")" ;;
	esac
else
	bad "keeps: not Failed: $(kube status keeps)"
fi
[ -z "$(slurm_ids keeps)" ] && ok "keeps: no Slurm job" ||
	bad "keeps: Slurm job $(slurm_ids keeps)"

sandbox_test_end
echo "all Kubernetes-origin checks passed"
