#!/usr/bin/env bash
# origin_identity.test.sh - issue 17, "a Kubernetes-origin MPIJob picks its
# Slurm user from the hpcbridge.io/user label alone".
#
# Anyone who may create an MPIJob in a namespace writes its labels.  Before
# the fix the label named the Slurm user outright: `root` ran a Slurm job
# as root.  Now origin.namespaces grants each namespace the users it may
# act for, and origin.min_uid (1000) refuses root and system users even
# when granted.
#
# A real Slurm (tests/integration/lib/slurm.sh), the Kubernetes API
# emulator (hb-kubemu) and a real hpcbridged watching its namespace
# default, with origin.namespaces {default: [GRANTED, root, SYSUSER]}.
# Managed MPIJobs whose launcher writes `id -u` to a file of its own:
#   * labelled root: refused (SystemUser in .status), no Slurm job, no file;
#   * labelled SYSUSER (a system user, uid < 1000): refused (SystemUser);
#   * labelled OTHER (uid >= 1000, not granted): refused (UserNotGranted);
#   * labelled GRANTED: runs on Slurm as GRANTED (its uid in the file, its
#     name in Slurm), Succeeded;
#   * after a reload (SIGHUP) that maps only namespace team-a: labelled
#     GRANTED in namespace default: refused (NamespaceNotMapped).
# Root's ping is answered in time throughout.
#
# usage: origin_identity.test.sh BUILD_DIR SOURCE_DIR
build=$(cd "${1:?usage: origin_identity.test.sh BUILD_DIR SOURCE_DIR}" &&
	pwd)
src=$(cd "${2:?usage: origin_identity.test.sh BUILD_DIR SOURCE_DIR}" &&
	pwd)
# shellcheck source=lib.sh
. "$src/tests/security/lib.sh"
# shellcheck source=../integration/lib/slurm.sh
. "$src/tests/integration/lib/slurm.sh"
# shellcheck source=../integration/lib/origin.sh
. "$src/tests/integration/lib/origin.sh"

sec_init
_identity_cleanup() {
	slurm_down "$tmp/slurm" >/dev/null 2>&1 || true
	origin_users_del
	_sec_cleanup
}
trap _identity_cleanup EXIT
export LSAN_OPTIONS="suppressions=$src/tests/integration/lsan.supp:print_suppressions=0"

# The users: $user (lib.sh's attacker) is a system user.
granted=hbig$$
other=hbin$$
origin_user "$granted" && origin_user "$other" || {
	bad "cannot make the users"
	sec_end
}
ok "users: granted $granted ($(id -u "$granted")), not granted $other" \
	"($(id -u "$other")), system user $user ($uid)"
work=$tmp/work
mkdir -p "$work"
chmod 1777 "$work"

export HB_SLURM_FIX_HOSTS=${HB_SLURM_FIX_HOSTS:-1}
slurm_up "$tmp/slurm" >"$tmp/slurm-up.log" 2>&1 || {
	cat "$tmp/slurm-up.log"
	bad "Slurm did not come up"
	sec_end
}

# The emulated cluster (as scripts/sandbox.sh starts it, without its
# operator running pods: managed MPIJobs are the gateway's).
mkdir -p "$tmp/kube"
"$build/bin/hb-kubemu" --listen 127.0.0.1:0 --port-file "$tmp/kube/port" \
	--tls-dir "$tmp/kube/tls" --token "tok$$" \
	--kubeconfig-out "$tmp/kubeconfig" --workdir "$tmp/kube/work" \
	</dev/null >>"$tmp/kube/log" 2>&1 &
pids="$pids $!"
for _ in $(seq 100); do
	[ -s "$tmp/kube/port" ] && break
	sleep 0.1
done
[ -s "$tmp/kube/port" ] || {
	tail -n 20 "$tmp/kube/log"
	bad "hb-kubemu did not come up"
	sec_end
}
export KUBECONFIG=$tmp/kubeconfig

# config NAMESPACES: the daemon's configuration, origin.namespaces set to
# NAMESPACES (a YAML flow mapping).  A build that does not know the
# origin section (before the fix) gets the file without it.
config() {
	cat >"$tmp/hpcbridge.yaml" <<EOF
daemon:
  log_level: info
slurm:
  user: root
remote:
  backend: kubernetes
  kubeconfig: $tmp/kubeconfig
kubernetes:
  namespace: default
placement:
  default_target: slurm
origin:
  namespaces: $1
EOF
	if ! "$hbd" --config "$tmp/hpcbridge.yaml" --check >/dev/null 2>&1; then
		echo "note: this build does not know origin.*: configured without"
		sed -i '/^origin:/,$d' "$tmp/hpcbridge.yaml"
	fi
}
config "{default: [$granted, root, $user]}"
start_daemon "$tmp/hpcbridge.yaml" || {
	bad "the daemon did not start"
	sec_end
}

