#!/usr/bin/env bash
# sandbox_s3.test.sh - the sandbox's S3 server (hpcbridge sandbox up,
# scripts/sandbox.sh): the `export` lines `up` prints are enough for
# Debian's clients:
#
#   * the aws CLI lists the checkpoint bucket hpcbridge-ckpt, and a file
#     goes up with `aws s3 cp` and comes back the same (SHA-256);
#   * rclone (remote hbswift:) and s3cmd (S3CMD_CONFIG) list it;
#   * a wrong secret is refused with 403 and stores nothing;
#   * hpcbridge.yaml names the bucket, the endpoint and a Secret, never a
#     key; `hpcbridge sandbox env` prints the same endpoint and key, and
#     `up` again keeps the running servers;
#   * a burst job with --hpcbridge-checkpoint becomes an MPIJob (admitted
#     under Pod Security "restricted") whose launcher has the init
#     container that pulls s3://hpcbridge-ckpt/jobs/UID/NAME-HASH, its
#     credentials by secretKeyRef, and whose job sees HPCBRIDGE_CKPT_URL
#     and HPCBRIDGE_CKPT_DIR;
#   * `sandbox down` leaves none of this sandbox's Swift servers running
#     (checked by the PIDs swift_up recorded).
#
# usage: sandbox_s3.test.sh BUILD_DIR SRC_DIR
set -euo pipefail

build=$(cd "${1:?BUILD_DIR}" && pwd)
src=$(cd "${2:?SRC_DIR}" && pwd)
tmp=$(mktemp -d /tmp/hb-sbs3.XXXXXX)
chmod 755 "$tmp" # the swift user reaches its device under it
aws=/usr/bin/aws
for b in "$aws" /usr/bin/rclone /usr/bin/s3cmd /usr/bin/swift-proxy-server; do
	[ -x "$b" ] || {
		echo "FAIL: $b missing (scripts/setup.sh installs it)"
		exit 1
	}
done
export HB_SANDBOX_BACKEND=kubernetes
# shellcheck source=lib/sandbox_test.sh
. "$src/tests/integration/lib/sandbox_test.sh"
sandbox_test_up
ok "sandbox up"

for v in AWS_ENDPOINT_URL AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY \
	AWS_DEFAULT_REGION S3CMD_CONFIG HB_SANDBOX_CKPT_URL; do
	if grep -q "^export $v=" "$tmp/env"; then
		ok "up prints $v"
	else
		bad "up does not print $v"
	fi
done
case ${AWS_ENDPOINT_URL:-} in
http://127.0.0.1:[0-9]*) ok "endpoint $AWS_ENDPOINT_URL" ;;
*) die "AWS_ENDPOINT_URL is '${AWS_ENDPOINT_URL:-}'" ;;
esac

# 1. The aws CLI: the bucket, a round trip.
if out=$("$aws" --endpoint-url "$AWS_ENDPOINT_URL" s3 ls 2>&1) &&
	grep -q ' hpcbridge-ckpt$' <<<"$out"; then
	ok "aws s3 ls lists hpcbridge-ckpt"
else
	bad "aws s3 ls: $out"
fi
head -c 3000000 /dev/urandom >"$tmp/state.bin"
if "$aws" --endpoint-url "$AWS_ENDPOINT_URL" s3 cp --only-show-errors \
	"$tmp/state.bin" "$HB_SANDBOX_CKPT_URL/try/state.bin" &&
	"$aws" --endpoint-url "$AWS_ENDPOINT_URL" s3 cp --only-show-errors \
		"$HB_SANDBOX_CKPT_URL/try/state.bin" "$tmp/back.bin"; then
	if [ "$(sha256sum <"$tmp/state.bin")" = "$(sha256sum <"$tmp/back.bin")" ]; then
		ok "aws s3 cp round trip (SHA-256 equal)"
	else
		bad "aws s3 cp: the file came back different"
	fi
else
	bad "aws s3 cp failed"
fi

# 2. rclone and s3cmd from the same environment.
if out=$(rclone --config /dev/null lsf -R hbswift:hpcbridge-ckpt 2>&1) &&
	grep -qx 'jobs/try/state.bin' <<<"$out"; then
	ok "rclone lists the object"
else
	bad "rclone lsf: $out"
