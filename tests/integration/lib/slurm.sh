# shellcheck shell=bash
# tests/integration/lib/slurm.sh - a private, single-host Slurm on loopback.
#
# Source this file, then:
#
#   slurm_up DIR        start munged, slurmctld and one slurmd, all of whose
#                       files live in DIR; wait until the node is idle.
#                       Exports SLURM_CONF and the HB_SLURM_* outputs below.
#   slurm_down DIR      cancel every job, stop slurmd, then slurmctld, then
#                       munged (SIGTERM, then SIGKILL by PID), and SIGKILL any
#                       slurmstepd that slurmd left behind.  Only PIDs this
#                       library recorded are signalled.  Removes nothing.
#   slurm_purge DIR     after slurm_down: remove exactly what slurm_up
#                       created in DIR (and DIR itself if slurm_up made it).
#   slurm_logs DIR      print the tail of every log (used on failure).
#   slurm_env DIR       print `export ...` lines for another shell.
#   slurm_is_up DIR     0 if the controller answers and the node is usable.
#
# Everything is idempotent enough for `trap 'slurm_down "$d"' EXIT`.
# Works as root (munged as the munge user, SlurmUser=root, jobs may run as
# any user).  As another user everything runs as that user, which is enough
# for held jobs and for jobs of that same user.
#
# Inputs (environment variables, all optional):
#   HB_SLURM_CLUSTER        cluster name                      [hbsandbox]
#   HB_SLURM_NODE_PREFIX    node names are PREFIX1..PREFIXN   [hb]
#   HB_SLURM_NODES          node records (only PREFIX1 is real) [4]
#   HB_SLURM_CPUS           CPUs per node record              [64]
#   HB_SLURM_MEM_MB         RealMemory per node record, MB    [512000]
#   HB_SLURM_GPUS           GPUs per node, "type:count ..."   [a100:4 h100:4]
#   HB_SLURM_NODE_FEATURES  Features= of every node record (comma list)
#   HB_SLURM_BURST_OVERSUBSCRIBE  OverSubscribe of `burst`    [FORCE:8]
#   HB_SLURM_PLUGIN_DIR     extra plugin directories (colon-separated),
#                           searched before Slurm's own
#   HB_SLURM_JOB_SUBMIT_PLUGINS   JobSubmitPlugins= value, e.g. hpcbridge
#   HB_SLURM_PLUGSTACK      lines for plugstack.conf (SPANK plugins)
#   HB_SLURM_EXTRA_CONF     lines appended to slurm.conf (later keys win)
#   HB_SLURM_DEBUG          SlurmctldDebug/SlurmdDebug level   [info]
#   HB_SLURM_READY_TIMEOUT  seconds to wait for readiness      [30]
#   HB_SLURM_DETACH         1: start the daemons in their own session, so
#                           they outlive the calling shell and its process
#                           group (for `hpcbridge sandbox up`)    [0]
#   HB_SLURM_FIX_HOSTS      1: allow adding "127.0.1.1 $(hostname)" to
#                           /etc/hosts when the host name does not resolve
#                           to 127.x (only as root; also allowed when CI
#                           is set).  Said on stderr when done.
#
# Outputs (exported by slurm_up):
#   SLURM_CONF, HB_SLURM_DIR, HB_SLURM_NODE (the real node), HB_SLURM_NODES_ALL
#   (hostlist of every record), HB_SLURM_CTLD_PORT, HB_SLURM_SLURMD_PORT,
#   HB_SLURM_MUNGE_SOCKET.
#
# Layout of DIR (all created by slurm_up, listed in DIR/.hbslurm/created):
#   slurm.conf gres.conf plugstack.conf  configuration
#   munge/     key, socket, pid, log, seed (owned by the munge user)
#   state/     StateSaveLocation
#   spool/N/   SlurmdSpoolDir per node
#   log/       slurmctld.log slurmd-N.log and the daemons' stdout/stderr
#   run/       pid files written by the daemons
#   dev/       gpuN -> /dev/null: gres.conf needs a character device per
#              GPU (file-less GPUs are dropped by slurmd 22.05)
#   .hbslurm/  this library's records: pids, created, ports

# ---------------------------------------------------------------- helpers

_hbs_log() { printf 'slurm.sh: %s\n' "$*" >&2; }

