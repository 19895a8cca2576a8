# shellcheck shell=bash
# tests/integration/lib/origin.sh - what the tests of managed MPIJobs
# (Kubernetes-origin jobs) share.  Source it after sandbox_test.sh; then:
#
#   kube ARGS...        lib/kube.py (python3-kubernetes) on the sandbox
#   st NAME EXPR        EXPR evaluated on s, the MPIJob's status;
#                       cond(TYPE) gives the condition's "status reason
#                       message", "" when absent
#   wait_cond NAME TYPE wait (60 s) until condition TYPE is True
#   slurm_ids NAME      the Slurm job ids named NAME (every state Slurm
#                       still remembers; an array's pending record once)
#   daemon_pid          hpcbridged's pid
#   wait_slurm SID STATE [TRIES]  wait (TRIES x 0.2 s, 100 by default)
#                       until Slurm job SID is in STATE; $state gets the
#                       last state seen
#   origin_user NAME    make a user a managed MPIJob may run as (a uid of
#                       1000 or more, as origin.min_uid wants; no home);
#                       origin_users_del deletes those made
#
# The sandbox maps namespace default to the users its MPIJobs may run as
# from HB_SANDBOX_ORIGIN_NAMESPACES (origin.namespaces): set it, with the
# users made, before sandbox_test_up.
origin_users=

origin_user() {
	useradd --no-create-home --shell /usr/sbin/nologin "$1" \
		>/dev/null 2>&1 || return 1
	origin_users="$origin_users $1"
	[ "$(id -u "$1")" -ge 1000 ]
}

origin_users_del() {
	local u
	for u in $origin_users; do
		userdel "$u" >/dev/null 2>&1 || true
	done
	origin_users=
}

kube() { /usr/bin/python3 "$src/tests/integration/lib/kube.py" "$@"; }

st() {
	kube status "$1" | /usr/bin/python3 -c '
import json, sys
s = json.load(sys.stdin)
def cond(t):
    for c in s.get("conditions") or []:
        if c["type"] == t:
            return "%s %s %s" % (c["status"], c.get("reason", ""),
                                 c.get("message", ""))
    return ""
print(eval(sys.argv[1]))' "$2"
}

wait_cond() {
	local i
	for i in $(seq 300); do
		case $(st "$1" "cond('$2')") in "True "*) return 0 ;; esac
		sleep 0.2
	done
	return 1
}

slurm_ids() { # (an array's record has its Array* fields before JobName)
	scontrol -o show job 2>/dev/null |
		sed -n "s/^JobId=\([0-9]*\) \(Array[A-Za-z]*=[^ ]* \)*JobName=$1 .*/\1/p"
}

daemon_pid() { head -c 32 "$box/hpcbridged.pid" | tr -dc 0-9; }

wait_slurm() {
	local i
	state=""
	for i in $(seq "${3:-100}"); do
		state=$(field "$1" JobState)
		[ "$state" = "$2" ] && return 0
		sleep 0.2
	done
	return 1
}
