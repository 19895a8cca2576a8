#!/usr/bin/env bash
# pbs_vs_torque.test.sh - hpcbridge qsub side by side with Slurm's own
# PBS wrapper (Debian's slurm-wlm-torque: /usr/bin/qsub, which calls
# sbatch), on every PBS script of ../shared/realworld/*.pbs and
# tests/corpus/pbs/*.pbs, through a real slurmctld with job_submit/hpcbridge
# (the sandbox), as the sandbox's unprivileged user:
#
#   * each script is submitted held (qsub -h) by both wrappers; what the
#     Slurm job holds (scontrol show job -o: NumNodes, NumTasks, tasks per
#     node, CPUs per task, memory per CPU, GPUs, TimeLimit, ArrayTaskId,
#     StdOut, StdErr, Partition) is scored against what PBS means for the
#     script (tests/corpus/pbs/expected.tsv; a field PBS leaves open is
#     not scored, a refused script is not right);
#   * a table and both totals (scripts fully right, fields right) are
#     printed;
#   * ours must be right on every script Slurm can represent (status ok
#     in the table) and refuse those PBS itself refuses; Slurm's wrapper
#     is only recorded, and must have had scripts accepted;
#   * every job either submitted is cancelled.
#
# The test cluster has a partition per queue the scripts name, nodes with
# the features and sizes they ask for, and the licenses; nothing bursts
# (placement sends partition gpu to the cluster in the sandbox: the test
# turns that off, so that Slurm holds each job's own size, not a proxy's).
#
# usage: pbs_vs_torque.test.sh BUILD_DIR SRC_DIR
set -euo pipefail

build=$(cd "${1:?BUILD_DIR}" && pwd)
src=$(cd "${2:?SRC_DIR}" && pwd)
shared=${HB_SHARED_DIR:-$src/../shared}
tmp=$(mktemp -d /tmp/hb-pbsvs.XXXXXX)
chmod 755 "$tmp"
if ! grep -qs sbatch /usr/bin/qsub; then
	echo "FAIL: Slurm's qsub (slurm-wlm-torque) is not installed"
	exit 1
fi
export HB_SLURM_FIX_HOSTS=1 HB_SANDBOX_BACKEND=local HB_SLURM_ACCOUNTING=0
export HB_SLURM_NODES=20 HB_SLURM_CPUS=128 HB_SLURM_MEM_MB=1048576
export HB_SLURM_GPUS="a100:16"
export HB_SLURM_NODE_FEATURES="sixcore,haswell,bigmem,ib,largemem,bro,a100"
queues="route batch dgx-full gpuvolta atlas-6 cs6210 workq standard
	queue_name arc normal Q1 regular gpu_large"
HB_SLURM_EXTRA_CONF="Licenses=fluent:4,fluent_par:64"
for q in $queues; do
	HB_SLURM_EXTRA_CONF+=$'\n'"PartitionName=$q Nodes=ALL MaxTime=INFINITE State=UP"
done
export HB_SLURM_EXTRA_CONF
# shellcheck source=lib/sandbox_test.sh
. "$src/tests/integration/lib/sandbox_test.sh"
sandbox_test_up
ok "sandbox up"

wk=$HB_SANDBOX_WORK
user=$HB_SANDBOX_USER
home=$(getent passwd "$user" | cut -d: -f6)
# Nothing bursts here: placement's gpu -> kubernetes becomes slurm.
sed -i 's/^    gpu: kubernetes$/    gpu: slurm/' "$HPCBRIDGE_CONFIG"
kill -HUP "$(cat "$box/hpcbridged.pid")"
for _ in $(seq 100); do
	grep -q '"configuration reloaded"' "$box/hpcbridged.log" && break
	sleep 0.1
done
grep -q '"configuration reloaded"' "$box/hpcbridged.log" ||
	die "hpcbridged did not reload its configuration"
mkdir -p "$tmp/bin" "$tmp/rec/slurm" "$tmp/rec/ours"
ln -s "$build/bin/hpcbridge" "$tmp/bin/qsub"
printf 'pbs:\n  server_name: srv\n  submit: sbatch\n' >"$tmp/pbs.yaml"
chmod 644 "$tmp/pbs.yaml"
chmod 755 "$tmp/bin" "$tmp/rec"
as_user() {
	(cd "$wk" && runuser -u "$user" -- env PATH="$tmp/bin:$PATH" "$@")
}