_hbs_plugin_dir() {
	local d
	for d in /usr/lib/*/slurm-wlm /usr/lib64/slurm /usr/lib/slurm \
		/usr/local/lib/slurm; do
		if [ -e "$d/auth_munge.so" ]; then
			printf '%s\n' "$d"
			return 0
		fi
	done
	return 1
}

# _hbs_port_free PORT: 0 if nothing listens on 127.0.0.1:PORT (or *:PORT).
_hbs_port_free() {
	local p=$1
	if command -v ss >/dev/null 2>&1; then
		! ss -Htln "sport = :$p" 2>/dev/null | grep -q .
	else
		! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null
	fi
}

# _hbs_pick_ports: prints two free consecutive ports below the ephemeral
# range, so that a port is not taken by an outgoing connection meanwhile.
_hbs_pick_ports() {
	local i base
	for i in $(seq 1 200); do
		base=$((20000 + (RANDOM % 6000) * 2))
		if _hbs_port_free "$base" && _hbs_port_free $((base + 1)); then
			printf '%s %s\n' "$base" $((base + 1))
			return 0
		fi
	done
	return 1
}

# _hbs_bin NAME: the real file of the program NAME (Debian installs
# /usr/sbin/slurmd as an alternatives link to slurmd-wlm).
_hbs_bin() {
	local p
	p=$(command -v "$1" 2>/dev/null) || p=/usr/sbin/$1
	readlink -f "$p" 2>/dev/null || printf '%s\n' "$p"
}

# _hbs_pid_is PID NAME: the process PID exists and runs the program NAME.
_hbs_pid_is() {
	local pid=$1 name=$2 exe want
	[ -n "$pid" ] && [ -d "/proc/$pid" ] || return 1
	exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || return 1
	exe=${exe% (deleted)}
	want=$(_hbs_bin "$name")
	[ "$exe" = "$want" ] || [ "${exe##*/}" = "${want##*/}" ]
}

_hbs_pid_of() { # DIR NAME -> recorded pid
	local f="$1/.hbslurm/pids/$2"
	[ -r "$f" ] && head -n1 "$f"
}

# _hbs_stop PID NAME SECONDS: SIGTERM, wait, then SIGKILL.
_hbs_stop() {
	local pid=$1 name=$2 secs=${3:-10} i
	_hbs_pid_is "$pid" "$name" || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for i in $(seq 1 $((secs * 10))); do
		_hbs_pid_is "$pid" "$name" || return 0
		sleep 0.1
	done
	_hbs_log "$name (pid $pid) ignored SIGTERM for ${secs}s; SIGKILL"
	kill -KILL "$pid" 2>/dev/null || true
	for i in $(seq 1 50); do
		_hbs_pid_is "$pid" "$name" || return 0
		sleep 0.1
	done
	_hbs_log "$name (pid $pid) survived SIGKILL"
	return 1
}

