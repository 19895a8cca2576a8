#!/usr/bin/env bash
# swift.test.sh - the private Swift of tests/integration/lib/swift.sh is a
# real S3 server for the clients people use: Debian's aws CLI, rclone and
# s3cmd create a bucket, put a small file and a 20 MiB one (multipart),
# list them (also in pages of one), get them back (SHA-256 compared),
# fetch a range, abort a multipart upload, delete; curl's SigV4 with the
# body's digest is accepted; a wrong secret gets 403
# SignatureDoesNotMatch and writes nothing; the second user cannot see or
# read the first user's bucket.  Then
# swift_down stops every server by PID, twice, and frees the ports.
# Prints how long Swift took to start and the memory its servers use.
#
# Usage: swift.test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail

src=$(cd "$2" && pwd)

fail() {
	echo "FAIL: $*" >&2
	[ -n "${sw:-}" ] && swift_logs "$sw"
	exit 1
}

# Debian's clients, not whatever else PATH holds first.
aws_bin=/usr/bin/aws
for b in "$aws_bin" /usr/bin/rclone /usr/bin/s3cmd /usr/bin/swift-proxy-server; do
	[ -x "$b" ] || fail "$b missing (scripts/setup.sh installs it)"
done

# shellcheck source=tests/integration/lib/swift.sh
. "$src/tests/integration/lib/swift.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hb-swift-test.XXXXXX")
chmod 0711 "$tmp" # the swift user must reach the device under it
sw=$tmp/swift
cleanup() {
	swift_down "$sw"
	rm -rf -- "$tmp"
}
trap cleanup EXIT

ms() { echo $(($(date +%s%N) / 1000000)); }

t0=$(ms)
swift_up "$sw" || fail "swift_up"
startup_ms=$(($(ms) - t0))
rss_kib=$(swift_rss_kib "$sw")
echo "swift: up in ${startup_ms} ms; its four servers use $((rss_kib / 1024)) MiB (RSS)"
[ "$rss_kib" -gt 0 ] || fail "no server's memory found"

for v in AWS_ENDPOINT_URL AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY \
	AWS_DEFAULT_REGION HB_SWIFT_ACCESS_KEY_ID2 HB_SWIFT_SECRET_ACCESS_KEY2; do
	[ -n "${!v:-}" ] || fail "swift_up did not export $v"
done
[ "$HB_SWIFT_ACCESS_KEY_ID2" != "$AWS_ACCESS_KEY_ID" ] || fail "one user twice"
case "$AWS_ENDPOINT_URL" in
http://127.0.0.1:*) ;;
*) fail "endpoint $AWS_ENDPOINT_URL is not on loopback" ;;
esac

