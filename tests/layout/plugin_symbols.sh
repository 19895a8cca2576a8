#!/usr/bin/env bash
# plugin_symbols.sh BUILD - what the Slurm plugins' shared objects carry.
#
# slurmctld and sbatch dlopen() these, so they must export only the
# symbols Slurm looks up, and carry the translators, the protocol client
# and the configuration table but nothing of the daemon: no placement,
# policy, side, Kubernetes client, Slurm client or store code.  The
# forbidden names are read from those parts' own libraries, so a function
# added there is checked without touching this file.
set -euo pipefail
build=$1
lib=$build/lib
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# Functions the daemon-side parts define (global text symbols).
forbidden=$(for a in hbplacement hbsides hbdaemon hbkube hbslurmc hbstate; do
	nm --defined-only "$lib/lib$a.a" 2>/dev/null | awk '$2 == "T" { print $3 }'
done | sort -u)
[ "$(wc -l <<<"$forbidden")" -gt 100 ] ||
	bad "only $(wc -l <<<"$forbidden") daemon-side functions found in $lib"
# Functions of the parts the plugins do link, to prove nm reads the .so.
wanted=(hb_proto_call hb_config_parse hb_jobspec_init hb_err_set hb_place_job
	hb_snapfile_open)

check() { # SO EXPORTED...
	local so=$1; shift
	[ -f "$so" ] || { bad "$so missing"; return; }
	local exp want
	exp=$(nm -D --defined-only "$so" | awk '{ print $3 }' | sort)
	want=$(printf '%s\n' "$@" | sort)
	[ "$exp" = "$want" ] ||
		bad "$(basename "$so") exports: $(echo $exp) (want: $(echo $want))"
	local all leaked
	all=$(nm "$so" | awk 'NF == 3 { print $3 }' | sort -u)
	leaked=$(comm -12 <(echo "$all") <(echo "$forbidden"))
	[ -z "$leaked" ] ||
		bad "$(basename "$so") carries daemon-side code: $(echo $leaked | head -c 400)"
	echo "$(basename "$so"): $(wc -l <<<"$all") symbols, exports $(echo $exp)"
}

check "$build/slurm-plugin/job_submit_hpcbridge.so" \
	init fini job_submit job_modify plugin_name plugin_type plugin_version
check "$build/slurm-plugin/spank_hpcbridge.so" \
	slurm_spank_init plugin_name plugin_type plugin_version \
	spank_plugin_version
js=$(nm "$build/slurm-plugin/job_submit_hpcbridge.so" | awk '{ print $3 }')
for w in "${wanted[@]}"; do
	grep -qx "$w" <<<"$js" || bad "job_submit_hpcbridge.so lacks $w"
done
[ $fail = 0 ] && echo "plugin_symbols: ok"
exit $fail
