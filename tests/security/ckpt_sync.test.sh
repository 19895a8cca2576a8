#!/bin/bash
# ckpt_sync.test.sh - what a hostile store, a hostile local user and a
# second S3 account can do through `hpcbridge ckpt`.  The private Swift of
# tests/integration/lib/swift.sh holds the checkpoints; every push and
# pull runs as an unprivileged user with the first account's keys in its
# environment.  The damage is checked, not only the error:
#
#   (1) hostile manifests at PREFIX/checkpoints/ID.json (valid IDs) with
#       paths "../escape", "/etc/x", "a/../../b", "a\u0000b" and two paths
#       that differ only in case: pull fails naming the manifest, line and
#       field; nothing appears beside the target or at the escape paths,
#       and the good checkpoint already there keeps every byte;
#   (2) hostile keys under PREFIX/checkpoints/ ("../x.json", an ID of
#       non-hex digits in 2099, a very long name, an ID one level down)
#       holding manifests that would plant a file: pull still takes the
#       real newest checkpoint, and ls shows only real ones;
#   (3) an object whose bytes are not its name (same size): pull fails
#       naming it, the previous directory keeps every byte, and no file
#       with the wrong bytes is left anywhere (a fresh target is not made);
#   (4) symbolic links: in the existing target (to a root 0600 canary and
#       to a directory of the user's outside it), as the target itself,
#       and as the temporary ".NAME.hbpart" beside it.  Pull never writes
#       or removes through them (canary bytes and mtime, the outside
#       directory's listing and digests); push never uploads what they
#       point to (every object's name and contents compared with the
#       digests of the canary and the outside files);
#   (5) special files in a pushed tree: a FIFO and a character device
#       (/dev/zero's numbers) never stall the push (60 s cap) nor get
#       uploaded; a hard link to root's unreadable file is refused by the
#       kernel to the user (protected_hardlinks), and one made by root
#       (as a host without that protection allows) is not uploaded;
#   (6) a second user with the second account's keys (and with the first
#       account's key id but its own secret) can neither read nor write
#       the first user's checkpoints: pull and push fail with the S3
#       error, no secret is printed, the first account's objects and
#       their ETags are unchanged;
#   (7) in a shared sticky directory the second user plants the
#       temporary ".NAME.hbpart" (world-writable) or owns the target:
#       the first user's pull refuses both and leaves no file there;
#   (8) keys that hold control characters (a C1 CSI, a newline, ESC):
#       pull still takes the real newest and prints no raw control byte;
#   (9) retention (keep 1, no grace) beside keys that are not
#       PREFIX/objects/HEX (one of them "objects/../../precious") and a
#       newer manifest that does not read: those keys stay, and the last
#       complete checkpoint still pulls.
#
# Usage: ckpt_sync.test.sh BUILD_DIR SOURCE_DIR (as root)
build=${1:?usage: ckpt_sync.test.sh BUILD_DIR SOURCE_DIR}
src=${2:?SOURCE_DIR}
# shellcheck source=lib.sh
. "$src/tests/security/lib.sh"
# shellcheck source=../integration/lib/swift.sh
. "$src/tests/integration/lib/swift.sh"
sec_init
hb=$build/bin/hpcbridge
sw=$tmp/swift
# no daemon here: on failure sec_end shows the tail of Swift's proxy log
# shellcheck disable=SC2034
log=$sw/log/proxy.log
trap 'swift_down "$sw"; _sec_cleanup' EXIT
swift_up "$sw" || {
	echo "FAIL: swift_up"
	exit 1
}
aws() { /usr/bin/aws --endpoint-url "$AWS_ENDPOINT_URL" "$@"; }
sha() { sha256sum "$1" | cut -d' ' -f1; }

bkt=hbsec-ckpt
pfx=run1
url=s3://$bkt/$pfx
aws s3 mb "s3://$bkt" >/dev/null || {
	echo "FAIL: aws s3 mb"
	exit 1
}

# The second user, with the second account's keys.
userb=hbsecb$$
uidb=$(sec_user "$userb") || {
	echo "cannot make user $userb" >&2
	exit 1
}
gidb=$(id -g "$userb")
u=$tmp/u
mkdir -m 0700 "$u" "$tmp/b"
chown "$uid:$gid" "$u"
chown "$uidb:$gidb" "$tmp/b"

