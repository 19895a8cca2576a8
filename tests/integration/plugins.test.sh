#!/usr/bin/env bash
# plugins.test.sh - job_submit/hpcbridge and spank_hpcbridge.so in a real
# Slurm 22.05 (tests/integration/lib/slurm.sh), against a fake daemon
# (tests/integration/fake_hbd.c) whose answer the test chooses.
#
#   bash plugins.test.sh BUILD_DIR SRC_DIR
#
# Covers: the exported symbols; SPANK options refused with a message
# naming the option, and accepted on the command line and in #SBATCH lines;
# the values reaching the daemon through the job's SPANK environment; a
# "slurm" answer (job runs on Slurm, admin_comment tagged); a "kubernetes"
# answer (proxy job: burst partition, 1 CPU, the reply's script and time
# limit, no GPUs, original request kept in admin_comment), also for a
# non-root user; fail-open for a refusal, garbage, a malformed payload, a
# daemon that never answers, a stopped daemon and no daemon (job untouched,
# one log line, sbatch back within the timeout plus Slurm's own time).
set -euo pipefail

build=$(cd "${1:?BUILD_DIR}" && pwd)
src=$(cd "${2:?SRC_DIR}" && pwd)
plugdir=$build/slurm-plugin
fake=$build/tests/fake_hbd
# The plugin's timeout in this test.  The default is 20 ms; CI machines
# are shared and slow, so the answering cases get room, and the hung cases
# show the bound all the same.
timeout_ms=300

. "$src/tests/integration/lib/slurm.sh"

for f in "$plugdir/job_submit_hpcbridge.so" "$plugdir/spank_hpcbridge.so" \
	"$fake"; do
	[ -e "$f" ] || { echo "FAIL: $f not built" >&2; exit 1; }
done

tmp=$(mktemp -d /tmp/hbplugins.XXXXXX)
chmod 755 "$tmp"
fpid=""
passed=0

stop_fake() {
	if [ -n "$fpid" ]; then
		kill -CONT "$fpid" 2>/dev/null || true
		kill -TERM "$fpid" 2>/dev/null || true
		wait "$fpid" 2>/dev/null || true
		fpid=""
	fi
}
cleanup() {
	local rc=$?
	stop_fake
	slurm_down "$tmp/slurm"
	if [ "$rc" = 0 ]; then
		rm -rf "$tmp"
	else
		echo "plugins.test.sh: files kept in $tmp" >&2
	fi
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*" >&2
	[ -d "$tmp/slurm/log" ] && tail -n 30 "$tmp/slurm/log/slurmctld.log" >&2
	exit 1
}
ok() {
	passed=$((passed + 1))
	echo "ok $passed - $*"
}

# ------------------------------------------------------------ symbols
# Only Slurm's plugin symbols are exported, and the only Slurm symbols the
# plugins need are the ones slurmctld and sbatch export.
exp=$(nm -D --defined-only "$plugdir/job_submit_hpcbridge.so" |
	awk '{print $3}' | sort | tr '\n' ' ')
[ "$exp" = "fini init job_modify job_submit plugin_name plugin_type plugin_version " ] ||
	fail "job_submit_hpcbridge.so exports: $exp"
exp=$(nm -D --defined-only "$plugdir/spank_hpcbridge.so" |
	awk '{print $3}' | sort | tr '\n' ' ')
[ "$exp" = "plugin_name plugin_type plugin_version slurm_spank_init spank_plugin_version " ] ||
	fail "spank_hpcbridge.so exports: $exp"
for so in job_submit_hpcbridge spank_hpcbridge; do
	und=$(nm -D --undefined-only "$plugdir/$so.so" | awk '{print $2}' |
		grep -v -E '@|^_ITM_|^__gmon_start__$|^cJSON_|^yaml_' |
		sort | tr '\n' ' ')
	for s in $und; do
		case $s in
		slurm_xstrdup | slurm_xfree | slurm_info | slurm_error | \
			slurm_verbose | spank_context | spank_option_register | \
			spank_strerror) ;;
		*) fail "$so.so needs $s, which Slurm does not export" ;;
		esac
	done
done
ok "plugins export only Slurm's symbols and need only exported ones"

