# shellcheck shell=bash
# tests/integration/lib/sandbox_test.sh - what the tests that run in the
# sandbox (scripts/sandbox.sh) share.  Source it after setting build, src
# and tmp; then:
#
#   ok MSG / bad MSG    report a check (bad counts it in $fails)
#   die MSG             report, show the daemon's log, exit 1
#   sandbox_test_up     bring the sandbox up in $tmp/box ($box), load its
#                       environment (after clearing any inherited Slurm
#                       and sbatch settings, and with a TMPDIR of the
#                       test's own for Open MPI's session directories),
#                       and take it down (by PID) at exit
#   sandbox_test_end    exit 1 with the daemon's log if a check failed
#   field JOB KEY       a field of `scontrol show job JOB`
#   gateway_id JOB      the gateway id (hb-...) JOB's admin comment tags
#   wait_final JOB      wait (up to 2 min) until JOB's state is final;
#                       print it
#   submit SCRIPT       sbatch SCRIPT from $tmp; print the job id
#   submit_user SCRIPT [OPTION...]  sbatch [OPTION...] SCRIPT as the
#                       sandbox's user ($HB_SANDBOX_USER; root never
#                       bursts) from $HB_SANDBOX_WORK, the directory the
#                       cluster mounts; SCRIPT is copied there first
#   preemptor_create    kubectl create the MPIJob "preemptor": priority
#                       high in LocalQueue burst, needing the whole quota
#                       of the sandbox's ClusterQueue, so Kueue preempts
#                       the burst jobs admitted there
#   replace_after SECS  set kubernetes.preempted_replace_after and have
#                       the daemon reload its configuration (SIGHUP)
#   sacct_line JOB      JOB's accounting record once slurmdbd has its end
#                       and its partition (up to 30 s):
#                       "partition|cpus|state|exit code|admin comment"
# shellcheck source=slurm.sh
. "$src/tests/integration/lib/slurm.sh"
box=$tmp/box
fails=0

ok() { printf 'ok: %s\n' "$*"; }
bad() {
	printf 'FAIL: %s\n' "$*"
	fails=$((fails + 1))
}
die() {
	printf 'FAIL: %s\n' "$*"
	tail -n 30 "$box/hpcbridged.log" 2>/dev/null || true
	exit 1
}

_sandbox_test_cleanup() {
	bash "$src/scripts/sandbox.sh" down "$box" >/dev/null 2>&1 || true
	rm -rf "$tmp"
}

sandbox_test_up() {
	trap _sandbox_test_cleanup EXIT
	export HB_SLURM_FIX_HOSTS=${HB_SLURM_FIX_HOSTS:-1}
	slurm_clean_env
	# Open MPI 4 keeps its session directory under TMPDIR, one per user
	# and host, and one mpirun can remove it under another's.
	mkdir -p "$tmp/tmp" && chmod 1777 "$tmp/tmp"
	export TMPDIR=$tmp/tmp
	bash "$src/scripts/sandbox.sh" up "$box" "$build" >"$tmp/env" \
		2>"$tmp/up.err" || die "sandbox up: $(tail -n 20 "$tmp/up.err")"
	# shellcheck disable=SC1090,SC1091
	. "$tmp/env"
}

sandbox_test_end() {
	if [ "$fails" != 0 ]; then
		tail -n 30 "$box/hpcbridged.log"
		exit 1
	fi
}

field() {
	scontrol show job "$1" 2>/dev/null | tr ' ' '\n' |
		sed -n "s/^$2=//p" | head -n 1
}

gateway_id() {
	scontrol show job "$1" |
		sed -n 's/.*AdminComment=hpcbridge:\(hb-[0-9]*\).*/\1/p'
}

wait_final() {
	local id=$1 st i
	for i in $(seq 600); do
		st=$(field "$id" JobState)
		case $st in
		COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY)
			printf '%s\n' "$st"
			return 0
			;;
		esac
		sleep 0.2
	done
	printf 'TIMEOUT-WAITING(%s)\n' "$st"
}

submit() {
	(cd "$tmp" && sbatch --parsable "$1" 2>>"$tmp/sbatch.err") |
		cut -d';' -f1
}

submit_user() {
	local s=$1
	shift
	cp "$s" "$HB_SANDBOX_WORK/" && chmod 644 "$HB_SANDBOX_WORK/${s##*/}"
	(cd "$HB_SANDBOX_WORK" && runuser -u "$HB_SANDBOX_USER" -- \
		sbatch --parsable "$@" "${s##*/}" 2>>"$tmp/sbatch.err") |
		cut -d';' -f1
}

sacct_line() {
	local l i
	for i in $(seq 150); do
		l=$(sacct -n -P -X -j "$1" \
			-o Partition,AllocCPUS,State,ExitCode,AdminComment \
			2>/dev/null | head -n1)
		# the end and the job's fields reach the database apart
		case $l in \|*) ;; *\|COMPLETED\|* | *\|FAILED\|* | *\|CANCELLED*) break ;; esac
		sleep 0.2
	done
	printf '%s\n' "$l"
}

preemptor_create() {
	/usr/bin/kubectl --request-timeout=10s create -f - >/dev/null <<-'EOF'
	{"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
	 "metadata": {"name": "preemptor", "namespace": "default",
	  "labels": {"kueue.x-k8s.io/queue-name": "burst",
	             "kueue.x-k8s.io/priority-class": "high"}},
	 "spec": {"slotsPerWorker": 1, "runPolicy": {"suspend": true},
	  "mpiReplicaSpecs": {
	   "Launcher": {"replicas": 1, "template": {"spec": {
	    "securityContext": {"runAsNonRoot": true, "runAsUser": 1000,
	     "seccompProfile": {"type": "RuntimeDefault"}},
	    "containers": [{"name": "l", "image": "busybox",
	     "command": ["sleep", "120"],
	     "securityContext": {"allowPrivilegeEscalation": false,
	      "capabilities": {"drop": ["ALL"]}},
	     "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}},
	   "Worker": {"replicas": 1, "template": {"spec": {
	    "securityContext": {"runAsNonRoot": true, "runAsUser": 1000,
	     "seccompProfile": {"type": "RuntimeDefault"}},
	    "containers": [{"name": "w", "image": "busybox",
	     "command": ["sleep", "120"],
	     "securityContext": {"allowPrivilegeEscalation": false,
	      "capabilities": {"drop": ["ALL"]}},
	     "resources": {"requests": {"cpu": "3",
	                                "memory": "1Gi"}}}]}}}}}}
	EOF
}

replace_after() {
	local dpid _
	sed -i "s/^  namespace: default\$/&\n  preempted_replace_after: $1/" \
		"$box/hpcbridge.yaml"
	grep -q "preempted_replace_after: $1" "$box/hpcbridge.yaml" ||
		die "cannot set preempted_replace_after"
	dpid=$(head -c 32 "$box/hpcbridged.pid" | tr -dc 0-9)
	kill -HUP "$dpid"
	for _ in $(seq 100); do
		grep -q "configuration reloaded" "$box/hpcbridged.log" &&
			return 0
		sleep 0.2
	done
	die "the daemon did not reload its configuration"
}