# ck WHO ARGS...: `hpcbridge ckpt ARGS` as user a or b, 60 s at most
# (CK_KEY overrides b's key id); stdout in $tmp/out, stderr in $tmp/err,
# the exit status in $rc.
ck() {
	local who=$1 ru=$uid rg=$gid home=$u key=$AWS_ACCESS_KEY_ID
	local secret=$AWS_SECRET_ACCESS_KEY
	shift
	if [ "$who" = b ]; then
		ru=$uidb rg=$gidb home=$tmp/b
		key=${CK_KEY:-$HB_SWIFT_ACCESS_KEY_ID2}
		secret=$HB_SWIFT_SECRET_ACCESS_KEY2
	fi
	rc=0
	timeout -k 5 60 setpriv --reuid="$ru" --regid="$rg" --clear-groups -- \
		env HOME="$home" AWS_ACCESS_KEY_ID="$key" \
		AWS_SECRET_ACCESS_KEY="$secret" "$hb" ckpt "$@" \
		>"$tmp/out" 2>"$tmp/err" </dev/null || rc=$?
}
# what the last ck said, for a message
# (its last line: problems with a listing come before the error)
said() { printf 'exit %s: %s' "$rc" "$(tail -n1 "$tmp/err" | head -c 300)"; }
# the id in the last ck's --json result
said_id() { grep -oE '"id": *"[^"]*"' "$tmp/out" | head -n1 | cut -d'"' -f4; }

# state DIR: every entry's type, path, link target and mode, and every
# file's SHA-256; comparing two states compares the trees byte for byte.
state() {
	[ -e "$1" ] || [ -L "$1" ] || {
		echo absent
		return
	}
	(cd "$1" && find . -printf '%y %p -> %l %m\n' | sort &&
		find . -type f -exec sha256sum {} + | sort -k2)
}
# same A B: two states are equal, or the difference (for a message)
same() { [ "$1" = "$2" ] || diff <(echo "$1") <(echo "$2") | head -n 8 | tr '\n' ' '; }

# mk DIR: a tree of the user's: files with given contents.  mk DIR
# PATH=TEXT or PATH=@BYTES (that many random bytes) ...
mk() {
	local d=$1 spec p v
	shift
	mkdir -p "$d"
	for spec in "$@"; do
		p=${spec%%=*} v=${spec#*=}
		mkdir -p "$d/$(dirname "$p")"
		case $v in
		@*) head -c "${v#@}" /dev/urandom >"$d/$p" ;;
		*) printf '%s\n' "$v" >"$d/$p" ;;
		esac
	done
	chown -R "$uid:$gid" "$d"
}

# The root canary and the user's own directory outside every target.
canary "$tmp/canary"
canary_mtime=$(stat -c %y "$tmp/canary")
mk "$u/outside" keep.txt="the user's own file, outside every checkpoint" \
	secret.txt="outside, readable by the user, not part of any checkpoint"
outside_state=$(state "$u/outside")
outside_ok() {
	local d
	d=$(same "$outside_state" "$(state "$u/outside")")
	[ -z "$d" ] && canary_intact "$tmp/canary" &&
		[ "$(stat -c %y "$tmp/canary")" = "$canary_mtime" ] &&
		ok "$1: the canary (bytes, owner, mode, mtime) and the outside directory are unchanged" ||
		bad "$1: damage outside: $d; canary $(stat -c '%U %a %y' "$tmp/canary")"
}

# ---- the real checkpoints: two pushes a second apart (IDs sort by time)
mk "$u/src1" a.txt=one sub/f.txt=@4096 big.bin=@1048576
chmod 600 "$u/src1/big.bin"
cp -a "$u/src1" "$u/src2"
printf 'two\n' >"$u/src2/a.txt"
mk "$u/src2" sub/g.txt=@777
ck a push "$u/src1" "$url" --job 1 --progress none --json
id1=$(said_id)
[ "$rc" = 0 ] && [ -n "$id1" ] && ok "push src1: $id1" ||
	{ bad "push src1: $(said)"; sec_end; }
sleep 1.1
ck a push "$u/src2" "$url" --job 1 --progress none --json
id2=$(said_id)
[ "$rc" = 0 ] && [ -n "$id2" ] && [ "$id2" != "$id1" ] &&
	ok "push src2: $id2" || { bad "push src2: $(said) $(cat "$tmp/out")"; sec_end; }
