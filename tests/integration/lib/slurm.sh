# shellcheck shell=bash
# tests/integration/lib/slurm.sh - a private, single-host Slurm on loopback.
#
# Source this file, then:
#
#   slurm_up DIR        start munged, slurmctld and one slurmd per real node,
#                       all of whose files live in DIR; wait until every real
#                       node is idle.  Unsets any inherited SLURM_*, SBATCH_*
#                       and SALLOC_* (slurm_clean_env), then exports
#                       SLURM_CONF and the HB_SLURM_* outputs below.  On
#                       failure: prints the logs, tears down what it
#                       started, returns 1.
#   slurm_down DIR      cancel every job, stop each slurmd, then slurmctld,
#                       slurmdbd, mariadbd and munged (SIGTERM, then
#                       SIGKILL, by PID), and
#                       SIGKILL any slurmstepd this instance left behind.
#                       Only PIDs this library recorded or can tie to DIR are
#                       signalled.  Removes nothing.  Safe to call twice, and
#                       from another shell (the PIDs are kept in DIR).
#   slurm_purge DIR     slurm_down, then remove exactly what slurm_up created
#                       in DIR (and DIR itself if slurm_up made it).
#   slurm_logs DIR      print the tail of every log (on failure).
#   slurm_env DIR       print `export ...` lines for another shell.
#   slurm_is_up DIR     0 if the controller answers and every real node is
#                       usable.
#   slurm_clean_env     unset SLURM_*, SBATCH_*, SALLOC_* in this shell.
#   slurm_wait_snapshot DIR
#                       wait (10 s at most) until job_submit/hpcbridge
#                       says it decides from hpcbridged's placement snapshot
#                       (plugin.decide: snapshot), as it does once the
#                       daemon first publishes one after slurmctld started.
#
# Typical use in a test:
#
#   . "$src/tests/integration/lib/slurm.sh"
#   tmp=$(mktemp -d); trap 'slurm_down "$tmp/slurm"; rm -rf "$tmp"' EXIT
#   slurm_up "$tmp/slurm"
#   sbatch --wrap=hostname ...
#
# Runs as root in CI: munged runs as the munge user, SlurmUser=root, jobs may
# run as any user.  As another user everything runs as that user, which is
# enough for held jobs and for that user's own jobs.
#
# Node records.  Slurm needs a record per node a job asks for, so there are
# HB_SLURM_NODES records (hb1..hbN, each with CPUs/RealMemory/GPUs from the
# variables below; slurmd registers the configured sizes, not the machine's,
# thanks to SlurmdParameters=config_overrides).  The first
# HB_SLURM_REAL_NODES of them get a slurmd each; the others are DOWN with a
# reason.  Every record has its own port, so a record without a slurmd is
# never answered by another record's slurmd (one slurmd answers pings for any
# name, and slurmctld would then mark a phantom node idle and schedule onto
# it).  Held jobs of up to HB_SLURM_NODES nodes are accepted, and so are
# running jobs that fit the real nodes; two real nodes run 2-node srun jobs.
#
# Inputs (environment variables, all optional):
#   HB_SLURM_CLUSTER        cluster name                        [hbsandbox]
#   HB_SLURM_NODE_PREFIX    node names are PREFIX1..PREFIXN     [hb]
#   HB_SLURM_NODES          node records                        [4]
#   HB_SLURM_REAL_NODES     how many of them get a slurmd       [1]
#   HB_SLURM_PHANTOM_STATE  State= of the others: DOWN, DRAIN, FUTURE [DOWN]
#   HB_SLURM_CPUS           CPUs per node record                [64]
#   HB_SLURM_MEM_MB         RealMemory per node record, MB      [512000]
#   HB_SLURM_GPUS           GPUs per node, "type:count ..."     [a100:4 h100:4]
#                           ("" for none)
#   HB_SLURM_NODE_FEATURES  Features= of every node record (comma list)
#   HB_SLURM_BURST_NODE     1: add a real node PREFIXburst, with its own
#                           slurmd, that only the `burst` partition uses, so
#                           that proxies never wait behind real work that
#                           fills the other nodes' CPUs                [0]
#   HB_SLURM_BURST_NODES    nodes of the `burst` partition
#                           [PREFIXburst with HB_SLURM_BURST_NODE=1, else
#                           the real nodes]
#   HB_SLURM_BURST_OVERSUBSCRIBE  OverSubscribe= of `burst`     [FORCE:8]
#   HB_SLURM_PLUGIN_DIR     extra plugin directories (colon-separated),
#                           searched before Slurm's own (PluginDir=)
#   HB_SLURM_JOB_SUBMIT_PLUGINS   JobSubmitPlugins= value, e.g. hpcbridge
#   HB_SLURM_JOB_SUBMIT_LUA the text of a job_submit.lua, written next to
#                           slurm.conf; adds "lua" to JobSubmitPlugins
#   HB_SLURM_PLUGSTACK      the lines of plugstack.conf (SPANK plugins)
#   HB_SLURM_EXTRA_CONF     lines appended to slurm.conf (a later key wins
#                           over an earlier one)
#   HB_SLURM_ACCOUNTING     1: accounting, so that sacct works: a private
#                           MariaDB (mariadbd on 127.0.0.1, its files in
#                           DIR/db) and slurmdbd, started before slurmctld,
#                           the cluster added with sacctmgr           [0]
#   HB_SLURM_ACCOUNTS       with accounting: accounts added, with the user
#                           in each (a job naming an account the database
#                           does not know is charged to the user's default)
#                                                    [physics chemistry]
#   HB_SLURM_DEBUG          SlurmctldDebug/SlurmdDebug level      [info]
#   HB_SLURM_READY_TIMEOUT  seconds to wait for readiness         [30]
#   HB_SLURM_DETACH         1: start the daemons in their own session, so
#                           they outlive the calling shell's process group
#                           (for `hpcbridge sandbox up`)          [0]
#   HB_SLURM_FIX_HOSTS      1: allow adding "127.0.1.1 $(hostname)" to
#                           /etc/hosts when the host name does not resolve to
#                           127.x (only as root; also allowed when CI is
#                           set).  Said on stderr when done.
#
# Outputs (exported by slurm_up, and written by slurm_env):
#   SLURM_CONF, HB_SLURM_DIR, HB_SLURM_NODE (the first real node),
#   HB_SLURM_NODES_ALL (hostlist of every record), HB_SLURM_REAL_NODES_LIST,
#   HB_SLURM_CTLD_PORT, HB_SLURM_SLURMD_PORT (the first node's),
#   HB_SLURM_MUNGE_SOCKET.
#
# Layout of DIR (all created by slurm_up, listed in DIR/.hbslurm/created):
#   slurm.conf gres.conf plugstack.conf [job_submit.lua]   configuration
#   munge/     key, socket, pid, log, seed (owned by the munge user)
#   state/     StateSaveLocation
#   spool/N/   SlurmdSpoolDir per node
#   log/       slurmctld.log, slurmd-N.log, and each daemon's stdout/stderr
#   run/       pid files written by the daemons
#   db/        with HB_SLURM_ACCOUNTING=1: MariaDB's data directory,
#              its tmpdir and socket; slurmdbd.conf (mode 0600) next to
#              slurm.conf
#   dev/       gpuN -> /dev/null: slurmd 22.05 drops a GPU without File=,
#              and File= must be a character device
#   .hbslurm/  this library's records: pids/, created, ports, real_nodes

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

