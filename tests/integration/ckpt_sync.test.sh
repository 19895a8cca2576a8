#!/usr/bin/env bash
# ckpt_sync.test.sh - `hpcbridge ckpt` against a real S3 server that
# checks SigV4 signatures (the private Swift with s3api of
# tests/integration/lib/swift.sh), each outcome checked with Debian's aws
# CLI or by digests of the trees:
#
#   * push then pull: the trees match by the SHA-256 and mode of every
#     file (small files, an empty one, two with the same contents, a 70 MiB
#     one sent in parts);
#   * a second push of the unchanged tree sends nothing and names the same
#     checkpoint; a change of one file sends only that file, and a pull
#     into the old copy fetches only it;
#   * a push killed (SIGKILL) part way leaves no new manifest, and the
#     resumed push sends only what was missing;
#   * files rewritten while a push sends them: it fails, no manifest;
#   * progress: a redrawn bar on a terminal, nothing with --progress none;
#   * an object overwritten with other bytes of its size: verify passes a
#     HEAD check, verify --deep exits 1 naming the object, and a pull that
#     needs it fails and leaves the previous good directory as it was;
#   * the aws CLI lists what we stored and fetches the manifest (whose
#     SHA-256 starts with the ID's suffix) and an object (the file's bytes);
#   * a push given its tree and an open_file callback (as the daemon does
#     it, tests/integration/ckpt_treepush.c) never opens the directory;
#   * a key under checkpoints/ that is not ID.json is named and ignored;
#   * pull of a prefix with no checkpoint: exit 1, or 0 with --if-exists;
#   * retention: after 4 pushes, push --keep 3 leaves 3 manifests; retain
#     --keep 2 leaves 2, keeps objects younger than --grace (1h), removes
#     them past it (1 s), and with --grace 0 no object they do not name
#     is left.
#
# Usage: ckpt_sync.test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail

build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
hb=$build/bin/hpcbridge
s3call=$build/tests/s3call

fails=0
ok() { printf 'ok: %s\n' "$*"; }
bad() {
	printf 'FAIL: %s\n' "$*"
	fails=$((fails + 1))
}

# shellcheck source=tests/integration/lib/swift.sh
. "$src/tests/integration/lib/swift.sh"

pushpid=
swift_test_before_cleanup() {
	if [ -n "$pushpid" ]; then
		kill -9 "$pushpid" 2>/dev/null || true
		wait "$pushpid" 2>/dev/null || true
	fi
}
swift_test_start ckptsync
sha() { sha256sum "$1" | cut -d' ' -f1; }
# Every file of a tree: path, mode and SHA-256, sorted.
tree_sum() {
	(cd "$1" && find . -type f -printf '%P %m\n' | sort &&
		find . -type f -print0 | sort -z | xargs -0 -r sha256sum)
}
field() { jq -r ".$2" "$1"; }
# Keys under a prefix (s3call lists fast enough to poll).
count() { "$s3call" list "$b" "$1" | wc -l; }

b=hb-ckpt-test
U=s3://$b/run
aws s3 mb "s3://$b" >/dev/null || {
	echo "FAIL: aws s3 mb"
	exit 1
}

# ---- the tree --------------------------------------------------------------
t=$tmp/tree
mkdir -p "$t/rank-0" "$t/rank-1/deep/er"
printf 'step 100\n' >"$t/train.state"
: >"$t/empty"
head -c 300000 /dev/urandom >"$t/rank-0/w.pt"
cp "$t/rank-0/w.pt" "$t/rank-1/w.pt" # the same contents: one object
head -c 12345 /dev/urandom >"$t/rank-1/deep/er/opt.bin"
head -c $((70 * 1024 * 1024)) /dev/urandom >"$t/big.bin"
chmod 0600 "$t/train.state"
chmod 0755 "$t/rank-1/deep/er/opt.bin"
chmod 0444 "$t/empty"
distinct=5 # train.state, empty, w.pt, opt.bin, big.bin

