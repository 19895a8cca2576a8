#!/usr/bin/env bash
# The man pages say what the programs do: every hpcbridge command and
# option its --help prints is in hpcbridge(1) and the reverse, the same for
# hpcbridged(8), every configuration key of the table in hpcbridge.yaml(5)
# (its KEYS section as gen_yaml_keys.py writes it), every policy key in
# hpcbridge-policy(5); and each page renders without a groff warning and
# has the NAME line mandb indexes.
# Then the checks are shown to catch a page that drifted (an option, a
# command or a key removed or invented, a bad macro).
#
# usage: man.test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
py=/usr/bin/python3
check=$src/tests/integration/man_check.py
man_dir=$src/docs/man
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
passes=0

ok() { passes=$((passes + 1)); }
bad() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}

"$build/tests/config_keys" >"$tmp/keys"

# run_checks DIR: the four comparisons on the pages in DIR; output in
# $tmp/check.out, 0 when all agree
run_checks() {
	local d=$1 rc=0
	: >"$tmp/check.out"
	"$py" "$check" cli "$d/hpcbridge.1" "$build/bin/hpcbridge" \
		>>"$tmp/check.out" 2>&1 || rc=1
	"$py" "$check" daemon "$d/hpcbridged.8" "$build/bin/hpcbridged" \
		>>"$tmp/check.out" 2>&1 || rc=1
	"$py" "$check" keys "$d/hpcbridge.yaml.5" "$tmp/keys" \
		>>"$tmp/check.out" 2>&1 || rc=1
	"$py" "$check" policy "$d/hpcbridge-policy.5" \
		"$src/gateway/placement/policy.c" >>"$tmp/check.out" 2>&1 || rc=1
	return $rc
}

# 1. each page renders, without a warning, and has its NAME
for page in hpcbridge.1 hpcbridged.8 hpcbridge.yaml.5 hpcbridge-policy.5; do
	if MANWIDTH=80 man --warnings -E UTF-8 -l "$man_dir/$page" \
		>"$tmp/out" 2>"$tmp/err"; then
		ok
	else
		bad "$page: man exits non-zero"
	fi
	[ ! -s "$tmp/err" ] && ok ||
		bad "$page: warnings: $(head -3 "$tmp/err")"
	grep -q '^NAME' "$tmp/out" && [ "$(wc -l <"$tmp/out")" -gt 40 ] &&
		ok || bad "$page: renders to $(wc -l <"$tmp/out") lines"
	# mandb's whatis line: "NAME - what it is"
	lexgrog "$man_dir/$page" 2>&1 | grep -qE ": \"${page%.[0-9]} - .{10,}\"$" &&
		ok || bad "$page: whatis: $(lexgrog "$man_dir/$page" 2>&1)"
done

# 2. the pages agree with the programs and the tables
if run_checks "$man_dir"; then
	ok
else
	bad "pages and programs disagree:"
	sed 's/^/    /' "$tmp/check.out" >&2
fi
grep -q '^15 commands checked' "$tmp/check.out" && ok ||
	bad "not every command was checked: $(head -1 "$tmp/check.out")"
"$py" "$man_dir/gen_yaml_keys.py" --check "$man_dir/hpcbridge.yaml.5" \
	<"$tmp/keys" >"$tmp/diff" && ok ||
	bad "hpcbridge.yaml.5's KEYS differ from the table (run gen_yaml_keys.py): $(head -20 "$tmp/diff")"

# 3. a page that drifts is caught.  mutate PAGE SED_SCRIPT WANT: a copy
# of the pages with PAGE edited must fail the checks with WANT
mutate() {
	local page=$1 script=$2 want=$3
	rm -rf "$tmp/m"
	cp -r "$man_dir" "$tmp/m"
	sed -i -e "$script" "$tmp/m/$page"
	cmp -s "$man_dir/$page" "$tmp/m/$page" &&
		{ bad "mutation '$script' changed nothing"; return; }
	if run_checks "$tmp/m"; then
		bad "$page with '$script' passes the checks"
	elif grep -qF -- "$want" "$tmp/check.out"; then
		ok
	else
		bad "$page with '$script': no '$want' in: $(cat "$tmp/check.out")"
	fi
}
# an option --help prints, missing from the page
mutate hpcbridge.1 '/^\.B \\-\\-with\\-runtime$/d' \
	'hpcbridge translate: --help lists --with-runtime'
# an option only the page has
mutate hpcbridge.1 's/^\.BI \\-\\-poll " MS"$/.BI \\-\\-pollx " MS"/' \
	'the man page documents --pollx; --help does not print it'
# a command without its section
mutate hpcbridge.1 's/^\.SS doctor$/.SS doctors/' \
	"hpcbridge doctor: no '.SS doctor'"
# a daemon option missing, and one invented
mutate hpcbridged.8 's/^\.B \\-\\-check$/.B \\-\\-checks/' \
	'hpcbridged: --help lists --check'
mutate hpcbridged.8 's/^\.B \\-\\-check$/.B \\-\\-checks/' \
	'the man page documents --checks'
# a configuration key missing, and one invented
mutate hpcbridge.yaml.5 '/^\.B daemon\.workers$/{s/workers/workerz/}' \
	'daemon.workers: a configuration key that'
mutate hpcbridge.yaml.5 '/^\.B daemon\.workers$/{s/workers/workerz/}' \
	'documents daemon.workerz, which is not a configuration key'
# a policy key missing, and one invented
mutate hpcbridge-policy.5 's/^\.B max_staging_slack$/.B max_staging/' \
	'max_staging_slack: a policy key that'
mutate hpcbridge-policy.5 's/^\.B max_staging_slack$/.B max_staging/' \
	'documents max_staging, which the policy reader does not know'
# a generated KEYS section edited by hand
cp "$man_dir/hpcbridge.yaml.5" "$tmp/y.5"
sed -i 's/^(integer; 1 to 64; default 4; restart to change)$/(integer; default 5)/' \
	"$tmp/y.5"
if cmp -s "$man_dir/hpcbridge.yaml.5" "$tmp/y.5"; then
	bad "the daemon.workers line was not found to edit"
elif "$py" "$man_dir/gen_yaml_keys.py" --check "$tmp/y.5" <"$tmp/keys" \
	>/dev/null; then
	bad "an edited KEYS section passes gen_yaml_keys.py --check"
else
	ok
fi
# a page with a macro groff does not know warns
printf '.XX oops\n' >>"$tmp/y.5"
man --warnings -E UTF-8 -l "$tmp/y.5" >/dev/null 2>"$tmp/err" || true
grep -q "macro 'XX' not defined" "$tmp/err" && ok ||
	bad "an unknown macro gives no warning: $(cat "$tmp/err")"

echo "man: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