# record SIDE FILE OUT: the job id in OUT (the last line), its record,
# then cancel it
ids=()
record() {
	local side=$1 f=$2 out=$3 id
	id=$(printf '%s\n' "$out" | tail -n 1 | sed -n 's/^\([0-9][0-9]*\)\(\[\]\)\{0,1\}\(\.srv\)\{0,1\}$/\1/p')
	if [ -z "$id" ]; then
		printf 'REFUSED %s\n' "$(printf '%s' "$out" | tr '\n' ' ' | tail -c 300)" \
			>"$tmp/rec/$side/$f"
		return 0
	fi
	ids+=("$id")
	scontrol show job -o "$id" | head -n 1 >"$tmp/rec/$side/$f"
	scancel "$id" || true
}

scripts=()
for f in "$shared"/realworld/*.pbs "$src"/tests/corpus/pbs/*.pbs; do
	scripts+=("$f")
done
[ "${#scripts[@]}" -ge 43 ] || die "only ${#scripts[@]} PBS scripts found"
for path in "${scripts[@]}"; do
	f=${path##*/}
	cp "$path" "$wk/$f" && chmod 644 "$wk/$f"
	out=$(as_user /usr/bin/qsub -h "$f" 2>&1) || true
	record slurm "$f" "$out"
	out=$(as_user qsub --config "$tmp/pbs.yaml" -h "$f" 2>"$tmp/ours.err") ||
		out="$out $(cat "$tmp/ours.err")"
	record ours "$f" "$out"
done
ok "${#scripts[@]} scripts submitted by both wrappers"

# score: the table, both totals; exit 1 when ours is wrong on a script
# Slurm can represent, or Slurm's wrapper had nothing accepted
/usr/bin/python3 - "$src/tests/corpus/pbs/expected.tsv" "$tmp/rec" "$wk" \
	"$home" "$shared/realworld" <<'PY' || bad "the score (above)"
import os, re, sys

exp_path, rec, wd, home, realworld = sys.argv[1:6]
FIELDS = ["nodes", "tasks", "tpn", "cpt", "mem", "gpus", "time", "array",
          "out", "err", "part"]

def mib(v):
    m = re.fullmatch(r"([0-9.]+)([KMGT]?)", v or "")
    if not m:
        return None
    return float(m.group(1)) * {"K": 1 / 1024, "": 1, "M": 1, "G": 1024,
                                "T": 1048576}[m.group(2)]

def minutes(v):
    m = re.fullmatch(r"(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)", v or "")
    if not m:
        return None
    d, h, mi, s = (int(x or 0) for x in m.groups())
    return d * 1440 + h * 60 + mi + (1 if s else 0)

def gpu_count(v):
    # "gres/gpu:4", "gres/gpu:a100:4", "gres:gpu:2"
    for part in (v or "").split(","):
        m = re.fullmatch(r"gres[/:]gpu(?::[^:]+)?:(\d+)", part)
        if m:
            return int(m.group(1))
    return 0

def fields(line):
    r = {}
    for m in re.finditer(r"(\S+?)=(\S*)", line):
        r.setdefault(m.group(1), m.group(2))
    return r

def held(line):
    """What the Slurm job holds, in the table's terms."""
    r = fields(line)
    nodes = (r.get("NumNodes") or "").split("-")[0]
    tpn = (r.get("NtasksPerN:B:S:C") or "0").split(":")[0]
    cpt = r.get("CPUs/Task", "")
    tasks = r.get("NumTasks", "")
    n, t = int(nodes or 1), int(tpn if tpn.isdigit() else 0)
    # as many tasks as nodes: Slurm puts one on each, so the record's
    # unset tasks per node (0) is 1
    if t == 0 and tasks and int(tasks) == n:
        tpn, t = "1", 1
    c = int(cpt) if cpt.isdigit() else 1
    cpus = t * c if t else int(r.get("NumCPUs", "1") or 1) / max(n, 1)
    if r.get("MinMemoryCPU"):
        mem = mib(r["MinMemoryCPU"])
    elif r.get("MinMemoryNode") and mib(r["MinMemoryNode"]):
        mem = mib(r["MinMemoryNode"]) / cpus
    else:
        mem = None
    gpus = (gpu_count(r.get("TresPerNode")) * n
            + gpu_count(r.get("TresPerJob"))
            + gpu_count(r.get("TresPerTask")) * int(tasks or 0))
    jid = r.get("ArrayJobId") or r.get("JobId", "")
    return {
        "nodes": nodes, "tasks": tasks, "tpn": tpn, "cpt": cpt,
        "mem": mem, "gpus": gpus, "time": minutes(r.get("TimeLimit")),
        "array": r.get("ArrayTaskId", "-"),
        "out": r.get("StdOut", ""), "err": r.get("StdErr", ""),
        "part": r.get("Partition", ""), "_id": jid,
    }

