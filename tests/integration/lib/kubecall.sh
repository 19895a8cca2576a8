# kubecall.sh - checks that drive the C Kubernetes client through
# tests/integration/kubecall.c, for the kube_client tests.  The sourcing
# script sets kc (the kubecall binary) and tmp (its scratch directory).
#
#   ok MSG / bad MSG / die MSG   report a check (bad counts it in $fails)
#   call ARGS...                 kubecall ARGS; stdout in $tmp/out, stderr
#                                in $tmp/err (and appended to
#                                $tmp/all.err); the status line's fields in
#                                rc, http, reason, attempts, ms
#   expect WHAT RC [HTTP]        the last call's outcome
#   jget EXPR                    a Python expression over the last output
#                                (as d)
#   cm NAME VALUE [LABELS]       a ConfigMap manifest in $tmp/NAME.yaml

fails=0
ok() { printf 'ok: %s\n' "$*"; }
bad() {
	printf 'FAIL: %s\n' "$*"
	fails=$((fails + 1))
}
die() {
	printf 'FAIL: %s\n' "$*"
	exit 1
}

call() {
	set +e
	"$kc" "$@" >"$tmp/out" 2>"$tmp/err"
	set -e
	local line
	line=$(grep '^status ' "$tmp/err" | tail -n 1)
	rc=$(sed -n 's/.* rc=\([^ ]*\).*/\1/p' <<<"$line")
	http=$(sed -n 's/.* http=\([^ ]*\).*/\1/p' <<<"$line")
	reason=$(sed -n 's/.* reason=\([^ ]*\).*/\1/p' <<<"$line")
	attempts=$(sed -n 's/.* attempts=\([^ ]*\).*/\1/p' <<<"$line")
	ms=$(sed -n 's/.* ms=\([^ ]*\).*/\1/p' <<<"$line")
	cat "$tmp/err" >>"$tmp/all.err"
}

expect() {
	local what=$1 want=$2 wanthttp=${3:-}
	if [ "$rc" = "$want" ] && { [ -z "$wanthttp" ] || [ "$http" = "$wanthttp" ]; }; then
		ok "$what ($rc${http:+ $http})"
	else
		bad "$what: rc=$rc http=$http, want $want${wanthttp:+ $wanthttp}: $(grep '^error' "$tmp/err" | tail -1)"
	fi
}

jget() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$tmp/out" "$1"; }

cm() {
	printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  labels: {%s}\ndata:\n  v: "%s"\n' \
		"$1" "${3:-}" "$2" >"$tmp/$1.yaml"
}