# ---- push, pull, compare ---------------------------------------------------
if "$hb" ckpt push "$t" "$U" --job 42 --json --progress json \
	--multipart-min 64MiB \
	>"$tmp/p1.json" 2>"$tmp/p1.err"; then
	id1=$(field "$tmp/p1.json" id)
	[ "$(field "$tmp/p1.json" sent_files)" = "$distinct" ] &&
		[ "$(field "$tmp/p1.json" files)" = 6 ] &&
		grep -q '"phase":"upload".*"final":true' "$tmp/p1.err" &&
		ok "push $id1: 6 files, $distinct objects sent, JSON progress on stderr" ||
		bad "push: $(cat "$tmp/p1.json" "$tmp/p1.err")"
else
	bad "push failed: $(cat "$tmp/p1.err")"
	id1=none
fi
if "$hb" ckpt pull "$U" "$tmp/out" --json --progress none >"$tmp/l1.json" 2>"$tmp/l1.err" &&
	[ "$(tree_sum "$t")" = "$(tree_sum "$tmp/out")" ] &&
	[ "$(field "$tmp/l1.json" id)" = "$id1" ]; then
	ok "pull: the tree matches by SHA-256 and mode of every file"
else
	bad "pull round trip: $(cat "$tmp/l1.err")"
	diff <(tree_sum "$t") <(tree_sum "$tmp/out") | head || true
fi

# ---- unchanged, then one file changed ----------------------------------------
"$hb" ckpt push "$t" "$U" --json --progress none >"$tmp/p2.json" 2>"$tmp/p2.err" || true
[ "$(field "$tmp/p2.json" unchanged)" = true ] &&
	[ "$(field "$tmp/p2.json" sent_files)" = 0 ] &&
	[ "$(field "$tmp/p2.json" id)" = "$id1" ] &&
	[ "$(count run/checkpoints/)" = 1 ] &&
	ok "unchanged tree: nothing sent, the same checkpoint, no new manifest" ||
	bad "unchanged push: $(cat "$tmp/p2.json" "$tmp/p2.err")"

printf 'step 200\n' >"$t/train.state"
"$hb" ckpt push "$t" "$U" --json --progress none >"$tmp/p3.json" 2>"$tmp/p3.err" || true
id2=$(field "$tmp/p3.json" id)
[ "$(field "$tmp/p3.json" sent_files)" = 1 ] &&
	[ "$(field "$tmp/p3.json" sent_bytes)" = 9 ] &&
	[ "$(field "$tmp/p3.json" stored_files)" = $((distinct - 1)) ] &&
	[ "$id2" != "$id1" ] && [[ $id2 > $id1 ]] &&
	ok "one file changed: only it was sent; $id2 sorts after $id1" ||
	bad "changed push: $(cat "$tmp/p3.json" "$tmp/p3.err")"
cp -a "$tmp/out" "$tmp/old" # a copy of checkpoint 1, for later
"$hb" ckpt pull "$U" "$tmp/out" --json --progress none >"$tmp/l2.json" 2>"$tmp/l2.err" || true
[ "$(field "$tmp/l2.json" got_files)" = 1 ] &&
	[ "$(field "$tmp/l2.json" kept_files)" = 5 ] &&
	[ "$(tree_sum "$t")" = "$(tree_sum "$tmp/out")" ] &&
	ok "pull over the old copy: fetched 1 file, kept 5" ||
	bad "incremental pull: $(cat "$tmp/l2.json" "$tmp/l2.err")"