ck a pull "$url" "$u/ck" --progress none --json
d=$(same "$(state "$u/src2")" "$(state "$u/ck")")
[ "$rc" = 0 ] && [ "$(said_id)" = "$id2" ] && [ -z "$d" ] &&
	ok "pull of the newest ($id2) gives src2 byte for byte" ||
	bad "pull of the newest: $(said) id $(said_id) diff $d"
good=$(state "$u/ck")
parent=$(ls -A "$u")
# intact MSG: the good checkpoint and the target's parent are as they were
intact() {
	local d p
	d=$(same "$good" "$(state "$u/ck")")
	p=$(same "$parent" "$(ls -A "$u")")
	[ -z "$d" ] && [ -z "$p" ] &&
		ok "$1: the good checkpoint keeps every byte; nothing new beside it" ||
		bad "$1: checkpoint diff: $d; parent diff: $p"
}

# ---- (2) hostile keys: never taken as the newest
# manifest FILE CREATED ENTRY...: a manifest as the gateway writes them
# (one file per line, so ENTRY n is on line 5+n); prints its ID.
manifest() {
	local f=$1 created=$2 i=0 n
	shift 2
	n=$#
	{
		printf '{\n  "format": "hpcbridge-checkpoint/1",\n'
		printf '  "created": "%s",\n  "job": "evil",\n  "files": [\n' "$created"
		for e in "$@"; do
			i=$((i + 1))
			printf '    %s%s\n' "$e" "$([ "$i" -lt "$n" ] && echo ,)"
		done
		printf '  ]\n}\n'
	} >"$f"
	printf '%s-%s\n' "$(printf %s "$created" | tr -d ':-')" "$(sha "$f" | cut -c1-8)"
}
# entry PATH: a file entry for PATH whose contents are the planted object
printf 'planted by a hostile store\n' >"$tmp/planted"
planted=$(sha "$tmp/planted")
aws s3 cp "$tmp/planted" "s3://$bkt/$pfx/objects/$planted" >/dev/null
entry() {
	printf '{"path": "%s", "size": %s, "mode": "0644", "sha256": "%s"}' \
		"$1" "$(stat -c %s "$tmp/planted")" "$planted"
}
# put FILE KEY: store FILE at KEY and check it is there under that name
put() {
	aws s3api put-object --bucket "$bkt" --key "$2" --body "$1" >/dev/null 2>&1 &&
		aws s3api list-objects-v2 --bucket "$bkt" --prefix "$pfx/checkpoints/" \
			--query 'Contents[].Key' --output text | tr '\t' '\n' |
		grep -qxF -- "$2"
}
manifest "$tmp/hk.json" 2099-12-31T23:59:59Z "$(entry pwned.txt)" >/dev/null
long=20991231T235959Z-$(printf 'f%.0s' $(seq 900))
for key in "checkpoints/../x.json" "checkpoints/20991231T235959Z-zzzzzzzz.json" \
	"checkpoints/$long.json" "checkpoints/sub/20991231T235959Z-ffffffff.json"; do
	put "$tmp/hk.json" "$pfx/$key" &&
		ok "hostile key stored as given: $(printf %s "$key" | head -c 60)" ||
		bad "could not store the hostile key $(printf %s "$key" | head -c 60) as given"
done
ck a pull "$url" "$u/fresh" --progress none --json
d=$(same "$(state "$u/src2")" "$(state "$u/fresh")")
[ "$rc" = 0 ] && [ "$(said_id)" = "$id2" ] && [ -z "$d" ] &&
	[ ! -e "$u/fresh/pwned.txt" ] &&
	ok "with hostile keys, pull still takes the real newest $id2 (byte for byte)" ||
	bad "pull with hostile keys: $(said) id $(said_id) diff $d"
rm -rf "$u/fresh"
ck a ls "$url" --json
ids=$(grep -oE '"id": *"[^"]*"' "$tmp/out" | cut -d'"' -f4 | tr '\n' ' ')
[ "$rc" = 0 ] && [ "$ids" = "$id1 $id2 " ] &&
	ok "ls lists only the real checkpoints: $ids" ||
	bad "ls with hostile keys: $(said) ids: $ids"
