# shellcheck shell=bash
# tests/integration/lib/kubectl.sh - the real kubectl against an emulator,
# for a test that sourced lib/kubecall.sh (ok, bad) and set kubectl and
# KUBECONFIG.
#
#   k ARGS...          kubectl with a time limit; stdout and stderr in
#                      $out, the status in $rc
#   kin FILE ARGS...   the same with FILE on stdin
#   has WHAT TEXT      ok when the last output contains TEXT, else bad

k() {
	set +e
	out=$(timeout 30 "$kubectl" "$@" </dev/null 2>&1)
	rc=$?
	set -e
}

kin() {
	local f=$1
	shift
	set +e
	out=$(timeout 30 "$kubectl" "$@" <"$f" 2>&1)
	rc=$?
	set -e
}

has() {
	if grep -qF -- "$2" <<<"$out"; then
		ok "$1"
	else
		bad "$1: no '$2' in: $(head -c 800 <<<"$out")"
	fi
}