# ---- the aws CLI reads what we stored -----------------------------------------
aws s3 ls "s3://$b/run/checkpoints/" >"$tmp/ls.txt" || true
if grep -q "$id1.json" "$tmp/ls.txt" && grep -q "$id2.json" "$tmp/ls.txt" &&
	aws s3 cp "s3://$b/run/checkpoints/$id2.json" "$tmp/m2.json" >/dev/null &&
	[ "$(sha "$tmp/m2.json" | cut -c1-8)" = "${id2#*-}" ] &&
	[ "$(jq -r '.files[].path' "$tmp/m2.json" | sort)" = "$(cd "$t" && find . -type f -printf '%P\n' | sort)" ] &&
	[ "$(jq -r '.files[] | select(.path == "rank-1/deep/er/opt.bin") | .mode' "$tmp/m2.json")" = 0755 ] &&
	aws s3 cp "s3://$b/run/objects/$(sha "$t/rank-0/w.pt")" "$tmp/w.aws" >/dev/null &&
	cmp -s "$tmp/w.aws" "$t/rank-0/w.pt"; then
	ok "aws CLI: lists both manifests, fetches $id2.json (its SHA-256 gives the ID) and an object equal to the file"
else
	bad "aws CLI view: $(cat "$tmp/ls.txt")"
fi
etag=$(aws s3api head-object --bucket "$b" --key "run/objects/$(sha "$t/big.bin")" \
	--query ETag --output text 2>/dev/null || true)
case $etag in
*-5*) ok "70 MiB file went in 5 parts of 16 MiB ($etag)" ;;
*) bad "big object's ETag $etag is not 5 parts" ;;
esac

# ---- a push given the tree and a way to open its files (as the daemon) ------------
tp=$build/tests/ckpt_treepush
tid=
if "$tp" "$t" "s3://$b/tree" 4 >"$tmp/tp1.out" 2>&1 &&
	read -r _ tid _ tu _ ts _ to <"$tmp/tp1.out" && [ "$tu" = 0 ] &&
	[ "$ts" = "$distinct" ] && [ "$to" -ge "$ts" ] &&
	"$hb" ckpt pull "s3://$b/tree" "$tmp/tree-out" --progress none >/dev/null 2>&1 &&
	[ "$(tree_sum "$t")" = "$(tree_sum "$tmp/tree-out")" ]; then
	ok "push of a given tree through the caller's open_file (never the directory; one call at a time): $to opens, pulls back equal"
else
	bad "tree push: $(cat "$tmp/tp1.out")"
fi
"$tp" "$t" "s3://$b/tree" 4 >"$tmp/tp2.out" 2>&1 &&
	[ "$(cat "$tmp/tp2.out")" = "id $tid unchanged 1 sent 0 opened 0" ] &&
	ok "the same tree again: unchanged, nothing opened" ||
	bad "tree push again: $(cat "$tmp/tp2.out")"

# ---- a hostile key under checkpoints/ ----------------------------------------
aws s3 cp "$tmp/m2.json" "s3://$b/run/checkpoints/../../evil.json" >/dev/null
"$hb" ckpt ls "$U" --json >"$tmp/ls.json" 2>"$tmp/ls.err" || true
[ "$(jq -r 'map(.id) | join(" ")' "$tmp/ls.json")" = "$id1 $id2" ] &&
	[ "$(jq -r '.[0].job' "$tmp/ls.json")" = 42 ] &&
	grep -q 'checkpoints/\.\./\.\./evil.json: not a checkpoint manifest' "$tmp/ls.err" &&
	ok "ls: two checkpoints oldest first; the key checkpoints/../../evil.json named and ignored" ||
	bad "ls: $(cat "$tmp/ls.json" "$tmp/ls.err")"
"$s3call" delete "$b" "run/checkpoints/../../evil.json"