# ------------------------------------------------------------ set-up
sock=$tmp/hbd.sock
reqlog=$tmp/requests.log
mode=$tmp/mode
: >"$reqlog"
echo slurm >"$mode"
# One file for the plugin and the daemon, as on a real site.
cat >"$tmp/hpcbridge.yaml" <<EOF
daemon:
  socket: $sock
  state: $tmp/state.db
remote:
  local_dir: $tmp/remote
slurm:
  user: root
  burst_partition: burst
plugin:
  # this test drives the socket path against a fake daemon; decisions
  # made in slurmctld are tested by plugin_inproc.test.sh
  decide: daemon
  timeout_ms: $timeout_ms
placement:
  partitions:
    gpu: kubernetes
EOF

start_fake() {
	"$fake" "$sock" "$reqlog" "$mode" >"$tmp/fake.out" 2>&1 &
	fpid=$!
	for _ in $(seq 1 50); do
		grep -q ready "$tmp/fake.out" 2>/dev/null && return 0
		sleep 0.1
	done
	fail "fake daemon did not start"
}
start_fake

export HPCBRIDGE_CONFIG=$tmp/hpcbridge.yaml
export HB_SLURM_PLUGIN_DIR=$plugdir
export HB_SLURM_JOB_SUBMIT_PLUGINS=hpcbridge
export HB_SLURM_PLUGSTACK="required $plugdir/spank_hpcbridge.so"
export HB_SLURM_CPUS=16 HB_SLURM_MEM_MB=64000
slurm_up "$tmp/slurm" || fail "slurm_up"
ctld_log=$tmp/slurm/log/slurmctld.log
grep -q "job_submit/hpcbridge: daemon $sock, timeout $timeout_ms ms" \
	"$ctld_log" || fail "plugin did not read $HPCBRIDGE_CONFIG"
ok "slurmctld loaded job_submit/hpcbridge with the configured socket"

