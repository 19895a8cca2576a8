#!/bin/bash
# plugin_nss.test.sh - the job_submit plugin makes no name lookup under
# slurmctld's job write lock.  job_submit() runs with that lock held and
# outside the plugin's own timeout: a user lookup there (getpwuid_r for
# the job's user name) waits on LDAP or SSSD, and a slow directory stalls
# slurmctld for everyone.  The plugin now sends the uid alone and the
# daemon resolves the name on a worker.
#
# Checked two ways:
#  1. the plugin does not import getpwuid/getpwuid_r at all (the only
#     lookup left, of daemon.user by name, is getpwnam_r in init(),
#     before any job);
#  2. the daemon answers a decide that carries a uid and no "user" (what
#     the plugin now sends; integration/plugins.test.sh checks the
#     plugin's request itself): a known uid gets its name, a uid with no
#     passwd entry its decimal number, as Slurm shows such a user.
# usage: plugin_nss.test.sh BUILD_DIR SRC_DIR
build=$1
src=$2
# shellcheck source=tests/security/lib.sh
. "$src/tests/security/lib.sh"
sec_init

so=$build/slurm-plugin/job_submit_hpcbridge.so
imports=$(nm -D --undefined-only "$so" 2>&1)
if [ -z "$imports" ]; then
	bad "cannot list the imports of $so"
elif [[ "$imports" == *getpwuid* ]]; then
	bad "the plugin looks users up by uid: $(grep -o 'getpwuid[_a-z@.0-9A-Z]*' <<<"$imports" | tr '\n' ' ')"
else
	ok "the plugin imports no getpwuid"
fi

# 2. the daemon names a uid the plugin sent alone: a uid with no passwd
# entry is kept in decimal, a known one by its name
local_config
start_daemon "$tmp/cfg.yaml" || exit 1
free_uid=59999
while getent passwd "$free_uid" >/dev/null; do free_uid=$((free_uid + 1)); done
call '{"op":"decide","uid":'"$free_uid"',"partition":"debug"}'
id=$(grep -oE '"id":"hb-[0-9]+"' "$tmp/reply" | cut -d'"' -f4)
[ "$rc" = 0 ] && [ -n "$id" ] && ok "a decide with a uid alone is answered ($id)" ||
	bad "decide with a uid alone: $(cat "$tmp/reply")"
[ "$(sqlite3 "$db" "SELECT user FROM jobs WHERE id='$id'")" = "$free_uid" ] &&
	ok "a uid without a passwd entry is named in decimal" ||
	bad "the name of uid $free_uid: $(sqlite3 "$db" "SELECT user FROM jobs WHERE id='$id'")"
call '{"op":"decide","uid":'"$uid"',"partition":"debug"}'
id=$(grep -oE '"id":"hb-[0-9]+"' "$tmp/reply" | cut -d'"' -f4)
[ "$(sqlite3 "$db" "SELECT user FROM jobs WHERE id='$id'")" = "$user" ] &&
	ok "the daemon resolves uid $uid to $user" ||
	bad "the name of uid $uid: $(cat "$tmp/reply")"
ms=$(ping_ms)
[ "$ms" -lt 1000 ] && ok "root's ping answered in $ms ms" ||
	bad "root's ping: $ms ms"
sec_end
