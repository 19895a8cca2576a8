#!/usr/bin/env bash
# Slurm is the oracle for sbatch semantics.
#
# Usage: slurm_oracle.test.sh BUILD_DIR SOURCE_DIR
#
# Brings up a private Slurm 22.05 on loopback (lib/slurm.sh), submits every
# corpus script as a held job, reads Slurm's own parse back with
# `scontrol show job -o`, and compares it with
# `hpcbridge translate --to jobspec --format json` of the same file
# (lib/oracle_compare.py).  Scripts sbatch rejects must be rejected by
# hpcbridge too, with exit 1 and `FILE:LINE: message` on stderr.
#
# Corpus: tests/corpus/sbatch/*.sh and tests/corpus/sbatch-oracle/*.sh
# (meant to be accepted), tests/corpus/sbatch-oracle/reject/*.sh (meant to
# be rejected), plus scripts generated here (DOS line breaks), and
# tests/corpus/sbatch-oracle/known/*.sh: divergences the project has chosen
# or not yet resolved, each naming its field in `# oracle-known:`; they are
# printed as KNOWN and do not fail the test, but any other mismatch in them
# does.  Also every *.sbatch in the shared realworld folder
# ($HB_SHARED_DIR/realworld, else SOURCE_DIR/../shared/realworld; read in
# place, skipped with a note when absent): scripts written elsewhere, with no
# expectation; their divergences are listed, one `NAME FIELD: why` a line, in
# tests/corpus/sbatch-oracle/realworld-known.txt, and an unlisted divergence
# or a stale line fails the test.
set -euo pipefail

build=${1:?usage: slurm_oracle.test.sh BUILD_DIR SOURCE_DIR}
src=${2:?usage: slurm_oracle.test.sh BUILD_DIR SOURCE_DIR}
build=$(cd "$build" && pwd -P)
src=$(cd "$src" && pwd -P)
here="$src/tests/integration"
hpcbridge="$build/bin/hpcbridge"
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3

# shellcheck source=lib/slurm.sh
. "$here/lib/slurm.sh"

fail() { echo "FAIL: $*" >&2; exit 1; }

[ -x "$hpcbridge" ] || fail "$hpcbridge not built"

# 0. The comparator itself: known agreeing and disagreeing samples.
"$py" "$here/lib/oracle_compare.py" selftest ||
	fail "oracle_compare.py selftest"