[ ! -e "$u/pwned.txt" ] && [ ! -e "$tmp/pwned.txt" ] && [ ! -e "$u/x.json" ] &&
	ok "no planted file anywhere" || bad "a planted file was written"

# ---- (1) hostile manifests, each at a valid ID, pulled over the good one
hostile() { # WHAT CREATED EXPECT ENTRY...: EXPECT is an ERE the error holds
	local what=$1 created=$2 expect=$3 id
	shift 3
	id=$(manifest "$tmp/h.json" "$created" "$@")
	aws s3 cp "$tmp/h.json" "s3://$bkt/$pfx/checkpoints/$id.json" >/dev/null
	ck a pull "$url" "$u/ck" --checkpoint "$id" --progress none
	[ "$rc" = 1 ] && grep -qE -- "$id\.json:$expect" "$tmp/err" &&
		ok "$what refused: $(grep "$id" "$tmp/err" | head -c 200)" ||
		bad "$what: $(said) (wanted $id.json:$expect)"
	intact "$what"
	aws s3 rm "s3://$bkt/$pfx/checkpoints/$id.json" >/dev/null
}
hostile '"../escape"' 2026-01-01T00:00:01Z '7: files\[1\]\.path: ' \
	"$(entry fine.txt)" "$(entry ../escape)"
hostile '"/etc/x"' 2026-01-01T00:00:02Z '7: files\[1\]\.path: ' \
	"$(entry fine.txt)" "$(entry /etc/x)"
hostile '"a/../../b"' 2026-01-01T00:00:03Z '7: files\[1\]\.path: ' \
	"$(entry fine.txt)" "$(entry a/../../b)"
hostile '"a\u0000b"' 2026-01-01T00:00:04Z '7: files\[1\]\.path: ' \
	"$(entry fine.txt)" "$(entry 'a\u0000b')"
hostile '"Model.pt" and "model.pt"' 2026-01-01T00:00:05Z \
	'[0-9]*:? ?files.*(Model\.pt.*model\.pt|model\.pt.*Model\.pt)' \
	"$(entry Model.pt)" "$(entry model.pt)"
esc=
for p in "$u/escape" "$tmp/escape" /etc/x "$u/b" "$u/a" "$u/fine.txt" \
	"$u/Model.pt" "$u/model.pt"; do
	[ -e "$p" ] && esc="$esc $p"
done
[ -z "$esc" ] && ok "no escape path exists ($u/escape, $tmp/escape, /etc/x, $u/b, $u/a)" ||
	bad "escape paths exist:$esc"

# the newest checkpoint is hostile: pull either refuses it, naming it, or
# takes the real newest; the good one is intact either way
id=$(manifest "$tmp/h.json" 2098-01-01T00:00:00Z "$(entry ../escape)")
aws s3 cp "$tmp/h.json" "s3://$bkt/$pfx/checkpoints/$id.json" >/dev/null
ck a pull "$url" "$u/ck" --progress none --json
if [ "$rc" = 0 ] && [ "$(said_id)" = "$id2" ]; then
	ok "a hostile newest manifest is passed over for $id2"
elif [ "$rc" = 1 ] && grep -qE "$id\.json:6: files\[0\]\.path" "$tmp/err"; then
	ok "a hostile newest manifest is refused: $(grep "$id" "$tmp/err" | head -c 200)"
else
	bad "hostile newest manifest: $(said) id $(said_id)"
fi
intact "a hostile newest manifest"
[ ! -e "$u/escape" ] || bad "$u/escape was written"
aws s3 rm "s3://$bkt/$pfx/checkpoints/$id.json" >/dev/null

# a --checkpoint that is not an ID never becomes a key
for bad_id in ../x "$id2/../../x" "${id2}x"; do
	ck a pull "$url" "$u/ck" --checkpoint "$bad_id" --progress none
	[ "$rc" != 0 ] && grep -q checkpoint "$tmp/err" &&
		ok "--checkpoint $bad_id refused: $(head -c 120 "$tmp/err")" ||
		bad "--checkpoint $bad_id: $(said)"
done
intact "--checkpoint not an ID"

