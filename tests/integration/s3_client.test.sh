#!/usr/bin/env bash
# s3_client.test.sh - hpcbridge's own S3 client (gateway/s3, driven by
# tests/integration/s3call) against a real S3 server that checks SigV4
# signatures: the private Swift with s3api of tests/integration/lib/
# swift.sh.  Each check compares with what Debian's aws CLI sees:
#
#   * a PUT, a HEAD and a GET round trip, SHA-256 compared, and the aws
#     CLI gets the same bytes back;
#   * a key that needs URI encoding in the signature (spaces, '+', '%',
#     UTF-8) is stored under exactly that key;
#   * a ranged GET across a part boundary;
#   * a 20 MiB multipart upload in 8 MiB parts from 3 threads: the aws CLI
#     sees one 3-part object with the same bytes;
#   * a listing in pages of one key walks every key once;
#   * a wrong secret is refused (403 SignatureDoesNotMatch), stores
#     nothing, and the secret is in no message;
#   * DELETE removes the object.
#
# Usage: s3_client.test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail

build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
s3call=$build/tests/s3call

fails=0
ok() { printf 'ok: %s\n' "$*"; }
bad() {
	printf 'FAIL: %s\n' "$*"
	fails=$((fails + 1))
}

# shellcheck source=tests/integration/lib/swift.sh
. "$src/tests/integration/lib/swift.sh"

swift_test_start s3client
sha() { sha256sum "$1" | cut -d' ' -f1; }

b=hb-client-test
aws s3 mb "s3://$b" >/dev/null || {
	echo "FAIL: aws s3 mb"
	exit 1
}
mkdir "$tmp/data" "$tmp/back"
printf 'step 7 of 10\n' >"$tmp/data/small"
head -c $((20 * 1024 * 1024)) /dev/urandom >"$tmp/data/big"

# PUT, HEAD, GET; the aws CLI reads what we stored
if "$s3call" put "$b" run1/small "$tmp/data/small" &&
	"$s3call" get "$b" run1/small >"$tmp/back/small" &&
	[ "$(sha "$tmp/back/small")" = "$(sha "$tmp/data/small")" ] &&
	aws s3 cp "s3://$b/run1/small" "$tmp/back/small.aws" >/dev/null &&
	cmp -s "$tmp/back/small.aws" "$tmp/data/small"; then
	ok "put and get round trip; the aws CLI reads the same bytes"
else
	bad "put/get round trip"
fi
"$s3call" head "$b" run1/small >"$tmp/head" 2>&1 && grep -qw "size 13" "$tmp/head" &&
	ok "head: $(tr '\n' ' ' <"$tmp/head")" || bad "head: $(cat "$tmp/head")"

# a file streamed as it is read: stored when it holds what was promised;
# cut short, with nothing stored, when it does not
: >"$tmp/data/empty"
if "$s3call" putfile "$b" stream/big "$tmp/data/big" &&
	aws s3 cp "s3://$b/stream/big" "$tmp/back/streamed" >/dev/null &&
	cmp -s "$tmp/back/streamed" "$tmp/data/big" &&
	"$s3call" putfile "$b" stream/empty "$tmp/data/empty" &&
	"$s3call" head "$b" stream/empty | grep -qw "size 0"; then
	ok "putfile streams 20 MiB and an empty file; the aws CLI reads the same bytes"
else
	bad "putfile round trip"
fi
other=$(printf 'not these bytes' | sha256sum | cut -d' ' -f1)
big_size=$(stat -c %s "$tmp/data/big")
for t in "wrong digest:$big_size $other" "grew past its size:$((big_size - 4096))"; do
	# shellcheck disable=SC2086 # SIZE [SHA256] are two words
	if ! "$s3call" putfile "$b" stream/cut "$tmp/data/big" ${t#*:} >"$tmp/cut.out" 2>&1 &&
		grep -q "changed while it was sent" "$tmp/cut.out" &&
		! aws s3api head-object --bucket "$b" --key stream/cut >/dev/null 2>&1; then
		ok "putfile of a file that ${t%%:*}: refused, nothing stored"
	else
		bad "putfile, ${t%%:*}: $(cat "$tmp/cut.out")"
	fi
done

# a key the signature must encode
key='run1/a b+c%d é.txt'
if "$s3call" put "$b" "$key" "$tmp/data/small" &&
	aws s3api list-objects-v2 --bucket "$b" --prefix run1/a \
		--query 'Contents[].Key' --output text | grep -qxF "$key"; then
	ok "a key with space, '+', '%' and UTF-8 is signed and stored as given"
else
	bad "key '$key' not stored as given"
fi

# multipart from 3 threads, read back by the aws CLI
if "$s3call" mpu "$b" run1/big "$tmp/data/big" 8 3 &&
	aws s3 cp "s3://$b/run1/big" "$tmp/back/big" >/dev/null &&
	[ "$(sha "$tmp/back/big")" = "$(sha "$tmp/data/big")" ]; then
	etag=$(aws s3api head-object --bucket "$b" --key run1/big \
		--query ETag --output text)
	case $etag in
	*-3*) ok "20 MiB multipart in 3 parts from 3 threads; the aws CLI gets the same bytes ($etag)" ;;
	*) bad "multipart object's ETag $etag is not 3 parts" ;;
	esac
else
	bad "multipart upload"
fi

# a range across the first part's end
off=$((8 * 1024 * 1024 - 1000))
"$s3call" get "$b" run1/big "$off" 4096 >"$tmp/back/range" &&
	cmp -s "$tmp/back/range" <(tail -c +$((off + 1)) "$tmp/data/big" | head -c 4096) &&
	ok "ranged GET across a part boundary" || bad "ranged GET"

# pages of one key: every key once
"$s3call" pages "$b" run1/ 1 >"$tmp/pages" 2>&1 || bad "pages: $(cat "$tmp/pages")"
keys=$(grep -c $'\t' "$tmp/pages" || true)
[ "$keys" = 3 ] && [ "$(cut -f1 "$tmp/pages" | grep -v '^pages' | sort -u | wc -l)" = 3 ] &&
	grep -qx 'pages 3' "$tmp/pages" &&
	ok "listing in pages of one: 3 keys in 3 pages" ||
	bad "pages: $(cat "$tmp/pages")"

# a wrong secret: refused, nothing stored, the secret in no message
wrong=hb-wrong-$RANDOM$RANDOM
rc=0
AWS_SECRET_ACCESS_KEY=$wrong "$s3call" put "$b" run1/forged "$tmp/data/small" \
	>"$tmp/wrong.out" 2>&1 || rc=$?
if [ "$rc" != 0 ] && grep -q SignatureDoesNotMatch "$tmp/wrong.out" &&
	! grep -q "$wrong" "$tmp/wrong.out" &&
	! grep -q "$AWS_SECRET_ACCESS_KEY" "$tmp/wrong.out" &&
	! aws s3api head-object --bucket "$b" --key run1/forged >/dev/null 2>&1; then
	ok "wrong secret refused ($(head -c 120 "$tmp/wrong.out")), nothing stored, no secret printed"
else
	bad "wrong secret (exit $rc): $(cat "$tmp/wrong.out")"
fi

# DELETE
"$s3call" delete "$b" run1/small &&
	! aws s3api head-object --bucket "$b" --key run1/small >/dev/null 2>&1 &&
	ok "delete" || bad "delete"

[ "$fails" = 0 ] || {
	swift_logs "$sw"
	exit 1
}