cd "$tmp"
nreq() { wc -l <"$reqlog"; }
last_req() { tail -n 1 "$reqlog"; }
# jq-like: a Python expression over the last request (d), printed.
req_eval() {
	last_req | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(('"$1"'))'
}
field() { # JOBID KEY: the value of KEY= in `scontrol show job`
	scontrol show job "$1" | tr -s ' ' '\n' | sed -n "s/^$2=//p" | head -n1
}
line_field() { # JOBID KEY: a whole-line field (values with spaces)
	scontrol show job "$1" | sed -n "s/^ *$2=//p" | sed "s/ *$//" | head -n1
}
wait_done() { # JOBID
	local st
	for _ in $(seq 1 300); do
		st=$(field "$1" JobState)
		case $st in
		COMPLETED) return 0 ;;
		FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY)
			fail "job $1 ended $st" ;;
		esac
		sleep 0.1
	done
	fail "job $1 still $st after 30 s"
}
calc() { awk "BEGIN { x = $1; if (x == 1 || x == 0) print x; else printf \"%.3f\\n\", x }"; }
jobid_of() { sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p' "$1"; }

# ------------------------------------------------------------ SPANK
spank_refused() { # OPTION VALUE
	local n0 rc=0
	n0=$(nreq)
	sbatch --hold "--$1=$2" --wrap=true >out 2>err || rc=$?
	[ "$rc" != 0 ] || fail "sbatch accepted --$1=$2"
	grep -q -- "error: hpcbridge: --$1: '" err ||
		fail "no message naming --$1: $(cat err)"
	[ "$(nreq)" = "$n0" ] || fail "a refused job reached the daemon"
}
spank_refused hpcbridge-target bogus
grep -q "'bogus' is not auto, slurm or kubernetes" err || fail "$(cat err)"
spank_refused hpcbridge-deadline notatime
spank_refused hpcbridge-checkpoint relative/dir
spank_refused hpcbridge-data s3://Bad_Bucket/x
spank_refused hpcbridge-data data/in
spank_refused hpcbridge-fabric infiniband
grep -q "'infiniband' is not rdma, tcp or auto" err || fail "$(cat err)"
ok "sbatch refuses bad --hpcbridge-* values with a message naming the option"

printf '#!/bin/sh\n#SBATCH --hpcbridge-target=bogus\ntrue\n' >bad.sh
rc=0
sbatch --hold bad.sh >out 2>err || rc=$?
[ "$rc" != 0 ] && grep -q -- "--hpcbridge-target: 'bogus'" err ||
	fail "a bad #SBATCH --hpcbridge-target line was accepted: $(cat err)"
ok "sbatch refuses a bad --hpcbridge-target in an #SBATCH line"

# ------------------------------------------------------------ slurm
# An unchanged script with #SBATCH lines for the options; the daemon
# answers "slurm".
cat >spank.sh <<'EOF'
#!/bin/sh
#SBATCH --job-name=spank-lines
#SBATCH --hpcbridge-target=kubernetes
#SBATCH --hpcbridge-deadline=now+2hours
#SBATCH --hpcbridge-data=s3://hb-data/inputs
#SBATCH --hpcbridge-fabric=RDMA
#SBATCH -t 5
echo ran-on-slurm "$@"
EOF
echo slurm >"$mode"
n0=$(nreq)
sbatch --hpcbridge-checkpoint=/scratch/ckpt spank.sh one two >out 2>err ||
	fail "sbatch: $(cat err)"
id=$(jobid_of out)
[ -n "$id" ] || fail "no job id: $(cat out err)"
[ "$(nreq)" = $((n0 + 1)) ] || fail "the daemon got $(($(nreq) - n0)) requests"
# The uid only, no user name: the plugin looks no name up under
# slurmctld's lock (the daemon resolves it).
[ "$(req_eval 'd["op"], d["target"], d["slurm_job_name"], d.get("user"), d["uid"], d["jobspec"].get("user")')" = \
	"('decide', 'kubernetes', 'spank-lines', None, 0, None)" ] ||
	fail "request: $(last_req | head -c 600)"
[ "$(req_eval 'd["options"]')" = \
	"{'deadline': 'now+2hours', 'checkpoint': '/scratch/ckpt', 'data': 's3://hb-data/inputs', 'fabric': 'RDMA'}" ] ||
	fail "options: $(req_eval 'd.get("options")')"
[ "$(req_eval 'd["time_limit_min"], d["argv"][1:], d["script"].startswith("#!/bin/sh\n#SBATCH --job-name=spank-lines")')" = \
	"(5, ['one', 'two'], True)" ] || fail "request: $(last_req | head -c 600)"
[ "$(req_eval 'd["jobspec"]["checkpoint_dir"], d["jobspec"]["data"], d["jobspec"]["time_limit"], d["jobspec"]["fabric"], d["jobspec"]["fabric_why"]')" = \
	"('/scratch/ckpt', ['s3://hb-data/inputs'], 300, 'rdma', '--hpcbridge-fabric=RDMA')" ] ||
	fail "jobspec: $(req_eval 'd["jobspec"]')"
# Where the values came from: sbatch put them in the SPANK environment
# and in the job's environment.
req_eval '[e for e in d["env"] if e.startswith("_SLURM_SPANK_OPTION_")]' |
	grep -q "'_SLURM_SPANK_OPTION_hpcbridge_hpcbridge_target=kubernetes'" ||
	fail "no _SLURM_SPANK_OPTION_hpcbridge_hpcbridge_target in the environment"
ok "#SBATCH and command-line --hpcbridge-* values reach the daemon"

wait_done "$id"
[ "$(field "$id" Partition)" = debug ] || fail "partition $(field "$id" Partition)"
ac=$(line_field "$id" AdminComment)
[ "$ac" = "hpcbridge:hb-$(printf %06d "$(nreq)") target=slurm" ] ||
	fail "admin_comment '$ac'"
grep -qx "ran-on-slurm one two" "slurm-$id.out" || fail "output: $(cat "slurm-$id.out")"
ok "target slurm: the job runs on Slurm as written, admin_comment tagged"

# --export=NONE: the job's environment does not carry the options; the
# SPANK environment (job_desc->spank_job_env) still does.
sbatch --export=NONE --hold --hpcbridge-target=slurm --wrap=true >out 2>err ||
	fail "sbatch: $(cat err)"
[ "$(req_eval 'd["target"], [e for e in d["env"] if e.startswith("_SLURM_SPANK_OPTION_")]')" = \
	"('slurm', [])" ] || fail "export=NONE request: $(last_req | head -c 600)"
scancel "$(jobid_of out)"
ok "the values travel in the job's SPANK environment (also with --export=NONE)"

# A legacy script in Latin-1: the request is still valid UTF-8 (the fake
# daemon parses it as hpcbridged does), the bytes sent as U+FFFD.
printf '#!/bin/sh\n# r\351sum\351 du calcul\ntrue\n' >latin1.sh
sbatch --hold -J latin1 latin1.sh >out 2>err || fail "sbatch: $(cat err)"
id=$(jobid_of out)
line_field "$id" AdminComment | grep -q "^hpcbridge:hb-[0-9]* target=slurm$" ||
	fail "Latin-1 script: admin_comment '$(line_field "$id" AdminComment)'"
[ "$(req_eval 'd["script"].splitlines()[1] == "# r\ufffdsum\ufffd du calcul"')" = True ] ||
	fail "Latin-1 script sent as: $(req_eval 'ascii(d["script"])')"
scancel "$id"
ok "a Latin-1 script still gets a decision (invalid bytes sent as U+FFFD)"

# ------------------------------------------------------------ kubernetes
cat >gpu.sh <<'EOF'
#!/bin/bash
#SBATCH --job-name=gpu-train
#SBATCH -N 2 --ntasks-per-node=2 -c 4 --mem=4G
#SBATCH --gres=gpu:a100:2
#SBATCH -t 30
#SBATCH --comment=user-note
srun ./train
EOF
echo "kubernetes burst 17" >"$mode"
sbatch gpu.sh >out 2>err || fail "sbatch: $(cat err)"
id=$(jobid_of out)
hb=hb-$(printf %06d "$(nreq)")
grep -q "hpcbridge: job $hb runs on Kubernetes" err ||
	fail "sbatch did not tell the user: $(cat err)"
[ "$(req_eval 'd["jobspec"]["nodes_min"], d["jobspec"]["gpus"], d["jobspec"]["mem"]')" = \
	"(2, {'scope': 'node', 'count': 2, 'type': 'a100'}, {'kind': 'per_node', 'mb': 4096})" ] ||
	fail "jobspec: $(req_eval 'd["jobspec"]')"
[ "$(field "$id" Partition)" = burst ] || fail "partition $(field "$id" Partition)"
case $(field "$id" NumNodes) in 1 | 1-1) ;; *) fail "NumNodes $(field "$id" NumNodes)" ;; esac
case $(field "$id" NumCPUs) in 1 | 1-1) ;; *) fail "NumCPUs $(field "$id" NumCPUs)" ;; esac
[ "$(field "$id" NumTasks)" = 1 ] || fail "NumTasks $(field "$id" NumTasks)"
[ "$(field "$id" TimeLimit)" = 00:17:00 ] || fail "TimeLimit $(field "$id" TimeLimit)"
[ "$(field "$id" MinMemoryNode)" = 64M ] || fail "memory $(field "$id" MinMemoryNode)"
scontrol show job "$id" | grep -v AdminComment | grep -i -E "tres|gres" |
	grep -i gpu &&
	fail "the proxy still asks for GPUs"