# ---- an interrupted push, resumed ----------------------------------------------
# 300 new shards of 256 KiB; a push of them one at a time in the
# background (pushpid), waited for until N new objects are stored.
shards() { for i in $(seq 1 300); do head -c 262144 /dev/urandom >"$t/rank-0/shard-$i"; done; }
push_until() {
	objs_before=$(count run/objects/)
	"$hb" ckpt push "$t" "$U" --jobs 1 --progress none >"$2" 2>&1 &
	pushpid=$!
	for _ in $(seq 1 600); do
		[ "$(count run/objects/)" -ge $((objs_before + $1)) ] && break
		kill -0 "$pushpid" 2>/dev/null || break
		sleep 0.05
	done
}
shards
push_until 20 "$tmp/p4.out"
if kill -9 "$pushpid" 2>/dev/null; then
	wait "$pushpid" 2>/dev/null || true
	pushpid=
	sleep 1 # a PUT whose body was all sent may still land
	done_objs=$(($(count run/objects/) - objs_before))
	if [ "$(count run/checkpoints/)" = 2 ] && [ "$done_objs" -gt 0 ] &&
		[ "$done_objs" -lt 300 ]; then
		ok "push killed after $done_objs of 300 new objects: no new manifest"
	else
		bad "killed push: $done_objs objects, $(count run/checkpoints/) manifests"
	fi
	"$hb" ckpt push "$t" "$U" --json --progress none >"$tmp/p5.json" 2>"$tmp/p5.err" || true
	[ "$(field "$tmp/p5.json" sent_files)" = $((300 - done_objs)) ] &&
		[ "$(count run/checkpoints/)" = 3 ] &&
		ok "resumed push sent only the $((300 - done_objs)) missing objects" ||
		bad "resumed push: $(cat "$tmp/p5.json" "$tmp/p5.err")"
else
	wait "$pushpid" 2>/dev/null || true
	pushpid=
	bad "the push finished before it could be killed: $(cat "$tmp/p4.out")"
fi

# ---- files changed while the push runs ------------------------------------------
shards
push_until 5 "$tmp/p6.out"
shards # new bytes, the same sizes, while it sends
rc=0
wait "$pushpid" || rc=$?
pushpid=
[ "$rc" = 1 ] && grep -q "changed since the scan" "$tmp/p6.out" &&
	[ "$(count run/checkpoints/)" = 3 ] &&
	ok "files rewritten during the push: exit 1 ($(head -c 90 "$tmp/p6.out")...), no manifest written" ||
	bad "push of a changing tree (exit $rc): $(cat "$tmp/p6.out")"

# ---- progress on a terminal, and none ---------------------------------------------
printf 'step 300\n' >"$t/train.state"
script -qec "$hb ckpt push '$t' '$U' --progress auto" /dev/null >"$tmp/tty.out" 2>&1 || true
grep -q $'\r' "$tmp/tty.out" && grep -q 'upload.*100%.*ETA' "$tmp/tty.out" &&
	ok "a terminal gets a redrawn bar with percent, rate and ETA" ||
	bad "bar on a terminal: $(tr '\r' '\n' <"$tmp/tty.out" | tail -3)"
printf 'step 200\n' >"$t/train.state"
"$hb" ckpt push "$t" "$U" --progress none >/dev/null 2>"$tmp/none.err" &&
	[ ! -s "$tmp/none.err" ] && ok "--progress none: nothing on stderr" ||
	bad "--progress none: $(cat "$tmp/none.err")"

# ---- a corrupted object ----------------------------------------------------------
"$hb" ckpt pull "$U" "$tmp/full" --progress none >/dev/null 2>&1 || true
d=$(sha "$t/train.state")
printf 'step 666\n' >"$tmp/forged" # the same size, other bytes
aws s3 cp "$tmp/forged" "s3://$b/run/objects/$d" >/dev/null
"$hb" ckpt verify "$U" >/dev/null 2>"$tmp/v1.err" &&
	ok "verify (HEAD): an object of the right size passes" ||
	bad "verify without --deep: $(cat "$tmp/v1.err")"