# _hbs_port_free PORT: 0 if nothing listens on PORT.
_hbs_port_free() {
	local p=$1
	if command -v ss >/dev/null 2>&1; then
		! ss -Htan "sport = :$p" 2>/dev/null | grep -q .
	else
		! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null
	fi
}

# Port blocks are claimed in this directory, shared by every instance on
# the host: a block is free for one instance from its claim until
# slurm_down, though the first daemon binds it only seconds after the pick
# (after mariadb-install-db, with accounting), so two instances starting
# at once never pick the same block.  A claim older than
# _HBS_CLAIM_STALE_MIN minutes whose ports are all free is left from an
# instance that was never brought down, and is taken over.
_HBS_CLAIMS=/tmp/hbslurm-ports
_HBS_CLAIM_STALE_MIN=30

# _hbs_pick_ports DIR N: claim a block of N free consecutive ports below
# the ephemeral range (so that no outgoing connection takes one
# meanwhile) for instance DIR; print its first port.
_hbs_pick_ports() {
	local dir=$1 n=${2:-2} i j base ok claim= claims=1
	mkdir -p "$_HBS_CLAIMS" 2>/dev/null && chmod 1777 "$_HBS_CLAIMS" 2>/dev/null
	if [ ! -w "$_HBS_CLAIMS" ]; then # another user's, not shared: no claims
		_hbs_log "cannot claim ports in $_HBS_CLAIMS; checking them only"
		claims=0
	fi
	for i in $(seq 1 200); do
		base=$((20000 + (RANDOM % 600) * 20))
		if [ "$claims" = 1 ]; then
			claim=$_HBS_CLAIMS/$base
			if [ -d "$claim" ] && [ -n "$(find "$claim" -maxdepth 0 \
				-mmin +"$_HBS_CLAIM_STALE_MIN" 2>/dev/null)" ]; then
				rm -rf -- "$claim" 2>/dev/null
			fi
			mkdir "$claim" 2>/dev/null || continue # another's: the next
		fi
		ok=1
		for j in $(seq 0 $((n - 1))); do
			_hbs_port_free $((base + j)) || { ok=0; break; }
		done
		if [ "$ok" = 1 ]; then
			[ -n "$claim" ] && printf '%s\n' "$dir" >"$claim/owner"
			printf '%s\n' "$base"
			return 0
		fi
		[ -n "$claim" ] && rm -rf -- "$claim"
	done
	return 1
}

