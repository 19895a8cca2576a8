#!/bin/bash
# tests/security/translate_bounds.test.sh - a user's script, parsed by the
# root daemon, neither freezes it nor slips past the bounds.
#
# How a user's script reaches the daemon's parser: sbatch hands it to the
# job_submit plugin, whose decide (root only) stores it with the job; the
# proxy's shadow then sends remote_start as the job's user, and on the
# kubernetes backend the daemon parses the stored script again and builds
# the MPIJob (backend_kube.c build()).  Here root plays the plugin (decide
# for the user, with the user's script) and the attacker sends
# remote_start.  No cluster is needed: the parse comes before any call to
# the API server, which points at a closed port.
#
#  1. A PBS script with select=4294967295:ncpus=4294967295, and one with a
#     walltime of 4294967295 hours, are refused with an error that names
#     the line and the field, as the sbatch parser refuses its own; nothing
#     reaches the cluster.  `hpcbridge translate`, which runs as the user,
#     refuses them the same way.
#  2. A 1 MB script of --export names (about 140k of them; the duplicate
#     check was quadratic and held the loop for seconds): root's ping,
#     sent while the daemon works on it (on a worker, not the loop), is
#     answered within 100 ms, and the daemon lives.
#
# Before the fix: the PBS jobs get as far as the API server ("cannot start
# ... couldn't connect"), translate prints an MPIJob with 4294967295
# workers, and root's ping waits for the whole quadratic check.
build=$(cd "${1:?BUILD_DIR}" && pwd)
src=$(cd "${2:?SRC_DIR}" && pwd)
. "$src/tests/security/lib.sh"
sec_init

hb=$build/bin/hpcbridge
closed_cluster
start_daemon "$tmp/hb.yaml" || exit 1

# 1. PBS bounds ------------------------------------------------------------
check_pbs() {
	local what=$1 file=$2 want=$3 id
	id=$(decide "$file")
	[ -n "$id" ] || {
		bad "$what: decide: $(head -c 300 "$tmp/reply")"
		return
	}
	call_as '{"op":"remote_start","id":"'"$id"'"}'
	if [ "$rc" != 0 ] && grep -qF -- "$want" "$tmp/reply"; then
		ok "$what: the daemon refuses it: $(grep -oE '"message":"[^"]*"' "$tmp/reply" | head -c 200)"
	else
		bad "$what: the daemon's reply does not name the bound: $(head -c 300 "$tmp/reply")"
	fi
	rm -f "$tmp/translate.out"
	if as_user "$hb" translate --to mpijob "$file" >"$tmp/translate.out" \
		2>"$tmp/translate.err"; then
		bad "$what: hpcbridge translate (as the user) accepts it: $(grep -m1 -E 'replicas|activeDeadline' "$tmp/translate.out")"
	elif grep -qF -- "$want" "$tmp/translate.err"; then
		ok "$what: hpcbridge translate refuses it"
	else
		bad "$what: hpcbridge translate: $(head -c 300 "$tmp/translate.err")"
	fi
}

printf '#!/bin/bash\n#PBS -N big\n#PBS -l select=4294967295:ncpus=4294967295\nmpirun ./a.out\n' \
	>"$tmp/select.pbs"
printf '#!/bin/bash\n#PBS -N long\n#PBS -l walltime=4294967295:00:00\nmpirun ./a.out\n' \
	>"$tmp/wall.pbs"
chmod 644 "$tmp/select.pbs" "$tmp/wall.pbs"
check_pbs "select=4294967295:ncpus=4294967295" "$tmp/select.pbs" \
	":3: -l select: chunk count: number '4294967295' is too large"
check_pbs "walltime 4294967295 hours" "$tmp/wall.pbs" \
	":3: -l walltime: time '4294967295:00:00' is too large"

# 2. a 1 MB --export script ------------------------------------------------
python3 - "$tmp/export.sh" <<'EOF'
import sys
names, n, i = [], 0, 0
while n < 1000000 - 64:
    s = "V%d" % i
    names.append(s)
    n += len(s) + 1
    i += 1
open(sys.argv[1], "w").write("#!/bin/bash\n#SBATCH --export=" +
                             ",".join(names) + "\nsrun ./a.out\n")
EOF
id=$(decide "$tmp/export.sh")
[ -n "$id" ] && ok "a $(stat -c %s "$tmp/export.sh") byte --export script stored as $id" ||
	bad "decide of the export script: $(head -c 300 "$tmp/reply")"
# root's pings on a kept connection (as the plugin keeps one), every
# 10 ms for 3 s, while the attacker's remote_start is worked on
tools=${HB_TOOLS:-$build/tests} # the pre-fix build has no hbping
"$tools/hbping" --reuse --timeout 5000 "$sock" 300 10 >"$tmp/ping.out" \
	2>&1 &
ppid=$!
pids="$pids $ppid"
sleep 0.1
as_user "$hbcall" --timeout 120000 "$sock" \
	'{"op":"remote_start","id":"'"$id"'"}' >"$tmp/start.reply" 2>&1 &
spid=$!
pids="$pids $spid"
wait "$ppid"
kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null
# p99 5 ms is the target (docs/benchmarks.md); the test allows for a
# sanitizer build on a loaded machine, far below the seconds of a loop
# that parses the script itself
max=$(sed -n 's/.* max=\([0-9]*\).*/\1/p' "$tmp/ping.out")
if grep -q 'ok=300 ' "$tmp/ping.out" && [ -n "$max" ] && [ "$max" -lt 100 ]; then
	ok "root's pings while the daemon parsed it: $(cat "$tmp/ping.out")"
else
	bad "root's pings while the daemon parsed the 1 MB --export script: $(cat "$tmp/ping.out") (every one answered, max under 100 ms)"
fi
kill -0 "$dpid" 2>/dev/null && ok "the daemon is alive" || bad "the daemon died"
grep -q '"ok":false' "$tmp/start.reply" &&
	ok "remote_start answered: $(grep -oE '"message":"[^"]*"' "$tmp/start.reply" | head -c 160)" ||
	ok "remote_start answered: $(head -c 160 "$tmp/start.reply")"
[ "$(ping_ms)" -le 100 ] && ok "root's ping afterwards" ||
	bad "root's ping afterwards is slow"

sec_end