# ---- (3) an object whose bytes are not its name
sleep 1.1
cp -a "$u/src2" "$u/src3"
mk "$u/src3" new.bin=@262144
parent=$(ls -A "$u")
hnew=$(sha "$u/src3/new.bin")
ck a push "$u/src3" "$url" --job 1 --progress none --json
id3=$(said_id)
[ "$rc" = 0 ] && [ -n "$id3" ] && ok "push src3: $id3" || bad "push src3: $(said)"
head -c 262144 /dev/urandom >"$tmp/wrong.bin"
hwrong=$(sha "$tmp/wrong.bin")
aws s3 cp "$tmp/wrong.bin" "s3://$bkt/$pfx/objects/$hnew" >/dev/null
ck a pull "$url" "$u/ck" --progress none
[ "$rc" = 1 ] && grep -qE "$hnew|new\.bin" "$tmp/err" &&
	ok "a corrupted object is refused: $(grep -E "$hnew|new\.bin" "$tmp/err" | head -c 240)" ||
	bad "corrupted object over the good checkpoint: $(said)"
intact "a corrupted object"
ck a pull "$url" "$u/fresh3" --progress none
[ "$rc" = 1 ] && [ ! -e "$u/fresh3" ] && [ ! -e "$u/.fresh3.hbpart" ] &&
	ok "a corrupted object into a new target: refused, no target, no temporary directory" ||
	bad "corrupted object into a new target: $(said); left: $(ls -A "$u" | tr '\n' ' ')"
left=$(find "$tmp" -path "$sw" -prune -o -type f -size 262144c -print 2>/dev/null |
	while read -r f; do [ "$(sha "$f")" = "$hwrong" ] && echo "$f"; done)
[ "$left" = "$tmp/wrong.bin" ] &&
	ok "the wrong bytes are in no file of the user's" ||
	bad "the wrong bytes were kept: $left"
rm -rf "$u/fresh3" "$u/.fresh3.hbpart"
aws s3 cp "$u/src3/new.bin" "s3://$bkt/$pfx/objects/$hnew" >/dev/null

# ---- (4) symbolic links
# in the existing target: a file the manifest names is a link to the
# canary, a directory it names is a link to the user's outside directory,
# and two more links point at both
rm -rf "$u/ck/new.bin" "$u/ck/sub"
ln -s "$tmp/canary" "$u/ck/new.bin"
ln -s "$u/outside" "$u/ck/sub"
ln -s "$tmp/canary" "$u/ck/canary-link"
ln -s "$u/outside" "$u/ck/outside-link"
chown -h "$uid:$gid" "$u/ck/new.bin" "$u/ck/sub" "$u/ck/canary-link" "$u/ck/outside-link"
ck a pull "$url" "$u/ck" --checkpoint "$id3" --progress none
d=$(same "$(state "$u/src3")" "$(state "$u/ck")")
[ "$rc" = 0 ] && [ -z "$d" ] &&
	ok "pull over links in the target: the target is src3 exactly, links gone" ||
	bad "pull over links in the target: $(said) diff $d"
outside_ok "links in the target"
# the target itself a link to the outside directory
ln -s "$u/outside" "$u/ck-link"
chown -h "$uid:$gid" "$u/ck-link"
ck a pull "$url" "$u/ck-link" --checkpoint "$id3" --progress none
# refused, the link left as it was; or the link replaced by the checkpoint
if [ "$rc" = 1 ] && [ "$(readlink "$u/ck-link")" = "$u/outside" ]; then
	ok "a target that is a link is refused: $(head -c 160 "$tmp/err")"
elif [ "$rc" = 0 ] && [ ! -L "$u/ck-link" ] &&
	[ -z "$(same "$(state "$u/src3")" "$(state "$u/ck-link")")" ]; then
	ok "a target that is a link is replaced by the checkpoint"
else
	bad "a target that is a link: $(said); now $(ls -ld "$u/ck-link")"
fi
outside_ok "the target a link"
# the temporary directory planted as a link, to the outside and the canary
for to in "$u/outside" "$tmp/canary"; do
	rm -rf "$u/ck2" "$u/.ck2.hbpart"
	ln -s "$to" "$u/.ck2.hbpart"
	chown -h "$uid:$gid" "$u/.ck2.hbpart"
	ck a pull "$url" "$u/ck2" --checkpoint "$id3" --progress none
	d=$(same "$(state "$u/src3")" "$(state "$u/ck2")")
	{ [ "$rc" = 1 ] && [ ! -e "$u/ck2" ]; } || { [ "$rc" = 0 ] && [ -z "$d" ]; } &&
		ok ".ck2.hbpart a link to $to: $(said)" ||
		bad ".ck2.hbpart a link to $to: $(said) diff $d"
	outside_ok ".hbpart a link to $to"