# _hbs_release_ports DIR: drop DIR's claim (its ctld port is the block's
# first), if it is still DIR's.
_hbs_release_ports() {
	local dir base owner
	dir=$(cd "$1" 2>/dev/null && pwd -P) || return 0 # as slurm_up named it
	[ -r "$dir/.hbslurm/ports" ] || return 0
	read -r base _ <"$dir/.hbslurm/ports" || return 0
	[ -n "$base" ] || return 0
	owner=$(cat "$_HBS_CLAIMS/$base/owner" 2>/dev/null) || return 0
	[ "$owner" = "$dir" ] && rm -rf -- "${_HBS_CLAIMS:?}/$base"
	return 0
}

# _hbs_bin NAME: the file of program NAME (Debian installs /usr/sbin/slurmd
# as an alternatives link to slurmd-wlm; `-ef` below follows links).
_hbs_bin() {
	command -v "$1" 2>/dev/null || printf '/usr/sbin/%s\n' "$1"
}

# _hbs_pid_is PID NAME: process PID exists (not a zombie) and runs NAME.
# Uses no subprocess, as it runs for every process when scanning /proc.
_hbs_pid_is() {
	local pid=$1 name=$2 var
	[ -n "$pid" ] && [ -e "/proc/$pid/exe" ] || return 1
	var="_hbs_bin_${name//[^a-zA-Z0-9]/_}"
	[ -n "${!var:-}" ] || printf -v "$var" '%s' "$(_hbs_bin "$name")"
	[ "/proc/$pid/exe" -ef "${!var}" ]
}

