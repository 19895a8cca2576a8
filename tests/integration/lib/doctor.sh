# shellcheck shell=bash
# tests/integration/lib/doctor.sh - reading `hpcbridge doctor --json` in
# the doctor tests.  The sourcing script sets tmp, and ok and bad (the
# reporters); the JSON is in $tmp/d.json.
#
#   q EXPR            print a Python expression over the JSON (d) and its
#                     findings by code (f)
#   is MSG EXPR WANT  ok MSG when q EXPR prints WANT, else bad
#   documented        ok when every code of the JSON is in docs/doctor.md
#                     (the env.* and job.env.* codes as a family); the
#                     sourcing script sets src

q() {
	python3 - "$tmp/d.json" "$1" <<-'PY'
	import json, sys
	d = json.load(open(sys.argv[1]))
	f = {x["code"]: x for x in d["findings"]}
	print(eval(sys.argv[2]))
	PY
}

is() {
	local got
	got=$(q "$2" 2>&1) || true
	if [ "$got" = "$3" ]; then ok "$1"; else bad "$1: got '$got', want '$3'"; fi
}

documented() {
	local missing
	missing=$(python3 - "$tmp/d.json" "$src/docs/doctor.md" <<-'PY'
	import json, re, sys
	d = json.load(open(sys.argv[1]))
	doc = open(sys.argv[2]).read()
	for x in d["findings"]:
	    c = x["code"]
	    fam = re.sub(r"^((job\.)?env)\..*", r"\1.*", c)
	    if "`%s`" % c not in doc and "`%s`" % fam not in doc:
	        print(c)
	PY
	)
	[ -z "$missing" ] && ok "every finding's code is in docs/doctor.md" ||
		bad "codes missing from docs/doctor.md: $missing"
}