# As root the servers run as the swift user, each its recorded PID.
pids=$(cat "$sw"/.hbswift/pids/*)
[ "$(echo "$pids" | wc -l)" = 4 ] || fail "expected 4 server PIDs: $pids"
if [ "$(id -u)" = 0 ]; then
	for p in $pids; do
		u=$(stat -c %U "/proc/$p")
		[ "$u" = swift ] || fail "server $p runs as $u, not swift"
	done
fi
# Another shell gets the same endpoint and keys from swift_env.
# shellcheck disable=SC2016
[ "$(env -i bash -c 'eval "$1"; echo "$AWS_ENDPOINT_URL $AWS_ACCESS_KEY_ID"' \
	_ "$(swift_env "$sw")")" = "$AWS_ENDPOINT_URL $AWS_ACCESS_KEY_ID" ] ||
	fail "swift_env does not give the same endpoint and key"

aws() { "$aws_bin" --endpoint-url "$AWS_ENDPOINT_URL" "$@"; }
# as2 CMD...: the second user.
as2() {
	AWS_ACCESS_KEY_ID=$HB_SWIFT_ACCESS_KEY_ID2 \
		AWS_SECRET_ACCESS_KEY=$HB_SWIFT_SECRET_ACCESS_KEY2 "$@"
}
sha() { sha256sum "$1" | cut -d' ' -f1; }

data=$tmp/data
mkdir "$data"
printf 'checkpoint step 42\n' >"$data/small.txt"
head -c $((20 * 1024 * 1024)) /dev/urandom >"$data/big.bin"

# ---- aws CLI: bucket, two objects (one multipart), list, get, range, delete
b=hb-ckpt-test
aws s3 mb "s3://$b" >/dev/null || fail "aws s3 mb"
aws s3api list-buckets --query 'Buckets[].Name' --output text |
	grep -qw "$b" || fail "the new bucket is not listed"
t0=$(ms)
aws s3 cp "$data/small.txt" "s3://$b/run1/small.txt" >/dev/null ||
	fail "aws put small"
aws s3 cp "$data/big.bin" "s3://$b/run1/big.bin" >/dev/null ||
	fail "aws put 20 MiB"
echo "aws: put 20 MiB + a small file in $(($(ms) - t0)) ms"
# 20 MiB is over the CLI's 8 MiB multipart threshold: the ETag of a
# multipart object ends in -PARTS.
etag=$(aws s3api head-object --bucket "$b" --key run1/big.bin \
	--query ETag --output text)
case "$etag" in
*-3*) ;;
*) fail "20 MiB was not stored as a 3-part multipart upload (ETag $etag)" ;;
esac
size=$(aws s3api head-object --bucket "$b" --key run1/big.bin \
	--query ContentLength --output text)
[ "$size" = $((20 * 1024 * 1024)) ] || fail "HEAD says $size bytes"

listing=$(aws s3api list-objects-v2 --bucket "$b" --prefix run1/ \
	--query 'Contents[].[Key,Size]' --output text)
[ "$(printf '%s\n' "$listing" | sort)" = "$(printf 'run1/big.bin\t%s\nrun1/small.txt\t19' \
	$((20 * 1024 * 1024)))" ] || fail "listing: $listing"

mkdir "$tmp/back"
aws s3 cp "s3://$b/run1/big.bin" "$tmp/back/big.bin" >/dev/null ||
	fail "aws get 20 MiB"
aws s3 cp "s3://$b/run1/small.txt" "$tmp/back/small.txt" >/dev/null ||
	fail "aws get small"
[ "$(sha "$tmp/back/big.bin")" = "$(sha "$data/big.bin")" ] ||
	fail "the 20 MiB object came back different"
[ "$(sha "$tmp/back/small.txt")" = "$(sha "$data/small.txt")" ] ||
	fail "the small object came back different"

# A range that crosses the first part's end (8 MiB).
off=$((8 * 1024 * 1024 - 1000))
aws s3api get-object --bucket "$b" --key run1/big.bin \
	--range "bytes=$off-$((off + 4095))" "$tmp/back/range" >/dev/null ||
	fail "ranged GET"
[ "$(stat -c %s "$tmp/back/range")" = 4096 ] || fail "range is not 4096 bytes"
cmp -s "$tmp/back/range" <(tail -c +$((off + 1)) "$data/big.bin" | head -c 4096) ||
	fail "the range's bytes differ"

# Listing in pages of one, as a client that paginates sees it.
page=$(aws s3api list-objects-v2 --bucket "$b" --max-keys 1 --no-paginate \
	--query '[KeyCount, IsTruncated, NextContinuationToken != null]' \
	--output text)
[ "$page" = "$(printf '1\tTrue\tTrue')" ] ||
	fail "a page of one: expected 1, truncated, a token; got: $page"
tok=$(aws s3api list-objects-v2 --bucket "$b" --max-keys 1 --no-paginate \
	--query NextContinuationToken --output text)
[ "$(aws s3api list-objects-v2 --bucket "$b" --max-keys 1 --no-paginate \
	--continuation-token "$tok" --query 'Contents[0].Key' --output text)" = \
	run1/small.txt ] || fail "the second page is not the second key"

# A multipart upload that is aborted leaves no upload and no object.
up=$(aws s3api create-multipart-upload --bucket "$b" --key run1/aborted \
	--query UploadId --output text) || fail "create-multipart-upload"
aws s3api upload-part --bucket "$b" --key run1/aborted --upload-id "$up" \
	--part-number 1 --body "$data/small.txt" >/dev/null || fail "upload-part"
aws s3api list-multipart-uploads --bucket "$b" \
	--query 'Uploads[].UploadId' --output text | grep -qF "$up" ||
	fail "the open upload is not listed"
aws s3api abort-multipart-upload --bucket "$b" --key run1/aborted \
	--upload-id "$up" || fail "abort-multipart-upload"
aws s3api list-multipart-uploads --bucket "$b" \
	--query 'Uploads[].UploadId' --output text | grep -qF "$up" &&
	fail "the aborted upload is still listed"
aws s3api head-object --bucket "$b" --key run1/aborted >/dev/null 2>&1 &&
	fail "an aborted upload left an object"

# curl's SigV4 (libcurl's, which hpcbridge's client uses) with the body's
# digest in x-amz-content-sha256 is accepted; the key holds ':', so it
# goes in through a netrc file (the library's own, for the first user).
code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT \
	--aws-sigv4 "aws:amz:$AWS_DEFAULT_REGION:s3" \
	--netrc-file "$sw/.hbswift/netrc" \
	-H "x-amz-content-sha256: $(sha "$data/small.txt")" \
	--data-binary @"$data/small.txt" "$AWS_ENDPOINT_URL/$b/curl/small.txt")
[ "$code" = 200 ] || fail "a PUT signed by curl: HTTP $code"
[ "$(aws s3 cp "s3://$b/curl/small.txt" -)" = "checkpoint step 42" ] ||
	fail "curl's object reads back different"
aws s3 rm "s3://$b/curl/small.txt" >/dev/null || fail "rm curl's object"

# ---- a wrong secret: 403 SignatureDoesNotMatch, and nothing written
err=$(AWS_SECRET_ACCESS_KEY=not-the-secret aws s3 cp "$data/small.txt" \
	"s3://$b/run1/intruder.txt" 2>&1) && fail "a wrong secret could PUT"
case "$err" in
*SignatureDoesNotMatch*) ;;
*) fail "wrong secret: expected SignatureDoesNotMatch, got: $err" ;;
esac
# The status itself, from curl.
printf 'machine 127.0.0.1 login %s password wrong\n' "$AWS_ACCESS_KEY_ID" \
	>"$tmp/netrc.bad"
code=$(curl -s -o "$tmp/bad.xml" -w '%{http_code}' -X PUT \
	--aws-sigv4 "aws:amz:$AWS_DEFAULT_REGION:s3" --netrc-file "$tmp/netrc.bad" \
	-H "x-amz-content-sha256: $(sha "$data/small.txt")" \
	--data-binary @"$data/small.txt" "$AWS_ENDPOINT_URL/$b/run1/intruder.txt")
[ "$code" = 403 ] || fail "wrong secret over curl: HTTP $code, not 403"
grep -q SignatureDoesNotMatch "$tmp/bad.xml" ||
	fail "403 without SignatureDoesNotMatch: $(cat "$tmp/bad.xml")"
aws s3api head-object --bucket "$b" --key run1/intruder.txt >/dev/null 2>&1 &&
	fail "a request with a wrong secret stored an object"
[ "$(aws s3api list-objects-v2 --bucket "$b" --query 'length(Contents)' \
	--output text)" = 2 ] || fail "the bucket changed after refused writes"

# ---- the second user: cannot list or read the first user's bucket
as2 aws s3api list-buckets --query 'Buckets[].Name' --output text |
	grep -qw "$b" && fail "the second user lists the first user's bucket"
err=$(as2 aws s3 ls "s3://$b/" 2>&1) &&
	fail "the second user listed the first user's bucket"
case "$err" in
*NoSuchBucket* | *AccessDenied*) ;;
*) fail "second user's listing: unexpected error: $err" ;;
esac
as2 aws s3api get-object --bucket "$b" --key run1/small.txt \
	"$tmp/back/stolen" >/dev/null 2>&1 &&
	fail "the second user read the first user's object"
[ ! -s "$tmp/back/stolen" ] || fail "the second user got bytes"
# ... and has buckets of its own.
as2 aws s3 mb s3://hb-other-user >/dev/null || fail "second user's mb"
aws s3api list-buckets --query 'Buckets[].Name' --output text |
	grep -qw hb-other-user && fail "the first user sees the second's bucket"

# ---- rclone (remote hbswift: from swift_up's RCLONE_CONFIG_HBSWIFT_*)
rc() { /usr/bin/rclone --config /dev/null "$@"; }
t0=$(ms)
rc copy "$data" hbswift:$b/rclone || fail "rclone copy"
echo "rclone: copy of 20 MiB + a small file in $(($(ms) - t0)) ms"
[ "$(rc lsf hbswift:$b/rclone | sort | tr '\n' ' ')" = "big.bin small.txt " ] ||
	fail "rclone lsf: $(rc lsf hbswift:$b/rclone)"
rc copy hbswift:$b/rclone "$tmp/rback" || fail "rclone copy back"
[ "$(sha "$tmp/rback/big.bin")" = "$(sha "$data/big.bin")" ] ||
	fail "rclone: the 20 MiB object came back different"
# rclone reads what the aws CLI stored, and the reverse.
[ "$(rc cat hbswift:$b/run1/small.txt)" = "checkpoint step 42" ] ||
	fail "rclone cannot read the aws CLI's object"
[ "$(aws s3 cp "s3://$b/rclone/small.txt" -)" = "checkpoint step 42" ] ||
	fail "the aws CLI cannot read rclone's object"
AWS_SECRET_ACCESS_KEY=wrong rc lsf hbswift:$b >/dev/null 2>&1 &&
	fail "rclone with a wrong secret listed the bucket"

# ---- s3cmd
s3c() {
	/usr/bin/s3cmd --config=/dev/null --no-ssl \
		--host="${AWS_ENDPOINT_URL#http://}" \
		--host-bucket="${AWS_ENDPOINT_URL#http://}" \
		--region="$AWS_DEFAULT_REGION" --access_key="$AWS_ACCESS_KEY_ID" \
		--secret_key="$AWS_SECRET_ACCESS_KEY" "$@"
}
s3c put -q "$data/small.txt" "s3://$b/s3cmd/small.txt" || fail "s3cmd put"
s3c ls "s3://$b/s3cmd/" | grep -q "s3://$b/s3cmd/small.txt" ||
	fail "s3cmd ls does not list its object"
s3c get -q "s3://$b/run1/big.bin" "$tmp/back/s3cmd.bin" || fail "s3cmd get"
[ "$(sha "$tmp/back/s3cmd.bin")" = "$(sha "$data/big.bin")" ] ||
	fail "s3cmd: the 20 MiB object came back different"

# ---- delete
aws s3 rm --recursive "s3://$b/" >/dev/null || fail "aws s3 rm"
aws s3api list-objects-v2 --bucket "$b" --query 'Contents[].Key' \
	--output text | grep -v '^None$' | grep -q . &&
	fail "objects left after delete"
aws s3api head-object --bucket "$b" --key run1/big.bin >/dev/null 2>&1 &&
	fail "a deleted object still answers HEAD"
aws s3 rb "s3://$b" >/dev/null || fail "aws s3 rb"
aws s3api list-buckets --query 'Buckets[].Name' --output text |
	grep -qw "$b" && fail "the deleted bucket is still listed"

# ---- down: every server stopped by PID, twice is fine, ports freed
read -r port_base <"$sw/.hbswift/ports"
swift_down "$sw"
for p in $pids; do
	grep -qzF "$sw/etc/" "/proc/$p/cmdline" 2>/dev/null &&
		fail "server $p survived swift_down"
done
swift_down "$sw" || fail "a second swift_down failed"
[ ! -e "/tmp/hbslurm-ports/$port_base" ] || fail "port claim $port_base kept"
swift_is_up "$sw" && fail "Swift still answers after swift_down"
echo "swift.test.sh: OK (startup ${startup_ms} ms, $((rss_kib / 1024)) MiB)"