_hbs_pid_of() { # DIR RECORD -> recorded pid
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
		read -r stat 2>/dev/null <"/proc/$p/stat" || continue
		rest=${stat##*) }
		rest=${rest#* }
		[ "${rest%% *}" = "$ppid" ] && _hbs_pid_is "$p" "$name" && echo "$p"
	done
	return 0
}

# _hbs_stepds DIR: the slurmstepd processes of this instance.  slurmd hands
# its environment, with this instance's SLURM_CONF, to every slurmstepd;
# a slurmstepd that is still a child of one of our slurmds counts too.
_hbs_stepds() {
	local dir=$1 conf="$1/slurm.conf" p f kids=""
	for f in "$dir"/.hbslurm/pids/slurmd.*; do
		[ -e "$f" ] || continue
		kids="$kids $(_hbs_children_named "$(head -n1 "$f")" slurmstepd |
			tr '\n' ' ')"
	done
	for p in /proc/[0-9]*; do
		p=${p#/proc/}
		_hbs_pid_is "$p" slurmstepd || continue
		if grep -qzxF "SLURM_CONF=$conf" "/proc/$p/environ" 2>/dev/null; then
			echo "$p"
		elif case " $kids " in *" $p "*) true ;; *) false ;; esac then
			echo "$p"
		fi
	done
	return 0
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

_hbs_mkdir() { # DIR NAME
	if [ ! -e "$1/$2" ]; then
		mkdir -p "$1/$2" && _hbs_created "$1" "$2"
	fi
}

# _hbs_start DIR RECORD LOG CMD...: start CMD in the background, record its
# pid under RECORD.
_hbs_start() {
	local dir=$1 rec=$2 logf=$3
	shift 3
	if [ "${HB_SLURM_DETACH:-0}" = 1 ]; then
		# Not a process-group leader in a non-interactive shell, so setsid
		# does not fork and $! is the daemon itself (checked afterwards).
		setsid "$@" </dev/null >>"$logf" 2>&1 &
	else
		"$@" </dev/null >>"$logf" 2>&1 &
	fi
	printf '%s\n' "$!" >"$dir/.hbslurm/pids/$rec"
}

# _hbs_verify_pid DIR RECORD PROGRAM PIDFILE: make sure the recorded pid is
# the daemon; else take the daemon's own pid file (if setsid had to fork).
_hbs_verify_pid() {
	local dir=$1 rec=$2 prog=$3 pidfile=$4 pid i
	for i in $(seq 1 50); do
		pid=$(_hbs_pid_of "$dir" "$rec")
		_hbs_pid_is "$pid" "$prog" && return 0
		if [ -r "$pidfile" ]; then
			pid=$(head -n1 "$pidfile" 2>/dev/null)
			if _hbs_pid_is "$pid" "$prog"; then
				printf '%s\n' "$pid" >"$dir/.hbslurm/pids/$rec"
				return 0
			fi
		fi
		sleep 0.1
	done
	return 1
}

# _hbs_fail DIR MESSAGE: print the logs, tear down, return 1.
_hbs_fail() {
	_hbs_log "$2"
	slurm_logs "$1"
	slurm_down "$1"
	return 1
}

# _hbs_accounting DIR CLUSTER USER DB_PORT DBD_PORT: MariaDB and slurmdbd
# for this instance; 0 once slurmdbd answers and the cluster and the
# accounts are added.  SLURM_CONF must name DIR's slurm.conf (slurmdbd
# reads the slurmdbd.conf beside it).
_hbs_accounting() {
	local dir=$1 cluster=$2 user=$3 db_port=$4 dbd_port=$5 pass i up=0
	local accounts=${HB_SLURM_ACCOUNTS-physics chemistry}
	for i in mariadb-install-db mariadbd mariadb slurmdbd sacctmgr; do
		command -v "$i" >/dev/null 2>&1 ||
			{ _hbs_log "$i not found (run scripts/setup.sh)"; return 1; }
	done
	_hbs_mkdir "$dir" db
	mkdir -p "$dir/db/tmp" || return 1
	# A private --tmpdir: mariadbd names its temporary tables in tmpdir
	# by a counter, and two instances sharing /tmp (tests run in
	# parallel) can remove each other's, failing the install.
	mariadb-install-db --no-defaults --datadir="$dir/db/data" \
		--tmpdir="$dir/db/tmp" \
		--user="$user" --auth-root-authentication-method=socket \
		--skip-test-db >"$dir/log/mariadb-install.log" 2>&1 ||
		{
			_hbs_log "mariadb-install-db failed: $(grep -m3 -E \
				'ERROR|\[ERROR\]' "$dir/log/mariadb-install.log" |
				tr '\n' ' ')"
			return 1
		}
	_hbs_start "$dir" mariadbd "$dir/log/mariadbd.out" \
		mariadbd --no-defaults --datadir="$dir/db/data" --user="$user" \
		--socket="$dir/db/mysql.sock" --port="$db_port" \
		--tmpdir="$dir/db/tmp" \
		--bind-address=127.0.0.1 --skip-name-resolve \
		--pid-file="$dir/run/mariadbd.pid" \
		--log-error="$dir/log/mariadbd.log" \
		--innodb-buffer-pool-size=32M
	_hbs_verify_pid "$dir" mariadbd mariadbd "$dir/run/mariadbd.pid" ||
		{ _hbs_log "mariadbd did not start"; return 1; }
	for i in $(seq 1 100); do
		[ -S "$dir/db/mysql.sock" ] && break
		sleep 0.1
	done
	# slurmdbd's own database user, over TCP on loopback, with a password
	# made here and kept in slurmdbd.conf (0600).
	pass=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
	mariadb --no-defaults --socket="$dir/db/mysql.sock" -u root -e \
		"CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$pass';
		 GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';" \
		>>"$dir/log/mariadb-install.log" 2>&1 ||
		{ _hbs_log "could not create slurmdbd's database user"; return 1; }
	(
		umask 077
		cat >"$dir/slurmdbd.conf" <<-CONF
		# Written by tests/integration/lib/slurm.sh.
		AuthType=auth/munge
		AuthInfo=socket=$dir/munge/munge.socket
		DbdAddr=127.0.0.1
		DbdHost=localhost
		DbdPort=$dbd_port
		SlurmUser=$user
		StorageType=accounting_storage/mysql
		StorageHost=127.0.0.1
		StoragePort=$db_port
		StorageUser=slurm
		StoragePass=$pass
		StorageLoc=slurm_acct_db
		PidFile=$dir/run/slurmdbd.pid
		LogFile=$dir/log/slurmdbd.log
		DebugLevel=info
		CONF
	)
	_hbs_created "$dir" slurmdbd.conf
	_hbs_start "$dir" slurmdbd "$dir/log/slurmdbd.out" slurmdbd -D
	_hbs_verify_pid "$dir" slurmdbd slurmdbd "$dir/run/slurmdbd.pid" ||
		{ _hbs_log "slurmdbd did not start"; return 1; }
	for i in $(seq 1 150); do
		if timeout 10 sacctmgr -i add cluster "$cluster" >/dev/null 2>&1 ||
			timeout 10 sacctmgr -n list cluster format=cluster \
				2>/dev/null | grep -qw "$cluster"; then
			up=1
			break
		fi
		_hbs_pid_is "$(_hbs_pid_of "$dir" slurmdbd)" slurmdbd ||
			{ _hbs_log "slurmdbd exited during start-up"; return 1; }
		sleep 0.2
	done
	[ "$up" = 1 ] ||
		{ _hbs_log "slurmdbd did not answer sacctmgr within 30 s"; return 1; }
	# Accounts, with this user in each: a job that names an account the
	# database does not know is charged to the user's default instead.
	accounts=${accounts// /,}
	[ -z "$accounts" ] ||
		{ timeout 10 sacctmgr -i add account "$accounts" >/dev/null 2>&1 &&
			timeout 10 sacctmgr -i add user "$user" \
				account="$accounts" >/dev/null 2>&1; } ||
		{ _hbs_log "sacctmgr could not add the accounts"; return 1; }
}

# ------------------------------------------------------------ public API

# slurm_clean_env: unset what the calling environment could hold of
# another Slurm (SLURM_CONF, SBATCH_*, SALLOC_*, SLURM_*: a CI runner
# inside an allocation, a developer's defaults), so that the commands of
# this shell talk only to an instance of ours, with its own defaults.
# slurm_up calls it.
slurm_clean_env() {
	local v
	for v in $(compgen -e); do
		case "$v" in SBATCH_* | SALLOC_* | SLURM_*) unset "$v" ;; esac
	done
}