scontrol write batch_script "$id" - >proxy.sh
[ "$(cat proxy.sh)" = "$(printf '#!/bin/sh\n# hpcbridge proxy\necho proxy-of-%s' "$hb")" ] ||
	fail "batch script: $(cat proxy.sh)"
[ "$(line_field "$id" Comment)" = "hpcbridge:$hb kubernetes; user-note" ] ||
	fail "comment '$(line_field "$id" Comment)'"
ac=$(line_field "$id" AdminComment)
case $ac in
"hpcbridge:$hb target=kubernetes orig: nodes=2 "*"cpus_per_task=4 "*"mem=4096M/node tres_per_node=gres:gpu:a100:2 time=30") ;;
*) fail "admin_comment '$ac'" ;;
esac
wait_done "$id"
grep -qx "proxy-of-$hb" "slurm-$id.out" || fail "proxy output: $(cat "slurm-$id.out")"
ok "target kubernetes: burst partition, 1 CPU, the reply's script and time limit, no GPUs, original kept"

# The same for a user who is not an operator (admin_comment is set by the
# plugin, not by the user).
nobody_dir=$tmp/nobody
mkdir -p "$nobody_dir"
chmod 1777 "$nobody_dir"
cp gpu.sh "$nobody_dir/gpu.sh"
chmod 644 "$nobody_dir/gpu.sh"
(cd "$nobody_dir" && setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups \
	env SLURM_CONF="$SLURM_CONF" sbatch --hold gpu.sh) >out 2>err ||
	fail "sbatch as nobody: $(cat err)"