# create NAME USER: a managed MPIJob labelled USER whose launcher writes
# its uid to $work/NAME.uid.
create() {
	/usr/bin/python3 - "$1" "$2" "$work" >"$tmp/$1.json" <<'EOF'
import json, sys
name, user, work = sys.argv[1:4]
print(json.dumps({
    'apiVersion': 'kubeflow.org/v2beta1', 'kind': 'MPIJob',
    'metadata': {'name': name, 'labels': {'hpcbridge.io/user': user}},
    'spec': {
        'slotsPerWorker': 1,
        'runPolicy': {'cleanPodPolicy': 'None',
                      'managedBy': 'hpcbridge.io/gateway'},
        'mpiReplicaSpecs': {
            'Launcher': {'replicas': 1, 'template': {'spec': {
                'containers': [{'name': 'launcher', 'image': 'busybox',
                                'workingDir': work,
                                'command': ['/bin/sh', '-c',
                                            'id -u >%s/%s.uid' % (work, name)]}]}}},
            'Worker': {'replicas': 1, 'template': {'spec': {
                'containers': [{'name': 'w', 'image': 'busybox'}]}}}}}}))
EOF
	kube create "$tmp/$1.json" >/dev/null 2>"$tmp/$1.err" || {
		bad "create MPIJob $1: $(cat "$tmp/$1.err")"
		return 1
	}
}

# final NAME: wait (60 s) until its Succeeded or Failed condition is True;
# print "Succeeded" or "Failed REASON", or "none".
final() {
	local c
	for _ in $(seq 300); do
		c=$(st "$1" "cond('Failed')")
		case $c in "True "*) echo "Failed $(echo "$c" | cut -d' ' -f2)"; return ;; esac
		c=$(st "$1" "cond('Succeeded')")
		case $c in "True "*) echo Succeeded; return ;; esac
		sleep 0.2
	done
	echo none
}

# refused NAME REASON: Failed with REASON, no Slurm job, nothing ran.
refused() {
	local got
	got=$(final "$1")
	if [ "$got" = "Failed $2" ]; then
		ok "$1: refused, reason $2 in its status"
	else
		bad "$1: '$got', want 'Failed $2':" \
			"$(st "$1" "[c.get('message') for c in s.get('conditions') or [] if c['status'] == 'True'][-1:]")"
	fi
	if [ -z "$(slurm_ids "$1")" ]; then
		ok "$1: no Slurm job"
	else
		bad "$1: Slurm job(s) $(slurm_ids "$1"):" \
			"$(scontrol -o show job "$(slurm_ids "$1" | head -n1)" |
				grep -o 'UserId=[^ ]*')"
	fi
	if [ ! -e "$work/$1.uid" ]; then
		ok "$1: nothing ran"
	else
		bad "$1: its launcher ran as uid $(cat "$work/$1.uid")"
	fi
}

create as-root root
create as-system "$user"
create not-granted "$other"
create granted "$granted"

# The granted one runs, as its user.
got=$(final granted)
[ "$got" = Succeeded ] && ok "granted: Succeeded" ||
	bad "granted: '$got': $(st granted "s.get('conditions')")"
sid=$(slurm_ids granted | head -n1)
if [ -n "$sid" ] && scontrol -o show job "$sid" |
	grep -q "UserId=$granted("; then
	ok "granted: Slurm job $sid is $granted's"
else
	bad "granted: Slurm job '$sid': $(scontrol -o show job "$sid" 2>&1)"
fi
[ "$(cat "$work/granted.uid" 2>/dev/null)" = "$(id -u "$granted")" ] &&
	ok "granted: ran as uid $(id -u "$granted")" ||
	bad "granted: ran as '$(cat "$work/granted.uid" 2>&1)'"

sleep 2 # a job submitted for the others would have run by now
refused as-root SystemUser
refused as-system SystemUser
refused not-granted UserNotGranted

# A namespace that is not mapped (the reload maps only team-a).
config "{team-a: [$granted]}"
kill -HUP "$dpid"
for _ in $(seq 50); do
	grep -q 'configuration reloaded' "$log" && break
	sleep 0.1
done
create unmapped "$granted"
sleep 3
refused unmapped NamespaceNotMapped

ms=$(ping_ms)
[ "$ms" -lt 1000 ] && ok "root's ping answered in $ms ms" ||
	bad "root's ping took $ms ms"
kill -0 "$dpid" 2>/dev/null && ok "the daemon is alive" ||
	bad "the daemon died"
sec_end
