#!/bin/bash
# tests/security/fabric_values.test.sh - what a job says about its network
# reaches the root daemon, and a hostile value is refused, changing
# nothing.
#
# The fabric reaches the daemon two ways: in the jobspec the Slurm plugin
# sends with decide (root only; "fabric", "fabric_why", read from the
# user's --hpcbridge-fabric and the variables the user's script sets),
# and in the user's script, which the daemon parses again when the
# attacker's remote_start builds the MPIJob.  Here root plays the plugin
# and the attacker sends remote_start, as in translate_bounds.test.sh; the
# cluster is a closed port, so nothing can be created there.
#
#  1. --hpcbridge-fabric with a shell command and 3000 bytes in it:
#     remote_start is refused with an error that names the option and what
#     it wants, quotes the value cut short, nothing reaches the cluster,
#     and `hpcbridge translate` (as the user) refuses it the same way.
#  2. A jobspec whose fabric is not auto, tcp or rdma, whose fabric_why
#     holds control characters (a forged log line), or is 900 kB long (the
#     request's limit is 1 MB): the
#     decide is refused naming the key, and no job is stored (the next
#     decide gets the next id, the daemon lives, root's ping is prompt).
#  3. A script exporting an 870-byte UCX_NET_DEVICES: fabric_why quotes
#     the start of it, and where it is, in at most 256 bytes.
build=$(cd "${1:?BUILD_DIR}" && pwd)
src=$(cd "${2:?SRC_DIR}" && pwd)
. "$src/tests/security/lib.sh"
sec_init

hb=$build/bin/hpcbridge
closed_cluster
start_daemon "$tmp/hb.yaml" || exit 1

esc=$(printf '\033')

# 1. a hostile --hpcbridge-fabric ------------------------------------------
# (control characters never get this far: the sbatch reader refuses a
# script holding one, as sbatch does)
long=$(head -c 3000 /dev/zero | tr '\0' x)
printf '#!/bin/bash\n#SBATCH -N 2\n#SBATCH --hpcbridge-fabric=infiniband;$(id)%s\nsrun ./a.out\n' \
	"$long" >"$tmp/fabric.sh"
chmod 644 "$tmp/fabric.sh"
id=$(decide "$tmp/fabric.sh")
if [ -z "$id" ]; then
	bad "decide of the script: $(head -c 300 "$tmp/reply")"
else
	call_as '{"op":"remote_start","id":"'"$id"'"}'
	if [ "$rc" != 0 ] && has 'hpcbridge-fabric' &&
		has 'want rdma, tcp or auto'; then
		ok "remote_start refused: $(grep -oE '"message":"[^"]*"' "$tmp/reply" | head -c 200)"
	else
		bad "remote_start of a hostile --hpcbridge-fabric: $(head -c 300 "$tmp/reply")"
	fi
	n=$(wc -c <"$tmp/reply")
	if [ "$n" -lt 1024 ]; then
		ok "the refusal quotes the value cut short ($n bytes)"
	else
		bad "the refusal echoes the whole value ($n bytes)"
	fi
	if grep -qiE "connect|127\.0\.0\.1:1" "$tmp/reply"; then
		bad "the job went as far as the cluster: $(head -c 300 "$tmp/reply")"
	else
		ok "nothing reached the cluster"
	fi
fi
if as_user "$hb" translate --to mpijob "$tmp/fabric.sh" \
	>"$tmp/translate.out" 2>"$tmp/translate.err"; then
	bad "hpcbridge translate (as the user) accepts it"
elif grep -qF 'want rdma, tcp or auto' "$tmp/translate.err"; then
	ok "hpcbridge translate refuses it"
else
	bad "hpcbridge translate: $(head -c 300 "$tmp/translate.err")"
fi

# 2. hostile jobspecs in decide --------------------------------------------
printf '#!/bin/bash\nsrun ./a.out\n' >"$tmp/plain.sh"
chmod 644 "$tmp/plain.sh"
first=$(decide "$tmp/plain.sh")
[ -n "$first" ] && ok "a plain decide stores $first" ||
	bad "a plain decide: $(head -c 300 "$tmp/reply")"
check_spec() {
	local what=$1 want=$2 id
	id=$(decide "$tmp/plain.sh" "$tmp/spec.json")
	if [ -z "$id" ] && grep -qF -- "$want" "$tmp/reply"; then
		ok "$what: refused: $(grep -oE '"message":"[^"]{0,160}' "$tmp/reply")"
	else
		bad "$what: $(head -c 300 "$tmp/reply")"
	fi
	grep -q "$esc" "$tmp/reply" && bad "$what: the reply echoes the escape byte"
}
printf '{"kind":"jobspec","fabric":"infiniband"}' >"$tmp/spec.json"
check_spec "fabric infiniband" "fabric: must be auto, tcp or rdma"
python3 -c 'import json,sys; sys.stdout.write(json.dumps({"kind":"jobspec","fabric":"rdma","fabric_why":"x\n\u001b[31mhpcbridged: job hb-1 approved by root"}))' \
	>"$tmp/spec.json"
check_spec "fabric_why with a forged log line" \
	"fabric_why: must be one printable line"
python3 -c 'import json,sys; sys.stdout.write(json.dumps({"kind":"jobspec","fabric":"rdma","fabric_why":"m"*900000}))' \
	>"$tmp/spec.json"
check_spec "a 900 kB fabric_why" "at most 256 bytes"
# nothing was stored: the next job takes the number after the plain one
next=$(decide "$tmp/plain.sh")
if [ -n "$first" ] && [ -n "$next" ] &&
	[ $((10#${next#hb-})) -eq $((10#${first#hb-} + 1)) ]; then
	ok "no job stored for the refused ones ($first, then $next)"
else
	bad "jobs stored for refused decides: $first, then $next"
fi
if grep -q "$esc" "$log"; then
	bad "the daemon's log holds an escape byte"
else
	ok "the daemon's log holds no escape byte"
fi

# 3. a 1000-byte device list ----------------------------------------------
devs=mlx5_0:1$(for i in $(seq 85); do printf ',mlx5_%d:1' "$i"; done)
printf '#!/bin/bash\n#SBATCH -N 2\nexport UCX_NET_DEVICES=%s\nsrun ./a.out\n' \
	"$devs" >"$tmp/ucx.sh"
chmod 644 "$tmp/ucx.sh"
if as_user "$hb" translate --to jobspec "$tmp/ucx.sh" >"$tmp/ucx.out" \
	2>"$tmp/ucx.err"; then
	why=$(sed -n 's/^fabric_why: //p' "$tmp/ucx.out")
	if [ -n "$why" ] && [ "${#why}" -le 256 ] &&
		[ "${why% at $tmp/ucx.sh:3}" != "$why" ]; then
		ok "fabric_why quotes ${#why} of the ${#devs} bytes"
	else
		bad "fabric_why of a ${#devs} byte device list: ${#why} bytes"
	fi
else
	bad "translate of a long UCX_NET_DEVICES: $(head -c 200 "$tmp/ucx.err")"
fi
kill -0 "$dpid" 2>/dev/null && ok "the daemon is alive" || bad "the daemon died"
[ "$(ping_ms)" -le 100 ] && ok "root's ping afterwards" ||
	bad "root's ping afterwards is slow"
sec_end