# Only ever bring up a Slurm of our own: never reuse another SLURM_CONF.
slurm_clean_env

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hb-oracle.XXXXXX")
chmod 0755 "$tmp"
cleanup() {
	local rc=$?
	slurm_down "$tmp/slurm" || true
	if [ "$rc" = 0 ] && [ -z "${HB_KEEP_TMP:-}" ]; then
		rm -rf "$tmp"
	else
		echo "oracle: files kept in $tmp" >&2
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# 1. The corpus.
accept=()
reject=()
known=()
shopt -s nullglob
for f in "$src"/tests/corpus/sbatch/*.sh "$src"/tests/corpus/sbatch-oracle/*.sh; do
	accept+=("$f")
done
for f in "$src"/tests/corpus/sbatch-oracle/reject/*.sh; do
	reject+=("$f")
done
for f in "$src"/tests/corpus/sbatch-oracle/known/*.sh; do
	known+=("$f")
done
realworld=()
rwdir=${HB_SHARED_DIR:-$src/../shared}/realworld
rwknown="$src/tests/corpus/sbatch-oracle/realworld-known.txt"
if [ -d "$rwdir" ]; then
	for f in "$rwdir"/*.sbatch; do
		realworld+=("$f")
	done
	[ "${#realworld[@]}" -ge 1 ] || fail "no *.sbatch in $rwdir"
	echo "oracle: ${#realworld[@]} realworld scripts from $rwdir"
else
	echo "oracle: NOTE: $rwdir is absent; realworld scripts not compared"
	rwknown=""
fi
shopt -u nullglob
[ "${#accept[@]}" -ge 10 ] || fail "corpus too small (${#accept[@]} scripts)"
[ "${#reject[@]}" -ge 5 ] || fail "reject corpus too small"

# DOS line breaks: sbatch refuses them.  Made here so that no checkout or
# editor setting can normalise them away.
mkdir -p "$tmp/gen" "$tmp/work" "$tmp/out"
printf '#!/bin/bash\r\n# oracle-expect-line: 1\r\n#SBATCH --nodes=2\r\nsrun hostname\r\n' \
	>"$tmp/gen/r90-dos-line-breaks.sh"
printf '#!/bin/bash\n# oracle-expect-line: 4\n#SBATCH --nodes=2\n#SBATCH --time=10\r\nsrun hostname\n' \
	>"$tmp/gen/r91-dos-one-line.sh"
reject+=("$tmp/gen/r90-dos-line-breaks.sh" "$tmp/gen/r91-dos-one-line.sh")

# 2. Configure the controller for what the corpus names: partitions, node
# features and licenses that do not exist would make sbatch refuse a script
# for reasons that have nothing to do with parsing.
extra=$("$py" - "${accept[@]}" "${realworld[@]}" <<'EOF'
import re, sys
parts, feats, lics, resvs = set(), set(), {}, set()
known = {"debug", "gpu", "long", "burst"}
for path in sys.argv[1:]:
    try:
        text = open(path, "rb").read().decode("utf-8", "replace")
    except OSError:
        continue
    for line in text.splitlines():
        if not line.startswith("#SBATCH"):
            if line.strip() and not line.startswith("#"):
                break
            continue
        for m in re.finditer(r"(?:--partition[= ]|(?<![-\w])-p\s*)['\"]?([\w,.-]+)", line):
            parts.update(p for p in m.group(1).split(",") if p)
        for m in re.finditer(r"(?:--constraint[= ]|(?<![-\w])-C\s*)['\"]?([^'\"\s]+)", line):
            feats.update(re.findall(r"[A-Za-z_][\w.-]*", m.group(1)))
        for m in re.finditer(r"(?:--licenses?[= ]|(?<![-\w])-L\s*)['\"]?([^'\"\s]+)", line):
            for item in m.group(1).split(","):
                name = re.split(r"[:@]", item)[0]
                if name:
                    lics[name] = 100000
        for m in re.finditer(r"--reservation[= ]['\"]?([\w,.-]+)", line):
            resvs.update(r for r in m.group(1).split(",") if r)
for p in sorted(parts - known):
    print("PART " + p)
for f in sorted(feats):
    print("FEAT " + f)
for l in sorted(lics):
    print("LIC " + l)
for r in sorted(resvs):
    print("RESV " + r)
EOF
)
conf_lines=""
feats=""
lics=""
resvs=()
while read -r kind val; do
	case "$kind" in
	PART) conf_lines+="PartitionName=$val Nodes=ALL MaxTime=INFINITE State=UP"$'\n' ;;
	FEAT) feats+="${feats:+,}$val" ;;
	LIC) lics+="${lics:+,}$val:100000" ;;
	RESV) resvs+=("$val") ;;
	esac
done <<<"$extra"
[ -z "$lics" ] || conf_lines+="Licenses=$lics"$'\n'
export HB_SLURM_EXTRA_CONF="$conf_lines"
# Without slurmdbd the controller drops --qos; this job_submit.lua records
# what sbatch sent in the admin comment, where scontrol shows it.
export HB_SLURM_JOB_SUBMIT_LUA='
function slurm_job_submit(job_desc, part_list, submit_uid)
	job_desc.admin_comment = "oracle:qos=" .. (job_desc.qos or "")
	return slurm.SUCCESS
end
function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
	return slurm.SUCCESS
end'

export HB_SLURM_NODE_FEATURES="$feats"

# 3. Slurm up, the comparison, Slurm down (by the trap).
t0=$SECONDS
slurm_up "$tmp/slurm" || fail "Slurm did not come up"
echo "oracle: Slurm up in $((SECONDS - t0))s ($SLURM_CONF)"
# Reservations the corpus names, a year ahead so that they hold no node
# now: sbatch accepts a job for a reservation that has not begun.
for r in "${resvs[@]}"; do
	scontrol create reservation ReservationName="$r" Users=root \
		StartTime=now+365days Duration=60 NodeCnt=1 >/dev/null ||
		fail "cannot create reservation $r"
done

rc=0
"$py" "$here/lib/oracle_compare.py" run --hpcbridge "$hpcbridge" \
	--workdir "$tmp/work" --out "$tmp/out" \
	--accept "${accept[@]}" --reject "${reject[@]}" \
	--known "${known[@]}" --realworld "${realworld[@]}" \
	--realworld-known "$rwknown" || rc=$?

# The comparison must really have used Slurm: every accepted script is a
# held job in the queue.
held=$(squeue -h -t PD -o '%A %r' | grep -c 'JobHeldUser' || true)
echo "oracle: $held held jobs in the queue"
[ "$held" -ge 10 ] || fail "expected the corpus as held jobs, found $held"
# ... and job_submit.lua saw every one of them (else QOS went unchecked).
recorded=$(scontrol show job -o | grep -c ' AdminComment=oracle:qos=' || true)
[ "$recorded" = "$held" ] ||
	fail "job_submit.lua recorded $recorded of $held jobs"

[ "$rc" = 0 ] || fail "Slurm and hpcbridge disagree (see MISMATCH lines)"
echo "PASS: slurm_oracle"
