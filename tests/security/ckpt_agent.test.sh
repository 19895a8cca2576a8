#!/bin/bash
# ckpt_agent.test.sh - what a user can do to the daemon through its own
# checkpoint directory.  Before a burst job starts, root pushes the job's
# directory to S3 and, when it ends, pulls the checkpoint back into it;
# the filesystem's part is done by the agent, which root runs as the
# user (tests/integration/ckptagent.c drives it as the daemon does).  The
# user plants, in the directory it names:
#
#   (a) a link to /etc/shadow, a FIFO, a link to a directory of root's:
#       the agent's scan lists none of them, and asked for the link it
#       passes no descriptor; /etc/shadow's bytes never reach root's side;
#   (b) the directory itself as a link to a root-only directory: the scan
#       fails (the agent is the user) and lists nothing of it;
#   (c) the directory as a link into /etc, or under a root-owned parent:
#       a pull fails, and nothing is written there (canary intact, no new
#       file, no ".NAME.hbpart");
#   (d) a pull into its own directory: every file is the user's, not
#       root's, and no mode bit beyond 0777 comes with it;
#   (e) the agent's memory: it runs as the user, so the user can read it;
#       the daemon's S3 secret (in the daemon's environment) is not in the
#       agent's environment.
#
# Usage: ckpt_agent.test.sh BUILD_DIR SOURCE_DIR (as root)
build=${1:?usage: ckpt_agent.test.sh BUILD_DIR SOURCE_DIR}
src=${2:?SOURCE_DIR}
# shellcheck source=lib.sh
. "$src/tests/security/lib.sh"
sec_init
ag=$build/tests/ckptagent
home=$tmp/home
mkdir -p "$home"
chown "$uid:$gid" "$home"
ck=$home/ck
as_user mkdir "$ck"
as_user sh -c "echo step-30 >'$ck/state'"

# (a) links and a FIFO in the directory
ln -s /etc/shadow "$ck/leak"
ln -s /root "$ck/rootdir"
mkfifo "$ck/fifo"
chown -h "$uid:$gid" "$ck/leak" "$ck/rootdir" "$ck/fifo"
if timeout 20 "$ag" "$user" "$ck" scan >"$tmp/scan" 2>"$tmp/scan.err"; then
	grep -q '"path": "state"' "$tmp/scan" &&
		! grep -q 'leak\|rootdir\|fifo' "$tmp/scan" &&
		ok "(a) the scan lists the file, not the links nor the FIFO" ||
		bad "(a) scan: $(cat "$tmp/scan")"
else
	bad "(a) scan failed: $(cat "$tmp/scan.err")"
fi
shadow=$(sha256sum /etc/shadow | cut -d' ' -f1)
grep -q "$shadow" "$tmp/scan" && bad "(a) /etc/shadow's digest is in the scan" ||
	ok "(a) /etc/shadow's digest is not in the scan"
size=$(stat -c %s /etc/shadow)
if timeout 20 "$ag" "$user" "$ck" open leak "$size" >"$tmp/open" 2>"$tmp/open.err"; then
	bad "(a) the agent passed a descriptor for the link"
else
	[ ! -s "$tmp/open" ] && grep -q "leak" "$tmp/open.err" &&
		ok "(a) no descriptor for the link: $(cat "$tmp/open.err")" ||
		bad "(a) open leak: $(cat "$tmp/open.err") / $(wc -c <"$tmp/open") bytes"
fi
timeout 20 "$ag" "$user" "$ck" open ../../../etc/shadow "$size" \
	>"$tmp/open" 2>"$tmp/open.err" && bad "(a) '..' opened" ||
	{ [ ! -s "$tmp/open" ] && ok "(a) a '..' path is refused: $(cat "$tmp/open.err")" ||
		bad "(a) '..' gave bytes"; }