done
rm -rf "$u/ck2" "$u/.ck2.hbpart" "$u/ck-link"

# push: links to the canary, to a file and to a directory outside
mk "$u/src4" real.txt="the only file of src4"
ln -s "$tmp/canary" "$u/src4/canary-link"
ln -s "$u/outside/secret.txt" "$u/src4/secret-link"
ln -s "$u/outside" "$u/src4/outside-link"
chown -h "$uid:$gid" "$u/src4/"*-link
sleep 1.1
ck a push "$u/src4" "$url" --job 4 --progress none --json
id4=$(said_id)
[ "$rc" = 0 ] && [ -n "$id4" ] && ok "push over links: $id4 ($(head -c 200 "$tmp/out"))" ||
	bad "push over links: $(said)"
aws s3 cp "s3://$bkt/$pfx/checkpoints/$id4.json" "$tmp/m4.json" >/dev/null 2>&1
[ "$(grep -c '"path"' "$tmp/m4.json")" = 1 ] && grep -q '"real.txt"' "$tmp/m4.json" &&
	ok "the pushed manifest lists real.txt alone" ||
	bad "manifest of src4: $(tr '\n' ' ' <"$tmp/m4.json" | head -c 300)"

# ---- (5) special files and a hard link to root's file
mk "$u/src5" real.txt="the only file of src5"
as_user mkfifo "$u/src5/fifo"
mknod "$u/src5/zero" c 1 5 && chown "$uid:$gid" "$u/src5/zero"
[ -p "$u/src5/fifo" ] && [ -c "$u/src5/zero" ] ||
	bad "could not make the FIFO and the device"
sleep 1.1
t0=$(date +%s)
ck a push "$u/src5" "$url" --job 5 --progress none --json
t=$(($(date +%s) - t0))
id5=$(said_id)
[ "$rc" != 124 ] && [ "$rc" != 137 ] && ok "push with a FIFO and a device ends in ${t}s: $(said)" ||
	bad "push with a FIFO and a device hung (${t}s)"
if [ "$rc" = 0 ]; then
	aws s3 cp "s3://$bkt/$pfx/checkpoints/$id5.json" "$tmp/m5.json" >/dev/null 2>&1
	[ "$(grep -c '"path"' "$tmp/m5.json")" = 1 ] &&
		ok "the FIFO and the device are not in the manifest" ||
		bad "manifest of src5: $(tr '\n' ' ' <"$tmp/m5.json" | head -c 300)"
fi
canary "$tmp/rootfile"
mk "$u/src6" real.txt="the only file of src6"
if as_user ln "$tmp/rootfile" "$u/src6/hl" 2>"$tmp/ln.err"; then
	bad "the kernel let the user hard-link root's 0600 file (protected_hardlinks $(cat /proc/sys/fs/protected_hardlinks))"
else
	[ ! -e "$u/src6/hl" ] &&
		ok "the user cannot hard-link root's file: $(head -c 100 "$tmp/ln.err")" ||
		bad "ln failed but $u/src6/hl exists"
fi
# as on a host without protected_hardlinks: root makes the link
rm -f "$u/src6/hl"
ln "$tmp/rootfile" "$u/src6/hl"
sleep 1.1
ck a push "$u/src6" "$url" --job 6 --progress none --json
[ "$rc" != 124 ] && [ "$rc" != 137 ] &&
	ok "push with root's file hard-linked in: $(said) $(head -c 120 "$tmp/out")" ||
	bad "push with a hard link hung"
canary_intact "$tmp/rootfile" && [ "$(stat -c %h "$tmp/rootfile")" = 2 ] &&
	ok "root's hard-linked file is unchanged" || bad "root's hard-linked file changed"

# nothing the links, the special files or the hard link reach was
# uploaded: by object name and by every object's contents
forbidden="$(head -n1 "$tmp/canary.want") $(head -n1 "$tmp/rootfile.want") \
$(sha "$u/outside/secret.txt") $(sha "$u/outside/keep.txt") \
$(head -c 1048576 /dev/zero | sha256sum | cut -d' ' -f1)"
names=$(aws s3api list-objects-v2 --bucket "$bkt" --prefix "$pfx/objects/" \
	--query 'Contents[].Key' --output text | tr '\t' '\n')
