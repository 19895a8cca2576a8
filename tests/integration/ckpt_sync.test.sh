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
#   * an object overwritten with other bytes of its size: verify passes a
#     HEAD check, verify --deep exits 1 naming the object, and a pull that
#     needs it fails and leaves the previous good directory as it was;
#   * the aws CLI lists what we stored and fetches the manifest (whose
#     SHA-256 starts with the ID's suffix) and an object (the file's bytes);
#   * a key under checkpoints/ that is not ID.json is named and ignored;
#   * retention: after 4 pushes, push --keep 3 leaves 3 manifests, retain
#     --keep 2 --grace 0 leaves 2 and no object they do not name.
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

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hb-ckptsync.XXXXXX")
chmod 0711 "$tmp" # the swift user must reach the device under it
sw=$tmp/swift
pushpid=
cleanup() {
	if [ -n "$pushpid" ]; then
		kill -9 "$pushpid" 2>/dev/null || true
		wait "$pushpid" 2>/dev/null || true
	fi
	swift_down "$sw"
	rm -rf -- "$tmp"
}
trap cleanup EXIT
swift_up "$sw" || {
	echo "FAIL: swift_up"
	swift_logs "$sw"
	exit 1
}
aws() { /usr/bin/aws --endpoint-url "$AWS_ENDPOINT_URL" "$@"; }
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
for i in $(seq 1 300); do head -c 262144 /dev/urandom >"$t/rank-0/shard-$i"; done
objs_before=$(count run/objects/)
"$hb" ckpt push "$t" "$U" --jobs 1 --progress none >"$tmp/p4.out" 2>&1 &
pushpid=$!
for _ in $(seq 1 600); do
	[ "$(count run/objects/)" -ge $((objs_before + 20)) ] && break
	kill -0 "$pushpid" 2>/dev/null || break
	sleep 0.05
done
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
"$hb" ckpt retain "$R" --keep 2 --grace 0 --json >"$tmp/ret.json" 2>"$tmp/ret.err" || true
mkdir "$tmp/kept"
aws s3 cp --recursive "s3://$b/ret/checkpoints/" "$tmp/kept" >/dev/null
named=$(jq -r '.files[].sha256' "$tmp"/kept/*.json | sort -u)
stored=$("$s3call" list "$b" ret/objects/ | cut -f1 | sed 's|^ret/objects/||' | sort -u)
total=$("$s3call" list "$b" ret/ | awk -F'\t' '{s += $2} END {print s}')
if [ "$(ls "$tmp/kept" | wc -l)" = 2 ] && [ "$named" = "$stored" ] &&
	[ "$(field "$tmp/ret.json" removed_checkpoints)" = 1 ] &&
	[ "$(field "$tmp/ret.json" removed_objects)" -ge 3 ] &&
	[ "$(field "$tmp/ret.json" prefix_bytes)" = "$total" ]; then
	ok "retain --keep 2 --grace 0: 2 manifests, every object named by one, $(field "$tmp/ret.json" removed_objects) removed, $total bytes stay"
else
	bad "retain: $(cat "$tmp/ret.json" "$tmp/ret.err")"
fi
"$hb" ckpt verify "$R" --json >/dev/null 2>&1 &&
	"$hb" ckpt pull "$R" "$tmp/ret-out" --progress none >/dev/null 2>&1 &&
	[ "$(tree_sum "$t")" = "$(tree_sum "$tmp/ret-out")" ] &&
	ok "after retention the newest checkpoint verifies and pulls whole" ||
	bad "newest checkpoint after retention"

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