id=$(jobid_of out)
[ "$(req_eval 'd.get("user"), d["uid"]')" = "(None, $(id -u nobody))" ] ||
	fail "nobody's request: $(req_eval 'd.get("user"), d.get("uid")')"
[ "$(field "$id" Partition)" = burst ] || fail "nobody's job: partition $(field "$id" Partition)"
line_field "$id" AdminComment | grep -q "^hpcbridge:hb-[0-9]* target=kubernetes orig:" ||
	fail "nobody's admin_comment '$(line_field "$id" AdminComment)'"
scancel "$id"
ok "a non-operator's job is rewritten and tagged the same way"

# ------------------------------------------------------------ fail-open
cat >plain.sh <<'EOF'
#!/bin/sh
#SBATCH -N 2 --gres=gpu:a100:1 -t 5
echo plain
EOF
# untouched NAME: submit plain.sh held as NAME; check the job is exactly
# what Slurm makes of it without the plugin, and that slurmctld logged one
# line about it.  Sets $elapsed (seconds, as a decimal) and $id.
untouched() {
	local name=$1 t0 t1
	t0=$(date +%s.%N)
	sbatch --hold -J "$name" plain.sh >out 2>err || fail "sbatch ($name): $(cat err)"
	t1=$(date +%s.%N)
	elapsed=$(calc "$t1 - $t0")
	id=$(jobid_of out)
	[ "$(field "$id" Partition)" = debug ] || fail "$name: partition $(field "$id" Partition)"
	case $(field "$id" NumNodes) in
	2 | 2-2) ;;
	*) fail "$name: NumNodes $(field "$id" NumNodes)" ;;
	esac
	[ "$(field "$id" TimeLimit)" = 00:05:00 ] || fail "$name: TimeLimit"
	scontrol show job "$id" | grep -q "TresPerNode=gres:gpu:a100:1" ||
		fail "$name: GPU request lost"
	case $(line_field "$id" AdminComment) in
	"" | "(null)") ;;
	*) fail "$name: admin_comment set: $(line_field "$id" AdminComment)" ;;
	esac
	scontrol write batch_script "$id" - | cmp -s - plain.sh ||
		fail "$name: batch script changed"
	grep -q "runs on Kubernetes" err && fail "$name: user told of Kubernetes"
	sleep 0.2 # the log line is written before the reply, but be sure
	[ "$(grep -c "job_submit/hpcbridge: job '$name' of uid 0 left on Slurm" "$ctld_log")" = 1 ] ||
		fail "$name: log lines: $(grep "'$name'" "$ctld_log")"
	[ "$(grep -c "'$name'" "$ctld_log")" = 1 ] ||
		fail "$name: more than one line about the job"
	scancel "$id"
}

echo refuse >"$mode"
untouched fo-refuse
grep "'fo-refuse'" "$ctld_log" | grep -q "daemon refused: EPERM: fake refusal" ||
	fail "refusal not logged with its reason"
ok "an ok:false reply leaves the job untouched, one log line"

echo garbage >"$mode"
untouched fo-garbage
ok "garbage leaves the job untouched, one log line"

echo badjson >"$mode"
untouched fo-badjson
ok "a payload that is not JSON leaves the job untouched, one log line"