rc=0
"$hb" ckpt verify "$U" --deep --json >"$tmp/v2.json" 2>"$tmp/v2.err" || rc=$?
[ "$rc" = 1 ] && grep -q "objects/$d (file train.state): contents do not match" "$tmp/v2.err" &&
	[ "$(field "$tmp/v2.json" bad)" = 1 ] &&
	ok "verify --deep: exit 1, names objects/${d:0:12}... (file train.state)" ||
	bad "verify --deep (exit $rc): $(cat "$tmp/v2.err")"
before=$(tree_sum "$tmp/old")
rc=0
"$hb" ckpt pull "$U" "$tmp/old" --progress none >"$tmp/l3.out" 2>&1 || rc=$?
[ "$rc" = 1 ] && grep -q "train.state" "$tmp/l3.out" &&
	[ "$(tree_sum "$tmp/old")" = "$before" ] && [ ! -e "$tmp/.old.hbpart" ] &&
	ok "pull needing the bad object fails ($(head -c 100 "$tmp/l3.out")...) and leaves the old directory as it was" ||
	bad "pull of a corrupt checkpoint (exit $rc): $(cat "$tmp/l3.out")"
aws s3 cp "$t/train.state" "s3://$b/run/objects/$d" >/dev/null
"$hb" ckpt verify "$U" --deep >/dev/null 2>&1 &&
	ok "the object put back: verify --deep passes" || bad "verify --deep after repair"

# ---- retention ----------------------------------------------------------------
R=s3://$b/ret
for i in 1 2 3 4; do
	printf 'retention round %d\n' "$i" >"$t/train.state"
	rm -f "$t/rank-0/shard-$i"
	extra=()
	[ "$i" = 4 ] && extra=(--keep 3)
	"$hb" ckpt push "$t" "$R" --progress none "${extra[@]}" >/dev/null 2>"$tmp/r.err" ||
		bad "retention push $i: $(cat "$tmp/r.err")"
done
[ "$(count ret/checkpoints/)" = 3 ] && ok "push --keep 3 after 4 pushes: 3 manifests" ||
	bad "push --keep 3: $(count ret/checkpoints/) manifests"
"$hb" ckpt retain "$R" --keep 2 --grace 1h --json >"$tmp/ret1.json" 2>"$tmp/ret.err" || true
[ "$(field "$tmp/ret1.json" removed_checkpoints)" = 1 ] &&
	[ "$(field "$tmp/ret1.json" removed_objects)" = 0 ] &&
	[ "$(count ret/checkpoints/)" = 2 ] &&
	ok "retain --keep 2 --grace 1h: 1 manifest deleted, no object younger than the grace" ||
	bad "retain --grace 1h: $(cat "$tmp/ret1.json" "$tmp/ret.err")"
sleep 2
"$hb" ckpt retain "$R" --keep 2 --grace 1 --json >"$tmp/ret2.json" 2>"$tmp/ret.err" || true
[ "$(field "$tmp/ret2.json" removed_objects)" -ge 3 ] &&
	ok "retain --grace 1, 2 s later: $(field "$tmp/ret2.json" removed_objects) objects past the grace by LastModified removed" ||
	bad "retain --grace 1: $(cat "$tmp/ret2.json" "$tmp/ret.err")"