fi
if out=$(s3cmd ls -r s3://hpcbridge-ckpt 2>&1) &&
	grep -q ' 3000000 *s3://hpcbridge-ckpt/jobs/try/state.bin$' <<<"$out"; then
	ok "s3cmd lists the object"
else
	bad "s3cmd ls: $out"
fi

# 3. A wrong secret: 403, nothing stored.
if out=$(AWS_SECRET_ACCESS_KEY=0123456789abcdef0123456789abcdef "$aws" \
	--endpoint-url "$AWS_ENDPOINT_URL" s3 cp "$tmp/state.bin" \
	"$HB_SANDBOX_CKPT_URL/try/forged.bin" 2>&1); then
	bad "a wrong secret was accepted"
elif grep -q '403\|SignatureDoesNotMatch' <<<"$out"; then
	ok "a wrong secret is refused (403)"
else
	bad "a wrong secret failed otherwise: $out"
fi
if "$aws" --endpoint-url "$AWS_ENDPOINT_URL" s3 ls \
	"$HB_SANDBOX_CKPT_URL/try/forged.bin" >/dev/null 2>&1; then
	bad "the forged upload was stored"
else
	ok "the forged upload stored nothing"
fi

# 4. The configuration names the location, never a key.
if grep -q "url: $HB_SANDBOX_CKPT_URL" "$box/hpcbridge.yaml" &&
	grep -q "endpoint: $AWS_ENDPOINT_URL" "$box/hpcbridge.yaml"; then
	ok "hpcbridge.yaml names the checkpoint location and endpoint"
else
	bad "hpcbridge.yaml lacks checkpoints.url or endpoint"
fi
if grep -qF "$AWS_SECRET_ACCESS_KEY" "$box/hpcbridge.yaml"; then
	bad "hpcbridge.yaml holds the secret key"
else
	ok "hpcbridge.yaml holds no secret key"
fi

# 5. `sandbox env` again, and `up` again keeps the servers.
env2=$("$build/bin/hpcbridge" sandbox env --dir "$box")
if grep -qx "export AWS_ENDPOINT_URL=$AWS_ENDPOINT_URL" <<<"$env2" &&
	grep -qx "export AWS_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY" <<<"$env2"; then
	ok "hpcbridge sandbox env prints the same endpoint and key"
else
	bad "hpcbridge sandbox env: $env2"
fi
pids=$(cat "$box"/swift/.hbswift/pids/*)
[ "$(wc -w <<<"$pids")" = 4 ] || die "swift pids: '$pids'"
bash "$src/scripts/sandbox.sh" up "$box" "$build" >"$tmp/env2" 2>/dev/null ||
	bad "up again failed"
if [ "$(cat "$box"/swift/.hbswift/pids/*)" = "$pids" ] &&
	grep -qx "export AWS_ENDPOINT_URL=$AWS_ENDPOINT_URL" "$tmp/env2"; then
	ok "up again keeps Swift and prints its endpoint"
else
	bad "up again restarted Swift or changed its endpoint"
fi

# 6. A burst job with a checkpoint directory: the MPIJob carries its S3
# location and the init container; the job sees the location.
uid=$(id -u "$HB_SANDBOX_USER")
cat >"$tmp/ckpt.sh" <<'EOF'
#!/bin/sh
#SBATCH --partition=gpu
#SBATCH --output=ckpt-%j.out
echo "url=$HPCBRIDGE_CKPT_URL"
echo "dir=$HPCBRIDGE_CKPT_DIR"
EOF
id=$(submit_user "$tmp/ckpt.sh" "--hpcbridge-checkpoint=$HB_SANDBOX_WORK/ckpt")
[ -n "$id" ] || die "sbatch ckpt.sh: $(cat "$tmp/sbatch.err")"
hb=$(gateway_id "$id")
st=$(wait_final "$id")
[ "$st" = COMPLETED ] && ok "checkpoint job: COMPLETED" ||
	bad "checkpoint job: $st"
out=$HB_SANDBOX_WORK/ckpt-$id.out
url=$(sed -n 's/^url=//p' "$out" 2>/dev/null)
if [[ $url =~ ^s3://hpcbridge-ckpt/jobs/$uid/ckpt-[0-9a-f]{16}$ ]]; then
	ok "the job sees HPCBRIDGE_CKPT_URL=$url"
else
	bad "HPCBRIDGE_CKPT_URL in the job: '$url' ($(cat "$out" 2>&1))"
fi
grep -qx "dir=$HB_SANDBOX_WORK/ckpt" "$out" &&
	ok "the job sees HPCBRIDGE_CKPT_DIR" ||
	bad "HPCBRIDGE_CKPT_DIR in the job: $(cat "$out" 2>&1)"
kubectl get mpijob "$hb" -o json >"$tmp/ckpt.json" 2>&1 ||
	bad "kubectl get mpijob $hb: $(cat "$tmp/ckpt.json")"
if /usr/bin/python3 - "$tmp/ckpt.json" "$url" "$HB_SANDBOX_WORK/ckpt" <<'PY'; then
import json, sys
doc = json.load(open(sys.argv[1]))
url, d = sys.argv[2], sys.argv[3]
rs = doc["spec"]["mpiReplicaSpecs"]
ic = rs["Launcher"]["template"]["spec"]["initContainers"]
assert len(ic) == 1 and ic[0]["name"] == "hpcbridge-ckpt", ic
c = ic[0]
assert c["command"] == ["hpcbridge", "ckpt", "pull", url, d,
                        "--if-exists", "--progress", "json"], c["command"]
env = {e["name"]: e for e in c["env"]}
for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
    assert "value" not in env[k], env[k]
    assert env[k]["valueFrom"]["secretKeyRef"] == \
        {"name": "hpcbridge-s3", "key": k}, env[k]
assert c["securityContext"]["allowPrivilegeEscalation"] is False
# on the site volume: the workers pull nothing
assert "initContainers" not in rs["Worker"]["template"]["spec"]
PY
	ok "the MPIJob's launcher pulls $url first, credentials from the Secret"
else
	bad "the MPIJob's init container (kubectl get mpijob $hb -o json)"
fi

# 7. down stops every Swift server of this sandbox, by PID.
bash "$src/scripts/sandbox.sh" down "$box" >/dev/null 2>&1 ||
	bad "sandbox down failed"
left=
for p in $pids; do
	if [ -r "/proc/$p/cmdline" ] &&
		tr '\0' ' ' <"/proc/$p/cmdline" | grep -qF "$box/swift/"; then
		left="$left $p"
	fi
done
if [ -z "$left" ]; then
	ok "sandbox down left no Swift server (pids $(echo $pids))"
else
	bad "Swift servers left running:$left"
fi
if curl -s --max-time 2 "$AWS_ENDPOINT_URL/healthcheck" >/dev/null 2>&1; then
	bad "the endpoint still answers after down"
else
	ok "the endpoint answers no more"
fi

sandbox_test_end
echo "sandbox_s3: all checks passed"