# A daemon that reads the request and never answers.
baseline_t0=$(date +%s.%N)
echo slurm >"$mode"
sbatch --hold --wrap=true >out 2>err || fail "sbatch: $(cat err)"
baseline=$(calc "$(date +%s.%N) - $baseline_t0")
scancel "$(jobid_of out)"
echo hang >"$mode"
n0=$(nreq)
untouched fo-hang
[ "$(nreq)" = $((n0 + 1)) ] || fail "the hung daemon did not get the request"
grep "'fo-hang'" "$ctld_log" | grep -q "ETIMEDOUT" || fail "hang not logged as a timeout"
echo "# sbatch: ${baseline}s answered, ${elapsed}s with a daemon that never answers (timeout ${timeout_ms} ms)"
[ "$(calc "$elapsed < 2.0")" = 1 ] || fail "sbatch took ${elapsed}s with a hung daemon"
[ "$(calc "$elapsed >= $timeout_ms / 1000 - 0.05")" = 1 ] ||
	fail "sbatch returned in ${elapsed}s: did the plugin wait at all?"
ok "a daemon that never answers costs sbatch the timeout (${elapsed}s < 2s), job untouched"

# A stopped daemon: the kernel accepts the connection and the request, no
# one reads it.
echo slurm >"$mode"
kill -STOP "$fpid"
untouched fo-stopped
kill -CONT "$fpid"
[ "$(calc "$elapsed < 2.0")" = 1 ] || fail "sbatch took ${elapsed}s with a stopped daemon"
ok "a stopped daemon costs sbatch the timeout (${elapsed}s < 2s), job untouched"

# An impostor: the same fake, answering "kubernetes" at once, but
# listening as nobody (bound by root in root's directory, so only the
# listener's SO_PEERCRED uid gives it away).  Nothing it says is acted on
# and no request reaches it: the job is untouched, one log line names the
# uid.
stop_fake
echo "kubernetes burst 17" >"$mode"
n0=$(nreq)
rm -f "$sock"
nobody_uid=$(id -u nobody)
python3 - "$sock" "$nobody_uid" "$(id -g nobody)" "$tmp/impostor.log" \
	>"$tmp/impostor.out" 2>&1 <<'PY' &
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1])
os.chmod(sys.argv[1], 0o666)
log = open(sys.argv[4], "a")
os.setgroups([])
os.setgid(int(sys.argv[3]))
os.setuid(int(sys.argv[2]))
s.listen(8)
print("ready", flush=True)
reply = b'{"ok":true,"id":"hb-impostor","target":"kubernetes","reason":"x","proxy":{"partition":"burst","script":"#!/bin/sh\\necho impostor\\n","time_limit_min":1,"cpus":1,"mem_mb":64}}'
while True:
    c, _ = s.accept()
    c.sendall(b"HB\x01\x02" + len(reply).to_bytes(4, "big") + reply)
    c.settimeout(1)
    try:
        got = c.recv(65536)
    except OSError:
        got = b""
    log.write("connection, %d request bytes\n" % len(got))
    log.flush()
    c.close()
PY
fpid=$!
for _ in $(seq 1 50); do
	grep -q ready "$tmp/impostor.out" 2>/dev/null && break
	sleep 0.1
done
grep -q ready "$tmp/impostor.out" || fail "impostor did not start: $(cat "$tmp/impostor.out")"
untouched fo-impostor
grep "'fo-impostor'" "$ctld_log" |
	grep -q "EPERM (.*served by uid $nobody_uid (pid [0-9]*), expected uid 0 (root)" ||
	fail "impostor not logged with its uid: $(grep "'fo-impostor'" "$ctld_log")"
grep -q "request bytes" "$tmp/impostor.log" 2>/dev/null &&
	! grep -q ", 0 request bytes" "$tmp/impostor.log" &&
	fail "the impostor got a request: $(cat "$tmp/impostor.log")"
[ "$(nreq)" = "$n0" ] || fail "the request log grew"
kill -TERM "$fpid" 2>/dev/null || true
wait "$fpid" 2>/dev/null || true
fpid=""
rm -f "$sock"
echo slurm >"$mode"
ok "a socket served by another uid (nobody) is refused: job untouched, one log line naming the uid"

# No daemon at all.
stop_fake
untouched fo-nodaemon
grep "'fo-nodaemon'" "$ctld_log" | grep -q "EUNAVAIL" || fail "no daemon not logged as EUNAVAIL"
[ "$(calc "$elapsed < 2.0")" = 1 ] || fail "sbatch took ${elapsed}s without a daemon"
ok "no daemon: sbatch succeeds at once (${elapsed}s), job untouched, one log line"