mkdir "$tmp/dump"
aws s3 cp --recursive "s3://$bkt/$pfx/objects/" "$tmp/dump/" >/dev/null
n=$(find "$tmp/dump" -type f | wc -l)
hit=
for f in "$tmp/dump"/*; do
	h=$(sha "$f")
	[ "$h" = "$(basename "$f")" ] || hit="$hit $(basename "$f")(contents $h)"
	for x in $forbidden; do
		[ "$h" = "$x" ] && hit="$hit $(basename "$f")=$x"
	done
done
for x in $forbidden; do
	printf '%s\n' "$names" | grep -q "$x" && hit="$hit name:$x"
done
[ "$n" -gt 0 ] && [ -z "$hit" ] &&
	ok "none of $n objects holds the canary, root's file, the outside files or a device's bytes" ||
	bad "objects that should not be there ($n objects):$hit"

# ---- (6) a second account
snap() {
	aws s3api list-objects-v2 --bucket "$bkt" --query 'Contents[].[Key,Size,ETag]' \
		--output text | sort
}
before=$(snap)
mk "$tmp/b/src" b.txt="user b's file"
chown -R "$uidb:$gidb" "$tmp/b/src"
for how in key2 forged; do
	[ "$how" = forged ] && export CK_KEY=$AWS_ACCESS_KEY_ID
	ck b pull "$url" "$tmp/b/ck" --progress none
	e=$(cat "$tmp/err")
	[ "$rc" = 1 ] && [ ! -e "$tmp/b/ck" ] &&
		printf '%s' "$e" | grep -qE 'AccessDenied|SignatureDoesNotMatch|NoSuchBucket|InvalidAccessKeyId|403|404' &&
		ok "user b ($how) cannot pull a's checkpoints: $(head -c 160 "$tmp/err")" ||
		bad "user b ($how) pull: $(said)"
	ck b push "$tmp/b/src" "$url" --progress none
	e="$e $(cat "$tmp/err")"
	[ "$rc" = 1 ] &&
		grep -qE 'AccessDenied|SignatureDoesNotMatch|NoSuchBucket|InvalidAccessKeyId|403|404' "$tmp/err" &&
		ok "user b ($how) cannot push into a's bucket: $(head -c 160 "$tmp/err")" ||
		bad "user b ($how) push: $(said)"
	printf '%s' "$e" | grep -qF -e "$AWS_SECRET_ACCESS_KEY" -e "$HB_SWIFT_SECRET_ACCESS_KEY2" &&
		bad "user b ($how): a secret is printed" || ok "user b ($how): no secret printed"
	unset CK_KEY
done
d=$(same "$before" "$(snap)")
[ -z "$d" ] && ok "a's objects (keys, sizes, ETags) are unchanged" ||
	bad "a's objects changed: $d"

# ---- (7) a shared sticky directory (as /tmp): the second user plants
# the temporary directory, world-writable, or the target itself.  The
# first user's pull refuses both and writes nothing into either, so the
# second user reads no byte of the checkpoint.
as_b() { setpriv --reuid="$uidb" --regid="$gidb" --clear-groups -- "$@"; }
sh=$tmp/shared
mkdir -m 1777 "$sh"
as_b mkdir -m 0777 "$sh/.ck.hbpart" "$sh/ck2"
as_b sh -c "echo planted >'$sh/.ck.hbpart/b.txt'; echo b-own >'$sh/ck2/b.txt'"
as_b chmod 0777 "$sh/.ck.hbpart" "$sh/ck2"
shared_before=$(state "$sh")
ck a pull "$url" "$sh/ck" --checkpoint "$id2" --progress none
[ "$rc" = 1 ] && [ ! -e "$sh/ck" ] &&
	ok "a temporary directory planted by another user is refused: $(head -c 160 "$tmp/err")" ||
	bad "a planted temporary directory: $(said)"
ck a pull "$url" "$sh/ck2" --checkpoint "$id2" --progress none
[ "$rc" = 1 ] &&
	ok "another user's target in a sticky directory is refused: $(head -c 160 "$tmp/err")" ||
	bad "another user's target: $(said)"
d=$(same "$shared_before" "$(state "$sh")")
[ -z "$d" ] && [ -z "$(find "$sh" -user "$uid")" ] &&
	ok "the shared directory is as it was: nothing of the first user's in it" ||
	bad "the shared directory changed: $d; the first user's: $(find "$sh" -user "$uid" | head -n 3)"

# ---- (8) keys that hold control characters: a C1 CSI (U+009B), a
# newline that would forge a line of output, then ESC.  Pull still takes
# the real newest, and what it prints about them holds no raw control
# byte for the user's terminal.
ck a ls "$url" --json
newest=$(grep -oE '"id": *"[^"]*"' "$tmp/out" | tail -n1 | cut -d'"' -f4)
for key in $'checkpoints/c1\xc2\x9b2J.json' \
	$'checkpoints/nl\nhpcbridge ckpt pull: FORGED.json' \
	$'checkpoints/esc\x1b]0;pwned\x07.json'; do
	what=$(printf '%q' "$key")
	put "$tmp/hk.json" "$pfx/$key" || { bad "could not store the key $what"; continue; }
	ck a pull "$url" "$u/fresh7" --progress none --json
	got=$(said_id)
	rm -rf "$u/fresh7"
	[ "$rc" = 0 ] && [ -n "$newest" ] && [ "$got" = "$newest" ] &&
		ok "a key with ($what): pull still takes the newest $got" ||
		bad "a key with ($what): $(said)"
	LC_ALL=C grep -qaP '\x1b|\x07|\xc2[\x80-\x9f]' "$tmp/err" &&
		bad "a key with ($what): raw control bytes reach the terminal: $(LC_ALL=C grep -aP '\x1b|\x07|\xc2[\x80-\x9f]' "$tmp/err" | cat -v | head -c 200)" ||
		ok "a key with ($what): no raw control byte printed"
	grep -q '^hpcbridge ckpt pull: FORGED' "$tmp/err" &&
		bad "a key forged a line of output" || true
	aws s3api delete-object --bucket "$bkt" --key "$pfx/$key" >/dev/null
done

# ---- (9) retention with keys it must not touch and a newer manifest
# that does not read: keep 1 never deletes the last complete checkpoint,
# nor a key that is not PREFIX/objects/HEX (one that names "../" is not
# squashed into another key).
ck a ls "$url" --json
newest=$(grep -oE '"id": *"[^"]*"' "$tmp/out" | tail -n1 | cut -d'"' -f4)
for key in other/precious "$pfx/objects/../../precious" "$pfx/objects/NOTHEX" \
	"$pfx/objects/$(printf 'A%.0s' $(seq 64))"; do
	put "$tmp/planted" "$key" 2>/dev/null ||
		aws s3api put-object --bucket "$bkt" --key "$key" --body "$tmp/planted" >/dev/null
done
id=$(manifest "$tmp/h.json" 2097-01-01T00:00:00Z "$(entry ../escape)")
aws s3 cp "$tmp/h.json" "s3://$bkt/$pfx/checkpoints/$id.json" >/dev/null
ck a retain "$url" --keep 1 --grace 0 --json
echo "retain --keep 1 beside an unreadable newer manifest: $(said) $(head -c 200 "$tmp/out")"
keys=$(aws s3api list-objects-v2 --bucket "$bkt" --query 'Contents[].Key' --output text | tr '\t' '\n')
miss=
for key in other/precious "$pfx/objects/../../precious" "$pfx/objects/NOTHEX" \
	"$pfx/objects/$(printf 'A%.0s' $(seq 64))"; do
	printf '%s\n' "$keys" | grep -qxF -- "$key" || miss="$miss $key"
done
[ -z "$miss" ] && ok "retain leaves keys that are not objects/HEX alone" ||
	bad "retain deleted keys it does not own:$miss"
ck a pull "$url" "$u/fresh9" --checkpoint "$newest" --progress none --json
[ "$rc" = 0 ] && [ "$(said_id)" = "$newest" ] &&
	ok "the last complete checkpoint $newest survives retention (keep 1) beside an unreadable newer one" ||
	bad "retain --keep 1 deleted the last complete checkpoint $newest for an unreadable newer manifest: $(said)"
sec_end