# (b) the directory is a link to a root-only directory
mkdir -m 0700 "$tmp/rootonly"
echo secret >"$tmp/rootonly/s"
as_user ln -s "$tmp/rootonly" "$home/ln"
if timeout 20 "$ag" "$user" "$home/ln" scan >"$tmp/scan" 2>"$tmp/scan.err"; then
	bad "(b) the root-only directory was scanned: $(cat "$tmp/scan")"
else
	grep -q "Permission denied\|permission" "$tmp/scan.err" &&
		ok "(b) the scan as the user is refused: $(cat "$tmp/scan.err")" ||
		bad "(b) scan error: $(cat "$tmp/scan.err")"
fi

# (c) pulls into places the user may not write
src_dir=$tmp/src
mkdir -p "$src_dir/sub"
echo one >"$src_dir/a"
echo two >"$src_dir/sub/b"
chmod 4755 "$src_dir/a"
mkdir -p /etc/hbsec$$
canary /etc/hbsec$$/c
before=$(ls -lA --time-style=+%s.%N /etc/hbsec$$)
as_user ln -s /etc/hbsec$$ "$home/etc"
timeout 20 "$ag" "$user" "$home/etc" put "$src_dir" 2>"$tmp/put.err" &&
	bad "(c) a pull through a link into /etc succeeded" ||
	ok "(c) a pull through a link into /etc fails: $(cat "$tmp/put.err")"
canary_intact /etc/hbsec$$/c &&
	[ "$(ls -lA --time-style=+%s.%N /etc/hbsec$$)" = "$before" ] &&
	ok "(c) /etc/hbsec$$: canary intact, nothing added" ||
	bad "(c) /etc/hbsec$$ now holds: $(ls -lA /etc/hbsec$$)"
ls -A /etc | grep -q "hbpart" && bad "(c) a .hbpart in /etc" ||
	ok "(c) no .hbpart in /etc"
rm -rf /etc/hbsec$$
mkdir -m 0755 "$tmp/rootparent"
timeout 20 "$ag" "$user" "$tmp/rootparent/ck" put "$src_dir" 2>"$tmp/put.err" &&
	bad "(c) a pull under a root-owned parent succeeded" ||
	ok "(c) a pull under a root-owned parent fails: $(cat "$tmp/put.err")"
[ -z "$(ls -A "$tmp/rootparent")" ] &&
	ok "(c) nothing made under the root-owned parent" ||
	bad "(c) made: $(ls -lA "$tmp/rootparent")"

# (d) a pull into the user's own directory
if timeout 20 "$ag" "$user" "$ck" put "$src_dir" 2>"$tmp/put.err"; then
	owners=$(find "$ck" -printf '%u\n' | sort -u)
	[ "$owners" = "$user" ] && ok "(d) every file pulled is the user's" ||
		bad "(d) owners: $owners"
	m=$(stat -c %a "$ck/a")
	[ "$m" = 755 ] && ok "(d) mode 4755 arrives as 755" || bad "(d) mode $m"
	[ "$(cat "$ck/sub/b")" = two ] && [ ! -e "$ck/leak" ] &&
		ok "(d) the directory holds the checkpoint, and only it" ||
		bad "(d) $(ls -lAR "$ck")"
else
	bad "(d) pull into the user's directory: $(cat "$tmp/put.err")"
fi

# (e) the daemon's secret stays in the daemon
if AWS_SECRET_ACCESS_KEY=hbsec-secret-$$ AWS_ACCESS_KEY_ID=hbsec-key-$$ \
	timeout 20 "$ag" "$user" "$ck" env >"$tmp/env" 2>"$tmp/env.err"; then
	grep -q "hbsec-secret-$$\|hbsec-key-$$\|AWS_" "$tmp/env" &&
		bad "(e) the agent's environment holds S3 keys: $(cat "$tmp/env")" ||
		ok "(e) the agent's environment holds no S3 key ($(wc -l <"$tmp/env") variables)"
else
	bad "(e) env: $(cat "$tmp/env.err")"
fi
sec_end