# A job name cannot split the log line.
sbatch --hold -J "$(printf 'fo\nsplit')" plain.sh >out 2>err || fail "sbatch: $(cat err)"
grep -q "job 'fo?split' of uid 0 left on Slurm" "$ctld_log" ||
	fail "name with a newline: $(grep -A1 "job 'fo" "$ctld_log" | tail -n 2)"
grep -q "^split' of uid" "$ctld_log" && fail "a job name split the log line"
scancel "$(jobid_of out)"
ok "a job name with a newline stays on one log line"

# And Slurm still runs jobs: an unheld job completes.
sbatch --wrap='echo still-running' >out 2>err || fail "sbatch: $(cat err)"
id=$(jobid_of out)
wait_done "$id"
grep -qx still-running "slurm-$id.out" || fail "output $(cat "slurm-$id.out")"
ok "without the daemon jobs run on Slurm as before"

# ------------------------------------------------------------ hpcbridged
# The real daemon, with the policy made from placement.partitions: gpu to
# kubernetes, the proxy gets the time limit plus slurm.proxy_grace_min (5).
hbd=$build/bin/hpcbridged
hbcall=$build/tests/hbcall
if [ -x "$hbd" ] && [ -x "$hbcall" ]; then
	"$hbd" --config "$tmp/hpcbridge.yaml" --foreground 2>"$tmp/hbd.log" &
	fpid=$!
	for _ in $(seq 1 100); do
		"$hbcall" "$sock" '{"op":"ping"}' >/dev/null 2>&1 && break
		kill -0 "$fpid" 2>/dev/null || fail "hpcbridged: $(cat "$tmp/hbd.log")"
		sleep 0.05
	done
	sbatch --hold -p gpu -t 30 -N 2 --gres=gpu:h100:1 -J real-k8s \
		--wrap='nvidia-smi' >out 2>err || fail "sbatch: $(cat err)"
	id=$(jobid_of out)
	hb=$(sed -n 's/^sbatch: hpcbridge: job \(hb-[0-9a-z-]*\) runs on Kubernetes.*/\1/p' err)
	[ -n "$hb" ] || fail "hpcbridged: not told of Kubernetes: $(cat err) $(cat "$tmp/hbd.log")"
	[ "$(field "$id" Partition)" = burst ] || fail "partition $(field "$id" Partition)"
	[ "$(field "$id" TimeLimit)" = 00:35:00 ] || fail "TimeLimit $(field "$id" TimeLimit)"
	[ "$(scontrol write batch_script "$id" -)" = "$(printf "#!/bin/sh\nexec '/usr/bin/hpcbridge' shadow --socket '%s' %s" "$sock" "$hb")" ] ||
		fail "proxy script: $(scontrol write batch_script "$id" -)"
	line_field "$id" AdminComment | grep -q "^hpcbridge:$hb target=kubernetes orig: partition=gpu nodes=2 " ||
		fail "admin_comment '$(line_field "$id" AdminComment)'"
	"$hbcall" "$sock" "{\"op\":\"status\",\"id\":\"$hb\"}" >status.json ||
		fail "status $hb: $(cat status.json)"
	grep -q '"target":"kubernetes"' status.json || fail "status: $(cat status.json)"
	# the plugin sent the uid only; the daemon resolved the name
	grep -q '"user":"root"' status.json || fail "status: no user: $(cat status.json)"
	scancel "$id"
	sbatch --hold -t 5 -J real-slurm --wrap=true >out 2>err || fail "sbatch: $(cat err)"
	id=$(jobid_of out)
	[ "$(field "$id" Partition)" = debug ] || fail "partition $(field "$id" Partition)"
	line_field "$id" AdminComment | grep -q "^hpcbridge:hb-[0-9a-z-]* target=slurm$" ||
		fail "admin_comment '$(line_field "$id" AdminComment)'"
	scancel "$id"
	stop_fake
	ok "with hpcbridged: gpu becomes a proxy in burst (time limit + grace), the decision is stored; debug stays, tagged"
else
	echo "# hpcbridged or hbcall not built: the real-daemon check is skipped"
fi

echo "plugins.test.sh: $passed checks passed"