slurm_logs() {
	local dir=${1:?slurm_logs DIR} f
	for f in "$dir"/log/* "$dir"/munge/munged.log; do
		[ -f "$f" ] || continue
		printf '===== %s (last 40 lines) =====\n' "$f" >&2
		tail -n 40 "$f" >&2
	done
}

slurm_wait_snapshot() {
	local _i
	for _i in $(seq 100); do
		grep -q 'deciding from placement snapshot' \
			"$1/log/slurmctld.log" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "slurm_wait_snapshot: the plugin took no snapshot in 10 s" >&2
	return 1
}

slurm_env() {
	local dir=${1:?slurm_env DIR}
	printf 'export SLURM_CONF=%q\n' "$dir/slurm.conf"
	[ -r "$dir/.hbslurm/env" ] && cat "$dir/.hbslurm/env"
}

slurm_is_up() {
	local dir=${1:?slurm_is_up DIR} node st
	[ -r "$dir/.hbslurm/real_nodes" ] || return 1
	SLURM_CONF="$dir/slurm.conf" timeout 10 scontrol ping 2>/dev/null |
		grep -q 'is UP' || return 1
	for node in $(cat "$dir/.hbslurm/real_nodes"); do
		st=$(SLURM_CONF="$dir/slurm.conf" timeout 10 sinfo -h -N \
			-n "$node" -o '%T' 2>/dev/null | head -n1)
		# "planned": idle, kept by the backfill scheduler for a pending
		# job (22.05); a busy instance shows it
		case "$st" in
		idle | mixed | allocated | completing | planned) ;;
		*) return 1 ;;
		esac
	done
	return 0
}

slurm_up() {
	local dir=${1:?slurm_up DIR} made_dir=0 plugdir ctld_port slurmd_port
	local prefix=${HB_SLURM_NODE_PREFIX:-hb} n=${HB_SLURM_NODES:-4}
	local real=${HB_SLURM_REAL_NODES:-1}
	local cpus=${HB_SLURM_CPUS:-64} mem=${HB_SLURM_MEM_MB:-512000}
	local gpus=${HB_SLURM_GPUS-a100:4 h100:4} debug=${HB_SLURM_DEBUG:-info}
	local timeout=${HB_SLURM_READY_TIMEOUT:-30}
	local phantom_state=${HB_SLURM_PHANTOM_STATE:-DOWN}
	local host user munge_user node nodes real_nodes gres gtype gcount
	local i g topo t0 st first files node_lines reason rec db_port dbd_port

	case "$n" in '' | *[!0-9]* | 0) _hbs_log "bad HB_SLURM_NODES"; return 1 ;; esac
	case "$real" in '' | *[!0-9]* | 0) _hbs_log "bad HB_SLURM_REAL_NODES"; return 1 ;; esac
	case "$cpus" in '' | *[!0-9]* | 0) _hbs_log "bad HB_SLURM_CPUS"; return 1 ;; esac
	case "$phantom_state" in
	DOWN | DRAIN | FUTURE | UNKNOWN) ;;
	*) _hbs_log "bad HB_SLURM_PHANTOM_STATE"; return 1 ;;
	esac
	[ "$real" -le "$n" ] || n=$real
	slurm_clean_env
	for i in slurmctld slurmd munged scontrol sinfo squeue scancel; do
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
	# munged insists that everyone can reach its socket directory.
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

	# Ports: slurmctld's, one per node record and the burst node, then
	# MariaDB's and slurmdbd's.
	ctld_port=$(_hbs_pick_ports "$dir" $((n + 4))) ||
		{ _hbs_log "no free ports"; return 1; }
	slurmd_port=$((ctld_port + 1))
	db_port=$((ctld_port + n + 2))
	dbd_port=$((db_port + 1))
	printf '%s %s\n' "$ctld_port" "$slurmd_port" >"$dir/.hbslurm/ports"

	host=$(hostname -s)
	node="${prefix}1"
	if [ "$n" = 1 ]; then nodes="$node"; else nodes="${prefix}[1-$n]"; fi
	if [ "$real" = 1 ]; then real_nodes="$node"
	else real_nodes="${prefix}[1-$real]"; fi
	printf '%s\n' "$node" >"$dir/.hbslurm/node"
	: >"$dir/.hbslurm/real_nodes"
	node_lines=""
	reason="no slurmd: a record for multi-node requests"
	for i in $(seq 1 "$n"); do
		st="NodeName=${prefix}$i NodeAddr=127.0.0.1 Port=$((slurmd_port + i - 1))"
		if [ "$i" -le "$real" ]; then
			printf '%s\n' "${prefix}$i" >>"$dir/.hbslurm/real_nodes"
			st="$st State=UNKNOWN"
		elif [ "$phantom_state" = DOWN ] || [ "$phantom_state" = DRAIN ]; then
			st="$st State=$phantom_state Reason=\"$reason\""
		else
			st="$st State=$phantom_state"
		fi
		node_lines+="$st"$'\n'
	done
	local burst_nodes=${HB_SLURM_BURST_NODES:-$real_nodes}
	if [ "${HB_SLURM_BURST_NODE:-0}" = 1 ]; then
		printf '%s\n' "${prefix}burst" >>"$dir/.hbslurm/real_nodes"
		node_lines+="NodeName=${prefix}burst NodeAddr=127.0.0.1 Port=$((slurmd_port + n)) State=UNKNOWN"$'\n'
		burst_nodes=${HB_SLURM_BURST_NODES:-${prefix}burst}
	fi

	for i in munge state spool log run dev; do _hbs_mkdir "$dir" "$i"; done
	for i in $(cat "$dir/.hbslurm/real_nodes"); do mkdir -p "$dir/spool/$i"; done
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
		first=$g
		for _ in $(seq 1 "$gcount"); do
			ln -sfn /dev/null "$dir/dev/gpu$g"
			g=$((g + 1))
		done
		if [ "$gcount" = 1 ]; then files="$dir/dev/gpu$first"
		else files="$dir/dev/gpu[$first-$((g - 1))]"; fi
		printf 'Name=gpu Type=%s File=%s\n' \
			"$gtype" "$files" >>"$dir/gres.conf"
		gres="${gres:+$gres,}gpu:$gtype:$gcount"
	done

	# --- job_submit.lua (read from slurm.conf's directory).
	local jsp=${HB_SLURM_JOB_SUBMIT_PLUGINS:-}
	if [ -n "${HB_SLURM_JOB_SUBMIT_LUA:-}" ]; then
		printf '%s\n' "$HB_SLURM_JOB_SUBMIT_LUA" >"$dir/job_submit.lua"
		_hbs_created "$dir" job_submit.lua
		jsp="${jsp:+$jsp,}lua"
	fi

	# --- plugstack.conf: ours, so /etc/slurm/plugstack.conf.d is not read.
	printf '%s\n' "${HB_SLURM_PLUGSTACK:-}" >"$dir/plugstack.conf"
	_hbs_created "$dir" plugstack.conf

	if [ $((cpus % 2)) = 0 ]; then
		topo="Boards=1 SocketsPerBoard=2 CoresPerSocket=$((cpus / 2)) ThreadsPerCore=1"
	else
		topo="Boards=1 SocketsPerBoard=1 CoresPerSocket=$cpus ThreadsPerCore=1"
	fi

	{
		cat <<-CONF
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
		JobCompType=jobcomp/none
		MpiDefault=none
		SchedulerType=sched/backfill
		SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
		SelectType=select/cons_tres
		SelectTypeParameters=CR_Core
		SlurmdParameters=config_overrides
		GresTypes=gpu
		ReturnToService=2
		SlurmdTimeout=300
		InactiveLimit=0
		KillWait=5
		MinJobAge=300
		CONF
		if [ -n "$jsp" ]; then
			printf 'JobSubmitPlugins=%s\n' "$jsp"
		fi
		if [ "${HB_SLURM_ACCOUNTING:-0}" = 1 ]; then
			printf 'AccountingStorageType=accounting_storage/slurmdbd\n'
			printf 'AccountingStorageHost=127.0.0.1\n'
			printf 'AccountingStoragePort=%s\n' "$dbd_port"
			# for slurmdbd, the munge socket its clients use
			printf 'AccountingStoragePass=%s\n' "$dir/munge/munge.socket"
		else
			printf 'AccountingStorageType=accounting_storage/none\n'
		fi
		printf 'NodeName=DEFAULT CPUs=%s %s RealMemory=%s' "$cpus" "$topo" "$mem"
		[ -z "$gres" ] || printf ' Gres=%s' "$gres"
		[ -z "${HB_SLURM_NODE_FEATURES:-}" ] ||
			printf ' Features=%s' "$HB_SLURM_NODE_FEATURES"
		printf '\n%s' "$node_lines"
		printf 'PartitionName=debug Nodes=%s Default=YES MaxTime=INFINITE State=UP\n' "$nodes"
		printf 'PartitionName=gpu Nodes=%s MaxTime=INFINITE State=UP\n' "$nodes"
		printf 'PartitionName=long Nodes=%s MaxTime=INFINITE State=UP\n' "$nodes"
		printf 'PartitionName=burst Nodes=%s MaxTime=INFINITE State=UP OverSubscribe=%s\n' \
			"$burst_nodes" \
			"${HB_SLURM_BURST_OVERSUBSCRIBE:-FORCE:8}"
		if [ -n "${HB_SLURM_EXTRA_CONF:-}" ]; then
			printf '# HB_SLURM_EXTRA_CONF\n%s\n' "$HB_SLURM_EXTRA_CONF"
		fi
	} >"$dir/slurm.conf"
	_hbs_created "$dir" slurm.conf

	export SLURM_CONF="$dir/slurm.conf"
	export HB_SLURM_DIR="$dir" HB_SLURM_NODE="$node"
	export HB_SLURM_NODES_ALL="$nodes" HB_SLURM_REAL_NODES_LIST="$real_nodes"
	export HB_SLURM_CTLD_PORT="$ctld_port" HB_SLURM_SLURMD_PORT="$slurmd_port"
	export HB_SLURM_MUNGE_SOCKET="$dir/munge/munge.socket"
	{
		printf 'export HB_SLURM_DIR=%q\n' "$dir"
		printf 'export HB_SLURM_NODE=%q\n' "$node"
		printf 'export HB_SLURM_NODES_ALL=%q\n' "$nodes"
		printf 'export HB_SLURM_REAL_NODES_LIST=%q\n' "$real_nodes"
		printf 'export HB_SLURM_CTLD_PORT=%q\n' "$ctld_port"
		printf 'export HB_SLURM_SLURMD_PORT=%q\n' "$slurmd_port"
		printf 'export HB_SLURM_MUNGE_SOCKET=%q\n' "$dir/munge/munge.socket"
	} >"$dir/.hbslurm/env"

	# --- munged.
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
	_hbs_verify_pid "$dir" munged munged "$dir/munge/munged.pid" ||
		{ _hbs_fail "$dir" "munged did not start"; return 1; }
	for i in $(seq 1 50); do
		[ -S "$dir/munge/munge.socket" ] && break
		sleep 0.1
	done
	[ -S "$dir/munge/munge.socket" ] ||
		{ _hbs_fail "$dir" "munged did not create its socket"; return 1; }

	# --- accounting: MariaDB and slurmdbd, before slurmctld.
	if [ "${HB_SLURM_ACCOUNTING:-0}" = 1 ]; then
		_hbs_accounting "$dir" "${HB_SLURM_CLUSTER:-hbsandbox}" "$user" \
			"$db_port" "$dbd_port" ||
			{ _hbs_fail "$dir" "accounting did not start"; return 1; }
	fi

	# --- slurmctld, then one slurmd per real node.
	_hbs_start "$dir" slurmctld "$dir/log/slurmctld.out" \
		slurmctld -D -f "$dir/slurm.conf"
	for node in $(cat "$dir/.hbslurm/real_nodes"); do
		_hbs_start "$dir" "slurmd.$node" "$dir/log/slurmd-$node.out" \
			slurmd -D -N "$node" -f "$dir/slurm.conf"
	done
	node="${prefix}1"
	_hbs_verify_pid "$dir" slurmctld slurmctld "$dir/run/slurmctld.pid" ||
		{ _hbs_fail "$dir" "slurmctld did not start"; return 1; }
	for i in $(cat "$dir/.hbslurm/real_nodes"); do
		_hbs_verify_pid "$dir" "slurmd.$i" slurmd "$dir/run/slurmd-$i.pid" ||
			{ _hbs_fail "$dir" "slurmd $i did not start"; return 1; }
	done

	# --- wait until the controller answers and the real nodes are idle.
	t0=$SECONDS
	while ! slurm_is_up "$dir"; do
		for i in "$dir"/.hbslurm/pids/*; do
			rec=${i##*/}
			_hbs_pid_is "$(head -n1 "$i")" "${rec%%.*}" ||
				{ _hbs_fail "$dir" "$rec exited during start-up"; return 1; }
		done
		if [ $((SECONDS - t0)) -ge "$timeout" ]; then
			st=$(sinfo -h -N -o '%N %T %E' 2>&1 | sort -u | head -n 5 |
				tr '\n' ';')
			_hbs_fail "$dir" "Slurm not ready after ${timeout}s; sinfo: $st"
			return 1
		fi
		sleep 0.1
	done
	return 0
}

