#!/bin/bash
# daemon_array_task.test.sh - remote_start's array_task must be one of the
# job's own array.  Before the fix any task from 0 to 4,000,000 was taken
# for any burst job, array or not: a user ran as many copies of a job as
# it liked outside Slurm's queue, limits and accounting.  The damage
# checked: nothing is created in the backend for a refused task.  Also:
# root's decide may name the uid alone (the plugin does not look names
# up under slurmctld's lock); the daemon finds the user.
# usage: daemon_array_task.test.sh BUILD_DIR SRC_DIR
build=$1
src=$2
# shellcheck source=tests/security/lib.sh
. "$src/tests/security/lib.sh"
sec_init

local_config
start_daemon "$tmp/cfg.yaml" || exit 1
remote_has() { [ -n "$(find "$tmp/remote" -name "*$1*" 2>/dev/null)" ]; }

# a job that is not an array
call '{"op":"decide","user":"'"$user"'","uid":'"$uid"',"target":"kubernetes",
  "script":"#!/bin/sh\nsleep 30\n","cwd":"/","env":["A=1"]}'
one=$(grep -oE '"id":"hb-[0-9]+"' "$tmp/reply" | cut -d'"' -f4)
[ -n "$one" ] && ok "decided $one" || bad "decide: $(cat "$tmp/reply")"

for t in 0 5 3999999; do
	call_as '{"op":"remote_start","id":"'"$one"'","array_task":'"$t"'}'
	[ "$rc" = 1 ] && has '"code":"EINVAL"' && has 'array_task' &&
		ok "task $t of a job that is no array refused" ||
		bad "task $t of a job that is no array: $(cat "$tmp/reply")"
	remote_has "$one-t$t" && bad "task $t was created in the backend" ||
		ok "nothing created for task $t"
done

# an array job: its own tasks only
call '{"op":"decide","user":"'"$user"'","uid":'"$uid"',"target":"kubernetes",
  "script":"#!/bin/sh\n#SBATCH --array=0-2\nsleep 30\n","cwd":"/",
  "env":["A=1"]}'
arr=$(grep -oE '"id":"hb-[0-9]+"' "$tmp/reply" | cut -d'"' -f4)
call_as '{"op":"remote_start","id":"'"$arr"'","array_task":1}'
[ "$rc" = 0 ] && ok "task 1 of --array=0-2 starts" ||
	bad "task 1 of the array: $(cat "$tmp/reply")"
for t in 3 1000; do
	call_as '{"op":"remote_start","id":"'"$arr"'","array_task":'"$t"'}'
	[ "$rc" = 1 ] && has 'array_task' && has "not in job $arr's array" &&
		ok "task $t of --array=0-2 refused" ||
		bad "task $t of --array=0-2: $(cat "$tmp/reply")"
	remote_has "$arr-t$t" && bad "task $t was created in the backend" ||
		ok "nothing created for task $t"
done
# the array as Slurm read it (the plugin's jobspec) wins over the script
call '{"op":"decide","user":"'"$user"'","uid":'"$uid"',"target":"kubernetes",
  "script":"#!/bin/sh\nsleep 30\n","cwd":"/","env":["A=1"],
  "jobspec":{"array":{"spec":"4,8","ranges":[[4,4,1],[8,8,1]]}}}'
js=$(grep -oE '"id":"hb-[0-9]+"' "$tmp/reply" | cut -d'"' -f4)
call_as '{"op":"remote_start","id":"'"$js"'","array_task":6}'
[ "$rc" = 1 ] && has 'array_task' && ok "task 6 of 4,8 refused" ||
	bad "task 6 of 4,8: $(cat "$tmp/reply")"
call_as '{"op":"remote_start","id":"'"$js"'","array_task":8}'
[ "$rc" = 0 ] && ok "task 8 of 4,8 starts" || bad "task 8 of 4,8: $(cat "$tmp/reply")"
# The Slurm ids the shadow reports (for the job's own environment) are
# the user's to give: anything but a Slurm job id is refused, naming the
# field, and nothing is started.
call '{"op":"decide","user":"'"$user"'","uid":'"$uid"',"target":"kubernetes",
  "script":"#!/bin/sh\n#SBATCH --array=0-1\nsleep 30\n","cwd":"/",
  "env":["A=1"]}'
ids=$(grep -oE '"id":"hb-[0-9]+"' "$tmp/reply" | cut -d'"' -f4)
for v in '1;touch /tmp/pwn' '$(id)' '-5' '0' '99999999999999999' '12 3'; do
	for k in slurm_job_id slurm_array_job_id; do
		call_as '{"op":"remote_start","id":"'"$ids"'","array_task":0,
		  "'"$k"'":"'"$v"'"}'
		[ "$rc" = 1 ] && has '"code":"EINVAL"' && has "$k" &&
			ok "$k '$v' refused" ||
			bad "$k '$v': $(cat "$tmp/reply")"
	done
done
remote_has "$ids-t0" && bad "a task started with a hostile Slurm id" ||
	ok "nothing started for the hostile Slurm ids"
[ ! -e /tmp/pwn ] && ok "nothing ran" || { bad "/tmp/pwn exists"; rm -f /tmp/pwn; }

# decided by uid alone: the daemon finds the name (on a worker)
call '{"op":"decide","uid":'"$uid"',"partition":"x"}'
byuid=$(grep -oE '"id":"hb-[0-9]+"' "$tmp/reply" | cut -d'"' -f4)
call '{"op":"status","id":"'"$byuid"'"}'
[ -n "$byuid" ] && has "\"user\":\"$user\"" &&
	ok "decide by uid alone: the daemon found the user's name" ||
	bad "decide by uid alone: $(head -c 300 "$tmp/reply")"
for p in $(pgrep -u "$uid" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
kill -0 "$dpid" 2>/dev/null && ok "daemon alive" || bad "daemon died"
sec_end