def right(field, want, got):
    if field == "mem":
        return got is not None and abs(got - float(want)) <= max(
            1.0, float(want) * 0.002)
    if field in ("gpus", "time"):
        return got is not None and int(want) == int(got)
    if field in ("out", "err"):
        return want == got
    return str(want) == str(got)

def expand(want, jid):
    w = want.replace("{wd}", wd).replace("{home}", home)
    w = w.replace("{id}", jid)
    # an array's meta record shows the task index as Slurm keeps it
    return w

rows, fails = [], []
tot = {}  # side[-rw|-corpus]: scripts right, fields right, of, scripts
for ln in open(exp_path):
    if ln.startswith("#") or not ln.strip():
        continue
    cols = ln.rstrip("\n").split("\t")
    name, want, status = cols[0], dict(zip(FIELDS, cols[1:12])), cols[12]
    scored = [f for f in FIELDS if want[f] != "-"]
    line = {}
    for side in ("slurm", "ours"):
        rec_path = os.path.join(rec, side, name)
        text = open(rec_path).read() if os.path.exists(rec_path) else "REFUSED (not run)"
        refused = text.startswith("REFUSED")
        nright, wrong = 0, []
        if refused:
            ok_script = status.startswith("refuse")
            wrong = ["refused: " + text[8:].strip()] if not ok_script else []
        elif status.startswith("refuse"):
            ok_script, wrong = False, ["accepted what PBS refuses"]
        else:
            h = held(text)
            for f in scored:
                w = expand(want[f], h["_id"])
                if f in ("out", "err") and "{idx}" in w:
                    w = w.replace("{idx}", "%a")
                    g = h[f].replace(h["_id"] + "-4294967294", h["_id"] + "-%a")
                    g = g.replace(h["_id"] + ".4294967294", h["_id"] + ".%a")
                else:
                    g = h[f]
                if right(f, w, g):
                    nright += 1
                else:
                    wrong.append("%s=%s (PBS: %s)" % (f, g, w))
            ok_script = not wrong and not status.startswith("unrep")
        for key in (side, side + ("-rw" if os.path.exists(
                os.path.join(realworld, name)) else "-corpus")):
            t = tot.setdefault(key, [0, 0, 0, 0])
            t[0] += ok_script
            t[1] += nright
            t[2] += len(scored) if not status.startswith("refuse") else 0
            t[3] += 1
        line[side] = (ok_script, nright, len(scored), wrong, text)
        if side == "ours" and not ok_script and not status.startswith("unrep"):
            fails.append(name)
    rows.append((name, status, line))

print("%-40s %-14s %-14s %s" % ("script", "Slurm's qsub", "hpcbridge qsub", "status"))
for name, status, line in rows:
    cell = lambda s: ("right" if line[s][0] else "wrong") + " %d/%d" % line[s][1:3]
    print("%-40s %-14s %-14s %s" % (name, cell("slurm"), cell("ours"),
                                     status.split(":")[0]))
    for side in ("slurm", "ours"):
        if line[side][3]:
            print("    %-5s %s" % (side, "; ".join(line[side][3])[:400]))
n = len(rows)
for sub, what in (("-rw", "realworld"), ("-corpus", "corpus"), ("", "all")):
    for side, label in (("slurm", "Slurm's qsub"), ("ours", "hpcbridge qsub")):
        t = tot[side + sub]
        print("TOTAL %-9s %-15s scripts fully right %d/%d, fields right %d/%d"
              % (what, label, t[0], t[3], t[1], t[2]))
accepted = sum(1 for _, _, l in rows if not l["slurm"][4].startswith("REFUSED"))
print("Slurm's qsub: %d of %d scripts accepted" % (accepted, n))
if accepted == 0:
    print("FAIL: Slurm's wrapper had no script accepted")
    sys.exit(1)
if fails:
    print("FAIL: hpcbridge qsub is wrong on: " + ", ".join(fails))
    sys.exit(1)
PY

# every job either wrapper submitted is gone
for id in "${ids[@]}"; do
	st=$(field "$id" JobState)
	case $st in CANCELLED | "") ;; *) bad "job $id is $st, not cancelled" ;; esac
done
ok "${#ids[@]} jobs submitted, all cancelled"
sandbox_test_end