# _hbs_children_named PPID NAME: pids of PPID's children running NAME.
_hbs_children_named() {
	local ppid=$1 name=$2 p stat rest
	for p in /proc/[0-9]*; do
		p=${p#/proc/}
		stat=$(cat "/proc/$p/stat" 2>/dev/null) || continue
		rest=${stat##*) }
		set -- $rest
		[ "${2:-}" = "$ppid" ] && _hbs_pid_is "$p" "$name" && echo "$p"
	done
}

# _hbs_stepds DIR: slurmstepd processes that belong to this instance.
# A slurmstepd is recognised by its binary and by the SLURM_CONF of this
# instance in its environment (slurmd passes its own environment on), or
# by running as a child of our slurmd.
_hbs_stepds() {
	local dir=$1 conf="$1/slurm.conf" slurmd_pid p
	slurmd_pid=$(_hbs_pid_of "$dir" slurmd)
	for p in /proc/[0-9]*; do
		p=${p#/proc/}
		_hbs_pid_is "$p" slurmstepd || continue
		if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null |
			grep -qxF "SLURM_CONF=$conf"; then
			echo "$p"
			continue
		fi
		if [ -n "$slurmd_pid" ] &&
			_hbs_children_named "$slurmd_pid" slurmstepd | grep -qx "$p"; then
			echo "$p"
		fi
	done
}

_hbs_check_hostname() {
	local h addr
	h=$(hostname)
	addr=$(getent hosts "$h" | awk '{print $1; exit}')
	case "$addr" in
	127.*) return 0 ;;
	esac
	if [ "$(id -u)" = 0 ] &&
		{ [ "${HB_SLURM_FIX_HOSTS:-0}" = 1 ] || [ -n "${CI:-}" ]; }; then
		printf '127.0.1.1\t%s\n' "$h" >>/etc/hosts
		_hbs_log "host name '$h' resolved to '${addr:-nothing}';" \
			"added '127.0.1.1 $h' to /etc/hosts (root, CI)"
		addr=$(getent hosts "$h" | awk '{print $1; exit}')
		case "$addr" in
		127.*) return 0 ;;
		esac
	fi
	_hbs_log "host name '$h' resolves to '${addr:-nothing}', not 127.x;" \
		"Slurm on loopback needs it: add '127.0.1.1 $h' to /etc/hosts" \
		"(or set HB_SLURM_FIX_HOSTS=1 as root)"
	return 1
}

# _hbs_created DIR NAME: record that slurm_up created DIR/NAME.
_hbs_created() { printf '%s\n' "$2" >>"$1/.hbslurm/created"; }

_hbs_mkdir() { # DIR NAME [mode]
	if [ ! -e "$1/$2" ]; then
		mkdir -p "$1/$2" && _hbs_created "$1" "$2"
	fi
	[ -z "${3:-}" ] || chmod "$3" "$1/$2"
}

# _hbs_start DIR NAME LOG CMD...: start CMD in the background, record its pid.
_hbs_start() {
	local dir=$1 name=$2 logf=$3 pid
	shift 3
	if [ "${HB_SLURM_DETACH:-0}" = 1 ]; then
		# Not a process-group leader in a non-interactive shell, so setsid
		# does not fork and $! is the daemon itself (checked below).
		setsid "$@" </dev/null >>"$logf" 2>&1 &
	else
		"$@" </dev/null >>"$logf" 2>&1 &
	fi
	pid=$!
	printf '%s\n' "$pid" >"$dir/.hbslurm/pids/$name"
}

# _hbs_verify_pid DIR NAME PIDFILE: make sure the recorded pid is the daemon;
# fall back to the daemon's own pid file (e.g. if setsid had to fork).
_hbs_verify_pid() {
	local dir=$1 name=$2 pidfile=$3 pid i
	for i in $(seq 1 50); do
		pid=$(_hbs_pid_of "$dir" "$name")
		_hbs_pid_is "$pid" "$name" && return 0
		if [ -r "$pidfile" ]; then
			pid=$(head -n1 "$pidfile" 2>/dev/null)
			if _hbs_pid_is "$pid" "$name"; then
				printf '%s\n' "$pid" >"$dir/.hbslurm/pids/$name"
				return 0
			fi
		fi
		sleep 0.1
	done
	_hbs_log "$name did not start"
	return 1
}

# ------------------------------------------------------------ public API

slurm_logs() {
	local dir=${1:?slurm_logs DIR} f
	for f in "$dir"/log/* "$dir"/munge/munged.log; do
		[ -f "$f" ] || continue
		printf '===== %s (last 60 lines) =====\n' "$f" >&2
		tail -n 60 "$f" >&2
	done
}

slurm_env() {
	local dir=${1:?slurm_env DIR}
	printf 'export SLURM_CONF=%q\n' "$dir/slurm.conf"
	[ -r "$dir/.hbslurm/env" ] && cat "$dir/.hbslurm/env"
}

slurm_is_up() {
	local dir=${1:?slurm_is_up DIR} node st
	node=$(cat "$dir/.hbslurm/node" 2>/dev/null) || return 1
	SLURM_CONF="$dir/slurm.conf" timeout 10 scontrol ping 2>/dev/null |
		grep -q 'is UP' || return 1
	st=$(SLURM_CONF="$dir/slurm.conf" timeout 10 sinfo -h -N -n "$node" \
		-o '%T' 2>/dev/null | head -n1)
	case "$st" in
	idle | mixed | allocated | completing) return 0 ;;
	esac
	return 1
}

slurm_up() {
	local dir=${1:?slurm_up DIR} made_dir=0 plugdir ports ctld_port slurmd_port
	local prefix=${HB_SLURM_NODE_PREFIX:-hb} n=${HB_SLURM_NODES:-4}
	local cpus=${HB_SLURM_CPUS:-64} mem=${HB_SLURM_MEM_MB:-512000}
	local gpus=${HB_SLURM_GPUS:-a100:4 h100:4} debug=${HB_SLURM_DEBUG:-info}
	local timeout=${HB_SLURM_READY_TIMEOUT:-30}
	local host user munge_user node nodes gres gtype gcount i g topo
	local t0 st

	case "$n" in '' | *[!0-9]* | 0) _hbs_log "bad HB_SLURM_NODES"; return 1 ;; esac
	case "$cpus" in '' | *[!0-9]* | 0) _hbs_log "bad HB_SLURM_CPUS"; return 1 ;; esac
	for i in slurmctld slurmd munged scontrol sinfo; do
		command -v "$i" >/dev/null 2>&1 ||
			{ _hbs_log "$i not found (run scripts/setup.sh)"; return 1; }
	done
	_hbs_check_hostname || return 1
	plugdir=$(_hbs_plugin_dir) ||
		{ _hbs_log "Slurm plugin directory not found"; return 1; }

	if [ ! -d "$dir" ]; then
		mkdir -p "$dir" || return 1
		made_dir=1
	fi
	dir=$(cd "$dir" && pwd -P) || return 1
	if [ -e "$dir/.hbslurm" ]; then
		_hbs_log "$dir already holds a Slurm instance (.hbslurm exists)"
		return 1
	fi
	mkdir -p "$dir/.hbslurm/pids" || return 1
	: >"$dir/.hbslurm/created"
	_hbs_created "$dir" .hbslurm
	[ "$made_dir" = 1 ] && : >"$dir/.hbslurm/made_dir"

	user=$(id -un)
	munge_user=$user
	if [ "$(id -u)" = 0 ] && getent passwd munge >/dev/null; then
		munge_user=munge
	fi
	# munged checks that its socket directory is reachable by everyone.
	if [ "$munge_user" != "$user" ] &&
		! setpriv --reuid="$munge_user" --regid="$munge_user" \
			--init-groups test -x "$dir"; then
		chmod o+x "$dir" 2>/dev/null || true
		if ! setpriv --reuid="$munge_user" --regid="$munge_user" \
			--init-groups test -x "$dir"; then
			_hbs_log "$dir is not reachable by the $munge_user user;" \
				"use a directory whose parents are world-searchable"
			return 1
		fi
	fi

	ports=$(_hbs_pick_ports) || { _hbs_log "no free ports"; return 1; }
	ctld_port=${ports% *}
	slurmd_port=${ports#* }
	printf '%s %s\n' "$ctld_port" "$slurmd_port" >"$dir/.hbslurm/ports"

	host=$(hostname -s)
	node="${prefix}1"
	if [ "$n" = 1 ]; then nodes="$node"; else nodes="${prefix}[1-$n]"; fi
	printf '%s\n' "$node" >"$dir/.hbslurm/node"

	for i in munge state spool log run dev; do _hbs_mkdir "$dir" "$i"; done
	for i in $(seq 1 "$n"); do mkdir -p "$dir/spool/${prefix}$i"; done
	chmod 0755 "$dir/munge"

	# --- munge: a private key and socket.
	if command -v mungekey >/dev/null 2>&1; then
		mungekey -c -k "$dir/munge/munge.key" 2>/dev/null
	else
		dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 \
			2>/dev/null
	fi
	chmod 0600 "$dir/munge/munge.key"
	chown -R "$munge_user:" "$dir/munge" 2>/dev/null ||
		chown -R "$munge_user" "$dir/munge"

	# --- GPUs: gres.conf with one pseudo device per GPU.
	: >"$dir/gres.conf"
	_hbs_created "$dir" gres.conf
	gres=""
	g=0
	for i in $gpus; do
		gtype=${i%%:*}
		gcount=${i#*:}
		[ "$gcount" -gt 0 ] 2>/dev/null || continue
		local first=$g files
		for _ in $(seq 1 "$gcount"); do
			ln -sfn /dev/null "$dir/dev/gpu$g"
			g=$((g + 1))
		done
		if [ "$gcount" = 1 ]; then files="$dir/dev/gpu$first"
		else files="$dir/dev/gpu[$first-$((g - 1))]"; fi
		printf 'NodeName=%s Name=gpu Type=%s File=%s\n' \
			"$nodes" "$gtype" "$files" >>"$dir/gres.conf"
		gres="${gres:+$gres,}gpu:$gtype:$gcount"
	done

	# --- plugstack.conf: ours, so /etc/slurm/plugstack.conf.d is not read.
	printf '%s\n' "${HB_SLURM_PLUGSTACK:-}" >"$dir/plugstack.conf"
	_hbs_created "$dir" plugstack.conf

	if [ $((cpus % 2)) = 0 ]; then
		topo="Boards=1 SocketsPerBoard=2 CoresPerSocket=$((cpus / 2)) ThreadsPerCore=1"
	else
		topo="Boards=1 SocketsPerBoard=1 CoresPerSocket=$cpus ThreadsPerCore=1"
	fi

	cat >"$dir/slurm.conf" <<EOF
# Generated by tests/integration/lib/slurm.sh: a private Slurm on loopback.
ClusterName=${HB_SLURM_CLUSTER:-hbsandbox}
SlurmctldHost=$host(127.0.0.1)
SlurmUser=$user
SlurmdUser=$user
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
CommunicationParameters=NoCtldInAddrAny,NoInAddrAny
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
PluginDir=${HB_SLURM_PLUGIN_DIR:+$HB_SLURM_PLUGIN_DIR:}$plugdir
PlugStackConfig=$dir/plugstack.conf
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
SlurmctldDebug=$debug
SlurmdDebug=$debug
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SlurmdParameters=config_overrides
GresTypes=gpu
ReturnToService=2
SlurmdTimeout=300
InactiveLimit=0
KillWait=5
MinJobAge=300
${HB_SLURM_JOB_SUBMIT_PLUGINS:+JobSubmitPlugins=$HB_SLURM_JOB_SUBMIT_PLUGINS}
NodeName=$nodes NodeAddr=127.0.0.1 CPUs=$cpus $topo RealMemory=$mem${gres:+ Gres=$gres}${HB_SLURM_NODE_FEATURES:+ Features=$HB_SLURM_NODE_FEATURES} State=UNKNOWN
PartitionName=debug Nodes=$nodes Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=$nodes MaxTime=INFINITE State=UP
PartitionName=long Nodes=$nodes MaxTime=INFINITE State=UP
PartitionName=burst Nodes=$node MaxTime=INFINITE State=UP OverSubscribe=${HB_SLURM_BURST_OVERSUBSCRIBE:-FORCE:8}
EOF
	_hbs_created "$dir" slurm.conf
	if [ -n "${HB_SLURM_EXTRA_CONF:-}" ]; then
		printf '# HB_SLURM_EXTRA_CONF\n%s\n' "$HB_SLURM_EXTRA_CONF" \
			>>"$dir/slurm.conf"
	fi

	export SLURM_CONF="$dir/slurm.conf"
	export HB_SLURM_DIR="$dir" HB_SLURM_NODE="$node" HB_SLURM_NODES_ALL="$nodes"
	export HB_SLURM_CTLD_PORT="$ctld_port" HB_SLURM_SLURMD_PORT="$slurmd_port"
	export HB_SLURM_MUNGE_SOCKET="$dir/munge/munge.socket"
	{
		printf 'export HB_SLURM_DIR=%q\n' "$dir"
		printf 'export HB_SLURM_NODE=%q\n' "$node"
		printf 'export HB_SLURM_NODES_ALL=%q\n' "$nodes"
		printf 'export HB_SLURM_CTLD_PORT=%q\n' "$ctld_port"
		printf 'export HB_SLURM_SLURMD_PORT=%q\n' "$slurmd_port"
		printf 'export HB_SLURM_MUNGE_SOCKET=%q\n' "$dir/munge/munge.socket"
	} >"$dir/.hbslurm/env"

	# --- start munged, slurmctld, slurmd.
	local mcmd=(munged -F --key-file="$dir/munge/munge.key"
		--socket="$dir/munge/munge.socket"
		--pid-file="$dir/munge/munged.pid"
		--log-file="$dir/munge/munged.log"
		--seed-file="$dir/munge/munged.seed")
	if [ "$munge_user" != "$user" ]; then
		mcmd=(setpriv --reuid="$munge_user" --regid="$munge_user"
			--init-groups "${mcmd[@]}")
	fi
	_hbs_start "$dir" munged "$dir/log/munged.out" "${mcmd[@]}"
	if ! _hbs_verify_pid "$dir" munged "$dir/munge/munged.pid"; then
		slurm_logs "$dir"
		slurm_down "$dir"
		return 1
	fi
	for i in $(seq 1 50); do
		[ -S "$dir/munge/munge.socket" ] && break
		sleep 0.1
	done
	if [ ! -S "$dir/munge/munge.socket" ]; then
		_hbs_log "munged did not create its socket"
		slurm_logs "$dir"
		slurm_down "$dir"
		return 1
	fi

	_hbs_start "$dir" slurmctld "$dir/log/slurmctld.out" \
		slurmctld -D -f "$dir/slurm.conf"
	_hbs_start "$dir" slurmd "$dir/log/slurmd.out" \
		slurmd -D -N "$node" -f "$dir/slurm.conf"
	if ! _hbs_verify_pid "$dir" slurmctld "$dir/run/slurmctld.pid" ||
		! _hbs_verify_pid "$dir" slurmd "$dir/run/slurmd-$node.pid"; then
		slurm_logs "$dir"
		slurm_down "$dir"
		return 1
	fi

	# --- wait for readiness.
	t0=$SECONDS
	while :; do
		if slurm_is_up "$dir"; then
			return 0
		fi
		for i in slurmctld slurmd munged; do
			if ! _hbs_pid_is "$(_hbs_pid_of "$dir" "$i")" "$i"; then
				_hbs_log "$i exited during start-up"
				slurm_logs "$dir"
				slurm_down "$dir"
				return 1
			fi
		done
		if [ $((SECONDS - t0)) -ge "$timeout" ]; then
			st=$(sinfo -h -N -o '%N %T %E' 2>&1 | head -n 5)
			_hbs_log "Slurm not ready after ${timeout}s; sinfo: $st"
			slurm_logs "$dir"
			slurm_down "$dir"
			return 1
		fi
		sleep 0.2
	done
}

slurm_down() {
	local dir=${1:?slurm_down DIR} conf pid p stepds="" jobs i
	[ -d "$dir/.hbslurm/pids" ] || return 0
	conf="$dir/slurm.conf"

	# 1. Cancel every job while slurmctld and slurmd are still there.
	pid=$(_hbs_pid_of "$dir" slurmctld)
	if _hbs_pid_is "$pid" slurmctld; then
		jobs=$(SLURM_CONF="$conf" timeout 10 squeue -h -o '%A' 2>/dev/null |
			sort -u | tr '\n' ' ')
		if [ -n "${jobs// /}" ]; then
			# shellcheck disable=SC2086
			SLURM_CONF="$conf" timeout 10 scancel $jobs 2>/dev/null || true
			for i in $(seq 1 100); do
				SLURM_CONF="$conf" timeout 5 squeue -h -t R,CG,S -o '%A' \
					2>/dev/null | grep -q . || break
				sleep 0.1
			done
		fi
	fi

	# 2. slurmstepd of this instance, before slurmd goes.
	stepds=$(_hbs_stepds "$dir" | tr '\n' ' ')

	# 3. slurmd, then slurmctld (and its slurmscriptd), then munged.
	_hbs_stop "$(_hbs_pid_of "$dir" slurmd)" slurmd 10
	pid=$(_hbs_pid_of "$dir" slurmctld)
	local scriptd=""
	if _hbs_pid_is "$pid" slurmctld; then
		scriptd=$(_hbs_children_named "$pid" slurmctld | tr '\n' ' ')
	fi
	_hbs_stop "$pid" slurmctld 15
	for p in $scriptd; do _hbs_stop "$p" slurmctld 2; done

	# 4. Any slurmstepd still there is orphaned: SIGKILL by pid.
	stepds="$stepds $(_hbs_stepds "$dir" | tr '\n' ' ')"
	for p in $stepds; do
		if _hbs_pid_is "$p" slurmstepd; then
			kill -KILL "$p" 2>/dev/null || true
		fi
	done

	_hbs_stop "$(_hbs_pid_of "$dir" munged)" munged 5
	rm -f "$dir/.hbslurm/pids/"* 2>/dev/null || true
	return 0
}

slurm_purge() {
	local dir=${1:?slurm_purge DIR} made=0 name
	[ -r "$dir/.hbslurm/created" ] || return 0
	slurm_down "$dir"
	[ -e "$dir/.hbslurm/made_dir" ] && made=1
	while IFS= read -r name; do
		case "$name" in '' | */* | . | ..) continue ;; esac
		[ "$name" = .hbslurm ] && continue
		rm -rf -- "${dir:?}/$name"
	done <"$dir/.hbslurm/created"
	rm -rf -- "${dir:?}/.hbslurm"
	if [ "$made" = 1 ]; then rmdir -- "$dir" 2>/dev/null || true; fi
	return 0
}