slurm_down() {
	local dir=${1:?slurm_down DIR} conf pid p f stepds jobs i scriptd=""
	[ -d "$dir/.hbslurm/pids" ] || return 0
	conf="$dir/slurm.conf"

	# 1. Cancel every job while slurmctld and slurmd are still there, and
	# give running ones a moment to end (a slurmstepd whose slurmd is gone
	# lingers).
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

	# 2. The slurmstepd of this instance, found while slurmd is there.
	stepds=$(_hbs_stepds "$dir" | tr '\n' ' ')

	# 3. Every slurmd, then slurmctld (and its slurmscriptd), then munged.
	for f in "$dir"/.hbslurm/pids/slurmd.*; do
		[ -e "$f" ] || continue
		_hbs_stop "$(head -n1 "$f")" slurmd 10
	done
	pid=$(_hbs_pid_of "$dir" slurmctld)
	if _hbs_pid_is "$pid" slurmctld; then
		scriptd=$(_hbs_children_named "$pid" slurmctld | tr '\n' ' ')
	fi
	_hbs_stop "$pid" slurmctld 15
	for p in $scriptd; do _hbs_stop "$p" slurmctld 2; done
	_hbs_stop "$(_hbs_pid_of "$dir" slurmdbd)" slurmdbd 10
	_hbs_stop "$(_hbs_pid_of "$dir" mariadbd)" mariadbd 30

	# 4. Any slurmstepd still there is orphaned: SIGKILL by pid.
	stepds="$stepds $(_hbs_stepds "$dir" | tr '\n' ' ')"
	for p in $stepds; do
		if _hbs_pid_is "$p" slurmstepd; then
			kill -KILL "$p" 2>/dev/null || true
		fi
	done

	_hbs_stop "$(_hbs_pid_of "$dir" munged)" munged 5
	rm -f "$dir/.hbslurm/pids/"* 2>/dev/null || true
	_hbs_release_ports "$dir"
	return 0
}

slurm_purge() {
	local dir=${1:?slurm_purge DIR} made=0 name
	[ -r "$dir/.hbslurm/created" ] || return 0
	slurm_down "$dir"
	[ -e "$dir/.hbslurm/made_dir" ] && made=1
	while IFS= read -r name; do
		case "$name" in '' | */* | . | .. | .hbslurm) continue ;; esac
		rm -rf -- "${dir:?}/$name"
	done <"$dir/.hbslurm/created"
	rm -rf -- "${dir:?}/.hbslurm"
	if [ "$made" = 1 ]; then rmdir -- "$dir" 2>/dev/null || true; fi
	return 0
}