"$hb" ckpt retain "$R" --keep 2 --grace 0 --json >"$tmp/ret.json" 2>"$tmp/ret.err" || true
mkdir "$tmp/kept"
aws s3 cp --recursive "s3://$b/ret/checkpoints/" "$tmp/kept" >/dev/null
named=$(jq -r '.files[].sha256' "$tmp"/kept/*.json | sort -u)
stored=$("$s3call" list "$b" ret/objects/ | cut -f1 | sed 's|^ret/objects/||' | sort -u)
total=$("$s3call" list "$b" ret/ | awk -F'\t' '{s += $2} END {print s}')
if [ "$(ls "$tmp/kept" | wc -l)" = 2 ] && [ "$named" = "$stored" ] &&
	[ "$(field "$tmp/ret.json" removed_checkpoints)" = 0 ] &&
	[ "$(field "$tmp/ret.json" prefix_bytes)" = "$total" ]; then
	ok "retain --keep 2 --grace 0: 2 manifests, every object named by one, $total bytes stay"
else
	bad "retain: $(cat "$tmp/ret.json" "$tmp/ret.err")"
fi
"$hb" ckpt verify "$R" --json >/dev/null 2>&1 &&
	"$hb" ckpt pull "$R" "$tmp/ret-out" --progress none >/dev/null 2>&1 &&
	[ "$(tree_sum "$t")" = "$(tree_sum "$tmp/ret-out")" ] &&
	ok "after retention the newest checkpoint verifies and pulls whole" ||
	bad "newest checkpoint after retention"

# ---- uploads a killed push left unfinished ------------------------------------------
stale=$(printf 'never completed' | sha256sum | cut -d' ' -f1)
"$s3call" mpu-begin "$b" "ret/objects/$stale" >/dev/null &&
	"$s3call" mpu-begin "$b" ret/objects/not-a-digest >/dev/null ||
	bad "mpu-begin"
"$hb" ckpt retain "$R" --keep 2 --grace 1h --json >"$tmp/up1.json" 2>"$tmp/up.err" || true
[ "$(field "$tmp/up1.json" aborted_uploads)" = 0 ] &&
	[ "$("$s3call" uploads "$b" ret/ | wc -l)" = 2 ] &&
	ok "retain --grace 1h: an unfinished upload younger than the grace is left alone" ||
	bad "retain --grace 1h, uploads: $(cat "$tmp/up1.json" "$tmp/up.err")"
sleep 2
"$hb" ckpt retain "$R" --keep 2 --grace 1 >"$tmp/up2.out" 2>"$tmp/up.err" || true
left=$("$s3call" uploads "$b" ret/ | cut -f1)
grep -q "aborted 1 unfinished uploads" "$tmp/up2.out" && [ "$left" = ret/objects/not-a-digest ] &&
	ok "retain --grace 1, 2 s later: the unfinished upload of an object is aborted; one whose key is not a digest is not touched" ||
	bad "retain, uploads: $(cat "$tmp/up2.out" "$tmp/up.err"); left: $left"

# ---- nothing there yet --------------------------------------------------------------
rc=0
"$hb" ckpt pull "s3://$b/empty" "$tmp/none" --progress none >/dev/null 2>"$tmp/e1.err" || rc=$?
rc2=0
"$hb" ckpt pull "s3://$b/empty" "$tmp/none" --if-exists --progress none >/dev/null 2>"$tmp/e2.err" || rc2=$?
[ "$rc" = 1 ] && grep -q "no complete checkpoint" "$tmp/e1.err" && [ "$rc2" = 0 ] &&
	grep -q "nothing pulled" "$tmp/e2.err" && [ ! -e "$tmp/none" ] &&
	ok "pull of an empty prefix: exit 1; with --if-exists exit 0 and no directory made" ||
	bad "pull of nothing: exits $rc $rc2: $(cat "$tmp/e1.err" "$tmp/e2.err")"

# ---- usage ---------------------------------------------------------------------
rc=0
"$hb" ckpt push "$t" >/dev/null 2>&1 || rc=$?
rc2=0
"$hb" ckpt ls "$U" --deep >/dev/null 2>&1 || rc2=$?
rc3=0
"$hb" ckpt pull "s3://$b/../x" "$tmp/x" >/dev/null 2>"$tmp/u.err" || rc3=$?
[ "$rc" = 2 ] && [ "$rc2" = 2 ] && [ "$rc3" = 1 ] && grep -q prefix "$tmp/u.err" &&
	ok "usage errors exit 2; a bad location exits 1 naming the prefix" ||
	bad "usage exits $rc $rc2 $rc3"

[ "$fails" = 0 ] || {
	swift_logs "$sw"
	exit 1
}
echo "ckpt_sync: all checks passed"
