#!/usr/bin/env python3
"""Slurm-oracle differential test: Slurm's own parse versus hpcbridge's.

Standard library only.  Two commands:

  oracle_compare.py run --hpcbridge BIN --workdir DIR --out DIR
                        [--accept FILE...] [--reject FILE...] [--known FILE...]
                        [--realworld FILE... --realworld-known LIST]
      For every script: submit it with `sbatch --hold --parsable`, read
      Slurm's parse with `scontrol show job -o ID`, translate it with
      `BIN translate --to jobspec --format json FILE`, and compare.
      --accept scripts must be accepted by sbatch, --reject scripts must be
      rejected by it (the corpus says so; a change in either is reported).
      Whatever sbatch rejects, hpcbridge must reject too: exit 1, nothing on
      stdout, and `FILE:LINE: message` on stderr (with the line that a
      `# oracle-expect-line: N[,M]` comment names, if any).  Whatever sbatch
      accepts, hpcbridge must accept with the same meaning.  --known
      scripts declare, in `# oracle-known: FIELD[,FIELD]`, the fields in
      which hpcbridge differs on purpose or for now; those mismatches are
      printed as KNOWN, any other is a MISMATCH.  Prints one line per
      mismatch (script, field, Slurm's value, ours) and exits 1 if any.
      --realworld scripts were written outside the project: no
      expectation, both accepting and agreeing or both rejecting is right.
      LIST holds their known divergences, `NAME FIELD: why` a line; such
      a mismatch is KNOWN, any other is a MISMATCH, and so is a listed
      field that no longer differs (a stale entry) or a listed script
      that is not in the set.
      Rejections caused by this controller's configuration (an unknown
      partition, feature, license, node or reservation) are printed as SKIP.
      Per-script files land in --out: NAME.scontrol, NAME.json,
      NAME.stderr, and results.json.

  oracle_compare.py selftest
      Checks the parsers and every comparison rule on fixed samples of real
      Slurm 22.05 output, including altered samples that must be reported
      as mismatches, so that a comparator that never fails cannot pass.

SLURM_CONF must point at a running controller for `run`; the environment of
sbatch and hpcbridge is stripped of SBATCH_*, SALLOC_* and SLURM_* (but
SLURM_CONF), so the caller's environment cannot change what either reads.

Comparison rules (Slurm 22.05.8 behaviour, observed on the loopback
controller of lib/slurm.sh; "ours" is the jobspec JSON):

  JobName     the name from -J, else the script's file name (sbatch's
              default for a script file).
  Partition   ours, else the default partition (`debug`).
  Account     ours, else "(null)" (no accounting: Slurm keeps any string).
  QOS         without slurmdbd the controller drops --qos and shows "(null)".
              The test's job_submit.lua copies the QOS sbatch sent into the
              admin comment ("oracle:qos=NAME"), and that is compared.
              Without that record a QOS of ours is only noted.
  NumNodes    Slurm prints "MIN-MAX" when -N was given and "N" when it
              counted the nodes itself.
              * -N given: MIN and MAX must equal nodes_min and nodes_max
                (nodes_max defaults to nodes_min), after sbatch's own clip:
                with -n, both become at most ntasks ("can't run 2 processes
                on 4 nodes, setting nnodes to 2").
              * no -N but a node list: Slurm prints the list's size, with no
                maximum; it must equal our nodes_min, and we must have no
                nodes_max.
              * neither: Slurm's figure is an estimate from -n/-c and the
                node sizes, not from the script, so only "no range" is
                checked (a range means sbatch saw a node count we did not);
                except with NtasksPerN, where the controller allocates
                ceil(NumTasks / NtasksPerN) nodes (sbatch --test-only on
                real nodes shows it; a held job's NumNodes rounds down), and
                our nodes_min (or shape.nodes) must be that count.
  NumTasks    ntasks if set.  Else Slurm fills it in: ntasks_per_node x
              nodes_min when both are set; else nodes_min (one task per
              node); else ntasks_per_node; else 1.  That rule and, when
              present, shape.ntasks must both give Slurm's number.
  CPUs/Task   cpus_per_task, else 1.
  NtasksPerN  the first field of NtasksPerN:B:S:C: ntasks_per_node, else 0.
  TimeLimit   Slurm keeps minutes and rounds seconds up: ceil(s/60).  Unset
              means the partition's MaxTime, UNLIMITED here.  sbatch reads
              --time=0 as "no limit", so ours must be UNLIMITED for it too.
  Memory      per_node N -> MinMemoryNode=N (0 = whole node, which is also
              what Slurm shows with no --mem, DefMemPerNode being unset);
              per_cpu N -> MinMemoryCPU=N, except that sbatch stores
              --mem-per-cpu=0 as --mem=0 (MinMemoryNode=0); per_gpu N ->
              MemPerTres=gres:gpu:N.  Compared in MB.  The kinds job and
              per_process cannot come from sbatch.
  GPUs        TresPerJob / TresPerNode / TresPerTask ("gres:gpu[:TYPE][:N]",
              N defaulting to 1, N=0 meaning none) for scope job / node /
              task: exactly one GPU entry, in the field of our scope, with
              our type and count, and no GPU entry anywhere when we have
              none.  Without slurmdbd the job's TRES= never lists gres/gpu
              (AccountingStorageTRES=gres/gpu is fatal without it).
  Array       ArrayTaskId ("0-15%4", "1,4,7,10%2", "0-99:3%5") as a set of
              indices must equal the expansion of our ranges; the throttle
              (ArrayTaskThrottle or the %N suffix) must equal max_running.
  Also        exclusive <-> OverSubscribe=NO (else OK, or YES in a FORCE
              partition); requeue <-> Requeue (1 by default); time_min <->
              TimeMin (minutes, rounded up); nodelist/exclude <->
              ReqNodeList/ExcNodeList as sets of names; dependency <->
              Dependency as a set of TYPE:ID (Slurm appends "(unfulfilled)",
              and "_*" for an array); constraint <-> Features; licenses <->
              Licenses (NAME:COUNT, count 1 by default); comment <-> Comment;
              mail_user <-> MailUser (Slurm defaults it to the submitting
              user; scontrol prints neither without a mail type, and then
              --mail-user cannot be seen); mail_type <-> MailType as sets; an absolute deadline
              <-> Deadline.
"""

import argparse
import json
import math
import os
import re
import subprocess
import sys
from decimal import Decimal

DEFAULT_PARTITION = "debug"

# Every key `scontrol show job -o` prints in 22.05 (and a few from later
# releases).  A value may contain spaces (JobName, Account, Comment); a
# token only starts a new field when it begins with one of these keys.
SCONTROL_KEYS = {
    "JobId", "ArrayJobId", "ArrayTaskId", "ArrayTaskThrottle", "HetJobId",
    "HetJobOffset", "HetJobIdSet", "JobName", "UserId", "GroupId",
    "MCS_label", "Priority", "Nice", "Account", "QOS", "WCKey", "JobState",
    "Reason", "FailedNode", "Dependency", "Requeue", "Restarts", "BatchFlag",
    "Reboot", "ExitCode", "DerivedExitCode", "RunTime", "TimeLimit",
    "TimeMin", "SubmitTime", "EligibleTime", "AccrueTime", "ResizeTime",
    "StartTime", "EndTime", "Deadline", "CronJob", "CrontabSpec",
    "PreemptEligibleTime", "PreemptTime", "SuspendTime", "SecsPreSuspend",
    "LastSchedEval", "Scheduler", "Partition", "AllocNode:Sid",
    "ReqNodeList", "ExcNodeList", "NodeList", "SchedNodeList",
    "BatchFeatures", "BatchHost", "FedOrigin", "FedViableSiblings",
    "FedActiveSiblings", "NumNodes", "NumCPUs", "NumTasks", "CPUs/Task",
    "ReqB:S:C:T", "TRES", "ReqTRES", "AllocTRES", "Socks/Node",
    "NtasksPerN:B:S:C", "CoreSpec", "ThreadSpec", "JOB_GRES", "Nodes",
    "CPU_IDs", "Mem", "GRES", "MinCPUsNode", "MinMemoryNode",
    "MinMemoryCPU", "MinMemoryTRES", "MinTmpDiskNode", "Features",
    "DelayBoot", "ClusterFeatures", "Prefer", "Reservation",
    "OverSubscribe", "Contiguous", "Licenses", "LicensesAlloc", "Network",
    "Command", "WorkDir", "AdminComment", "SystemComment", "Comment",
    "StdErr", "StdIn", "StdOut", "BurstBuffer", "BurstBufferState",
    "CpuFreqMin", "CpuFreqMax", "CpuFreqGov", "Power", "CpusPerTres",
    "MemPerTres", "TresBind", "TresFreq", "TresPerJob", "TresPerNode",
    "TresPerSocket", "TresPerTask", "NtasksPerTRES", "MailUser", "MailType",
    "Container", "ContainerID", "KillOInInvalidDependent", "Switches",
    "Wait-for-Switch", "Profile", "Restarts", "SegmentSize", "ResvPorts",
    "SelinuxContext", "StepMgrEnabled", "Licenses",
}

# sbatch rejections that come from this controller's configuration rather
# than from the script's syntax: hpcbridge cannot know them.  Such scripts
# are reported as skipped, with the reason.
ENV_REJECTIONS = (
    "Invalid feature specification",
    "Invalid license specification",
    "Invalid node name specified",
    "Requested reservation is invalid",
    "invalid partition specified",
    "Invalid account",
    "Invalid qos",
    "Job dependency problem",
    "Problem talking to database",
    "can't be reached now",
    "Unable to contact slurm controller",
    "Socket timed out",
)


# ---------------------------------------------------------------- parsing

def parse_scontrol(line):
    """`scontrol show job -o` line -> dict of key -> value (strings)."""
    out = {}
    key = None
    for tok in line.strip().split(" "):
        k, eq, v = tok.partition("=")
        if eq and k in SCONTROL_KEYS:
            key = k
            out[key] = v
        elif key is not None:
            out[key] += " " + tok
    return out


_UNITS = {"": 1, "K": Decimal(1) / 1024, "M": 1, "G": 1024,
          "T": 1024 ** 2, "P": 1024 ** 3}


def parse_mb(text):
    """Slurm's printed size ("1500M", "2G", "1.50G", "0") -> MB (int)."""
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)([KMGTP]?)", text.strip())
    if not m:
        raise ValueError("bad size %r" % text)
    mb = Decimal(m.group(1)) * _UNITS[m.group(2)]
    return int(mb.to_integral_value())


def parse_minutes(text):
    """TimeLimit ("UNLIMITED", "1-02:04:00", "01:30:00", "05:00") ->
    minutes (int) or "UNLIMITED"."""
    text = text.strip()
    if text in ("UNLIMITED", "INFINITE"):
        return "UNLIMITED"
    days = 0
    if "-" in text:
        d, text = text.split("-", 1)
        days = int(d)
    parts = [int(p) for p in text.split(":")]
    if len(parts) == 3:
        h, m, s = parts
    elif len(parts) == 2:
        h, m, s = 0, parts[0], parts[1]
    else:
        raise ValueError("bad time %r" % text)
    secs = ((days * 24 + h) * 60 + m) * 60 + s
    return math.ceil(secs / 60)


def parse_range(text):
    """NumNodes "2-4" -> (2, 4); "2" -> (2, None)."""
    if "-" in text:
        a, b = text.split("-", 1)
        return int(a), int(b)
    return int(text), None


def parse_tres_list(text):
    """"gres:gpu:a100:2,gres:gpu" (22.05) or "gres/gpu:a100=2" (later) ->
    [(name, type or None, count)]."""
    out = []
    if not text or text == "(null)":
        return out
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        if item.startswith("gres/"):
            body, _, n = item[5:].partition("=")
            parts = body.split(":")
            name = parts[0]
            typ = parts[1] if len(parts) > 1 else None
            count = int(n) if n else 1
        else:
            if item.startswith("gres:"):
                item = item[5:]
            parts = item.split(":")
            name = parts[0]
            typ = None
            count = 1
            rest = parts[1:]
            if rest and re.fullmatch(r"[0-9]+[KMGT]?", rest[-1]):
                count = parse_count(rest.pop())
            if rest:
                typ = ":".join(rest)
        out.append((name, typ, count))
    return out


def parse_count(text):
    mult = {"": 1, "K": 1024, "M": 1024 ** 2, "G": 1024 ** 3, "T": 1024 ** 4}
    m = re.fullmatch(r"([0-9]+)([KMGT]?)", text)
    return int(m.group(1)) * mult[m.group(2)]


def parse_array_ids(text):
    """ArrayTaskId "1,4,7,10%2" / "0-15%4" / "1-9:2" -> (set, throttle)."""
    throttle = None
    if "%" in text:
        text, _, t = text.partition("%")
        throttle = int(t)
    ids = set()
    for part in text.split(","):
        if not part:
            continue
        step = 1
        if ":" in part:
            part, _, s = part.partition(":")
            step = int(s)
        if "-" in part:
            a, b = part.split("-", 1)
            ids.update(range(int(a), int(b) + 1, step))
        else:
            ids.add(int(part))
    return ids, throttle


# ------------------------------------------------------------- our jobspec

def unwrap(v):
    """Accept {"value": X, ...} wrappers (values with provenance)."""
    if isinstance(v, dict) and "value" in v and len(v) <= 4 and \
            not {"kind", "mb", "scope", "count", "spec"} & set(v):
        return v["value"]
    return v


def jget(spec, key, default=None):
    v = unwrap(spec.get(key, default)) if isinstance(spec, dict) else default
    return default if v is None else v


def load_jobspec(text):
    """hpcbridge's JSON -> the jobspec object (a one-element array, or an
    array of identical per-index objects, is accepted)."""
    doc = json.loads(text)
    if isinstance(doc, list):
        if not doc:
            raise ValueError("empty JSON array")
        doc = doc[0]
    if isinstance(doc, dict) and isinstance(doc.get("jobspec"), dict):
        doc = doc["jobspec"]
    if not isinstance(doc, dict):
        raise ValueError("not a JSON object")
    return doc


def to_int(v):
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        return int(v)
    if isinstance(v, str) and re.fullmatch(r"-?[0-9]+", v):
        return int(v)
    return None


def array_indices(arr):
    ids = set()
    for r in arr.get("ranges", []) or []:
        if not isinstance(r, (list, tuple)) or not r:
            continue
        start = int(r[0])
        end = int(r[1]) if len(r) > 1 else start
        step = int(r[2]) if len(r) > 2 and r[2] else 1
        ids.update(range(start, end + 1, step))
    return ids


def default_tasks(spec):
    """What Slurm fills in for NumTasks when -n is not given."""
    nmin = to_int(jget(spec, "nodes_min"))
    tpn = to_int(jget(spec, "ntasks_per_node"))
    if tpn and nmin:
        return tpn * nmin
    if nmin:
        return nmin
    if tpn:
        return tpn
    return 1


def allocated_nodes(slurm):
    """Without -N or a node list, the nodes the controller allocates for
    NtasksPerN: ceil(NumTasks / NtasksPerN); None when that rule does not
    apply (a held job's NumNodes is then only an estimate)."""
    if parse_range(slurm.get("NumNodes", "0"))[1] is not None or \
            slurm.get("ReqNodeList", "(null)") != "(null)":
        return None
    tpn = to_int(slurm.get("NtasksPerN:B:S:C", "0:").split(":")[0])
    tasks = to_int(slurm.get("NumTasks"))
    if not tpn or not tasks:
        return None
    return -(-tasks // tpn)


# ------------------------------------------------------------- comparison

class Report:
    def __init__(self):
        self.mismatches = []   # (script, field, slurm, ours, note)
        self.notes = []        # (script, text)
        self.skipped = []      # (script, reason)
        self.known = []        # mismatches a corpus script declares
        self.compared = 0
        self.rejected_ok = 0

    def bad(self, script, field, slurm, ours, note=""):
        self.mismatches.append((script, field, slurm, ours, note))

    def note(self, script, text):
        self.notes.append((script, text))


def fmt(v):
    return "(unset)" if v is None else repr(v)


def compare(script_path, slurm, spec, rep):
    """Compare Slurm's fields (dict from parse_scontrol) with our jobspec."""
    name = os.path.basename(script_path)

    def check(field, s_val, o_val, note=""):
        if s_val != o_val:
            rep.bad(name, field, s_val, o_val, note)

    # JobName
    ours = jget(spec, "name")
    check("JobName", slurm.get("JobName"),
          ours if ours is not None else os.path.basename(script_path),
          "" if ours is not None else "default: the script's file name")

    # Partition, Account, QOS
    ours = jget(spec, "partition")
    check("Partition", slurm.get("Partition"),
          ours if ours is not None else DEFAULT_PARTITION)
    ours = jget(spec, "account")
    check("Account", slurm.get("Account"),
          ours if ours is not None else "(null)")
    ours = jget(spec, "qos")
    s_qos = slurm.get("QOS", "(null)")
    m = re.search(r"oracle:qos=(\S*)", slurm.get("AdminComment", ""))
    if m:
        # The test's job_submit.lua recorded the QOS that sbatch sent
        # (without slurmdbd the controller drops it afterwards).
        check("QOS", m.group(1) or None, ours, "as sbatch sent it")
    elif s_qos not in ("(null)", ""):
        check("QOS", s_qos, ours)
    elif ours is not None:
        rep.note(name, "QOS %r not observable (no slurmdbd: Slurm drops it)"
                 % ours)

    # Nodes
    nmin = to_int(jget(spec, "nodes_min"))
    nmax = to_int(jget(spec, "nodes_max"))
    ntasks = to_int(jget(spec, "ntasks"))
    s_min, s_max = parse_range(slurm.get("NumNodes", "0"))
    alloc = allocated_nodes(slurm)
    if alloc is not None and nmin is None:
        shape = spec.get("shape") if isinstance(spec.get("shape"), dict) \
            else {}
        check("NumNodes", alloc, to_int(unwrap(shape.get("nodes"))) or 1,
              "no -N: ceil(NumTasks / NtasksPerN), as Slurm allocates")
    if nmin is not None:
        emin, emax = nmin, (nmax if nmax is not None else nmin)
        note = ""
        if ntasks is not None and ntasks < emax:
            emax = max(ntasks, 0)
            emin = min(emin, emax)
            note = "sbatch clips the node count to ntasks"
        if s_max is None and nmax is None and alloc is not None:
            check("NumNodes", alloc, emin,
                  "no -N: ceil(NumTasks / NtasksPerN), as Slurm allocates")
        elif s_max is None and nmax is None:
            # No -N: Slurm counted the nodes itself (--nodelist), as we did.
            check("NumNodes", s_min, emin,
                  "derived from the node list, no maximum")
        else:
            check("NumNodes", "%s-%s" % (s_min, s_max),
                  "%s-%s" % (emin, emax), note)
    elif s_max is not None:
        rep.bad(name, "NumNodes", slurm.get("NumNodes"), None,
                "Slurm has a requested node range; we have no nodes_min")

    # Tasks
    s_tasks = to_int(slurm.get("NumTasks"))
    shape = spec.get("shape") if isinstance(spec.get("shape"), dict) else {}
    if ntasks is not None:
        check("NumTasks", s_tasks, ntasks)
    else:
        rule = default_tasks(spec)
        sh = to_int(unwrap(shape.get("ntasks"))) if shape else None
        if sh is not None:
            check("NumTasks", s_tasks, sh,
                  "ntasks unset: compared with shape.ntasks")
        check("NumTasks", s_tasks, rule,
              "ntasks unset: Slurm's default (ntasks-per-node x nodes, "
              "else one per node)")

    # CPUs per task, tasks per node
    cpt = to_int(jget(spec, "cpus_per_task"))
    check("CPUs/Task", to_int(slurm.get("CPUs/Task")),
          cpt if cpt is not None else 1)
    tpn = to_int(jget(spec, "ntasks_per_node"))
    s_tpn = slurm.get("NtasksPerN:B:S:C", "0:").split(":")[0]
    check("NtasksPerNode", to_int(s_tpn) or 0, tpn or 0)

    # Time limit
    s_time = parse_minutes(slurm.get("TimeLimit", "UNLIMITED"))
    ours = jget(spec, "time_limit")
    if ours is None:
        check("TimeLimit", s_time, "UNLIMITED",
              "unset: the partition's MaxTime")
    elif ours == "UNLIMITED" or ours == "INFINITE":
        check("TimeLimit", s_time, "UNLIMITED")
    else:
        secs = to_int(ours)
        if secs is None:
            rep.bad(name, "TimeLimit", s_time, ours, "not seconds")
        elif secs == 0:
            check("TimeLimit", s_time, 0,
                  "sbatch reads --time=0 as no limit: expected UNLIMITED")
        else:
            check("TimeLimit", s_time, math.ceil(secs / 60),
                  "minutes, rounded up from %d s" % secs)

    # Memory
    mem = spec.get("mem")
    kind, mb = None, None
    if isinstance(mem, dict):
        kind = unwrap(mem.get("kind"))
        mb = to_int(unwrap(mem.get("mb")))
    s_node = slurm.get("MinMemoryNode")
    s_cpu = slurm.get("MinMemoryCPU")
    s_tres = parse_tres_list(slurm.get("MemPerTres", ""))
    s_gpu_mem = [c for (n, t, c) in s_tres if n == "gpu"]
    if kind in (None, "none"):
        check("MinMemoryNode", parse_mb(s_node) if s_node else None, 0,
              "no --mem: 0 (whole node, DefMemPerNode unset)")
        check("MinMemoryCPU", s_cpu, None)
        check("MemPerTres", s_gpu_mem, [])
    elif kind == "per_node":
        check("MinMemoryNode", parse_mb(s_node) if s_node else None, mb,
              "MB")
        check("MemPerTres", s_gpu_mem, [])
    elif kind == "per_cpu" and mb == 0:
        # sbatch turns --mem-per-cpu=0 into --mem=0: the whole node.
        check("MinMemoryNode", parse_mb(s_node) if s_node else None, 0,
              "--mem-per-cpu=0 is stored as --mem=0")
        check("MinMemoryCPU", s_cpu, None)
    elif kind == "per_cpu":
        check("MinMemoryCPU", parse_mb(s_cpu) if s_cpu else None, mb, "MB")
        check("MemPerTres", s_gpu_mem, [])
    elif kind == "per_gpu":
        check("MemPerTres(gpu)", s_gpu_mem, [mb], "MB")
        check("MinMemoryCPU", s_cpu, None)
    else:
        rep.bad(name, "memory", "MinMemoryNode=%s MinMemoryCPU=%s"
                % (s_node, s_cpu), kind, "a kind sbatch cannot express")

    # GPUs
    scopes = {"job": "TresPerJob", "node": "TresPerNode",
              "task": "TresPerTask"}
    s_gpus = {}
    for sc, key in scopes.items():
        for (n, t, c) in parse_tres_list(slurm.get(key, "")):
            if n == "gpu" and c > 0:    # gpu:0 asks for none
                s_gpus.setdefault(sc, []).append((t, c))
    g = spec.get("gpus")
    want = {}
    if isinstance(g, dict) and to_int(unwrap(g.get("count"))):
        sc = unwrap(g.get("scope"))
        want[sc] = [(unwrap(g.get("type")) or None,
                     to_int(unwrap(g.get("count"))))]
    for sc in sorted(set(s_gpus) | set(want)):
        check("GPUs(%s)" % scopes.get(sc, sc), s_gpus.get(sc), want.get(sc),
              "(type, count) per scope")

    compare_more(name, slurm, spec, check)

    # Array
    s_arr = slurm.get("ArrayTaskId")
    arr = spec.get("array")
    if isinstance(arr, dict):
        ours_ids = array_indices(arr)
        mr = to_int(unwrap(arr.get("max_running")))
        if s_arr is None:
            rep.bad(name, "ArrayTaskId", None, unwrap(arr.get("spec")))
        else:
            ids, thr = parse_array_ids(s_arr)
            st = to_int(slurm.get("ArrayTaskThrottle"))
            if st is not None:
                thr = st
            if ids != ours_ids:
                rep.bad(name, "ArrayTaskId", s_arr,
                        unwrap(arr.get("spec")),
                        "index sets differ: only Slurm %s, only ours %s" % (
                            sorted(ids - ours_ids)[:10],
                            sorted(ours_ids - ids)[:10]))
            check("ArrayTaskThrottle", thr or None, mr or None)
    elif s_arr is not None:
        rep.bad(name, "ArrayTaskId", s_arr, None)


def expand_hostlist(text):
    """"hb[1-2,4],node05" -> {"hb1", "hb2", "hb4", "node05"}."""
    out = set()
    if not text or text == "(null)":
        return out
    for item in re.findall(r"[^,\[]+(?:\[[^\]]*\][^,\[]*)*", text):
        m = re.fullmatch(r"([^\[]*)\[([^\]]*)\](.*)", item)
        if not m:
            out.add(item)
            continue
        pre, body, post = m.groups()
        for part in body.split(","):
            if "-" in part:
                a, b = part.split("-", 1)
                width = len(a) if a.startswith("0") else 0
                for i in range(int(a), int(b) + 1):
                    out |= expand_hostlist(pre + str(i).zfill(width) + post)
            else:
                out |= expand_hostlist(pre + part + post)
    return out


def dep_set(text):
    """Dependency "afterok:12:13,singleton" or Slurm's
    "afterok:12(unfulfilled),afterok:13(unfulfilled)" -> {"afterok:12",
    "afterok:13", "singleton"} (the ?-separated "any" form likewise)."""
    out = set()
    if not text or text == "(null)":
        return out
    for item in re.split(r"[,?&]", re.sub(r"\([a-z_]+\)", "", text)):
        item = item.strip()
        if not item:
            continue
        kind, _, ids = item.partition(":")
        if not ids:
            out.add(kind)
        for i in ids.split(":") if ids else []:
            # Slurm names a dependency on a whole array "ID_*".
            i = i.split("+")[0]
            if i.endswith("_*"):
                i = i[:-2]
            out.add("%s:%s" % (kind, i))
    return out


def lic_set(text):
    out = set()
    if not text or text == "(null)":
        return out
    for item in text.split(","):
        name, _, n = re.split(r"[@]", item)[0].partition(":")
        out.add("%s:%s" % (name, n or "1"))
    return out


def compare_more(name, slurm, spec, check):
    """Fields beyond the resource shape that `scontrol show job` also
    shows; each is compared only in the form both sides can express."""
    # --exclusive: OverSubscribe=NO.  Without it Slurm shows OK, or YES in
    # a partition with OverSubscribe=FORCE (burst).
    ex = jget(spec, "exclusive")
    s_os = slurm.get("OverSubscribe")
    if s_os is not None:
        check("OverSubscribe", s_os == "NO", bool(ex),
              "--exclusive <-> OverSubscribe=NO")
    # --requeue / --no-requeue: Requeue=1/0, 1 by default (JobRequeue=1).
    rq = jget(spec, "requeue")
    if slurm.get("Requeue") is not None:
        check("Requeue", slurm.get("Requeue"),
              "1" if rq is None or rq else "0", "default 1")
    # --time-min
    tm = jget(spec, "time_min")
    s_tm = slurm.get("TimeMin", "N/A")
    s_tm = None if s_tm in ("N/A", "") else parse_minutes(s_tm)
    if tm is None:
        check("TimeMin", s_tm, None)
    elif tm in ("UNLIMITED", "INFINITE"):
        check("TimeMin", s_tm, "UNLIMITED")
    elif to_int(tm) is not None:
        check("TimeMin", s_tm, math.ceil(to_int(tm) / 60) or None,
              "minutes, rounded up")
    # --nodelist / --exclude as sets of node names.
    check("ReqNodeList", expand_hostlist(slurm.get("ReqNodeList")),
          expand_hostlist(jget(spec, "nodelist")))
    check("ExcNodeList", expand_hostlist(slurm.get("ExcNodeList")),
          expand_hostlist(jget(spec, "exclude")))
    # --dependency
    check("Dependency", dep_set(slurm.get("Dependency")),
          dep_set(jget(spec, "dependency")))
    # --constraint, --licenses
    c = jget(spec, "constraint")
    check("Features", slurm.get("Features", "(null)"),
          c if c is not None else "(null)")
    check("Licenses", lic_set(slurm.get("Licenses")),
          lic_set(jget(spec, "licenses")))
    # --comment, --mail-user, --mail-type
    c = jget(spec, "comment")
    check("Comment", (slurm.get("Comment") or "").strip() or None,
          c.strip() if isinstance(c, str) and c.strip() else None)
    mu = jget(spec, "mail_user")
    s_mu = slurm.get("MailUser")
    if mu is None and s_mu == slurm.get("UserId", "").split("(")[0]:
        pass    # --mail-type alone: Slurm mails the submitting user
    elif s_mu is None and slurm.get("MailType") is None:
        pass    # no mail type: scontrol prints neither MailUser nor MailType
    elif mu is not None or (s_mu and s_mu != "(null)"):
        check("MailUser", s_mu, mu, "default: the submitting user")
    mt = jget(spec, "mail_type")
    s_mt = slurm.get("MailType")
    if mt is not None or (s_mt and s_mt not in ("NONE", "(null)")):
        check("MailType", set((s_mt or "").split(",")) - {""},
              set((mt or "").upper().split(",")) - {""})
    # --deadline, when ours is an absolute time (Slurm prints it resolved).
    dl = jget(spec, "deadline")
    if isinstance(dl, str) and re.fullmatch(
            r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}", dl):
        check("Deadline", slurm.get("Deadline"), dl)
    elif dl is None:
        check("Deadline", slurm.get("Deadline", "N/A"), "N/A")


# ---------------------------------------------------------------- running

def clean_env():
    env = {k: v for k, v in os.environ.items()
           if not (k.startswith("SBATCH_") or k.startswith("SALLOC_") or
                   (k.startswith("SLURM_") and k != "SLURM_CONF"))}
    return env


def run_cmd(argv, cwd, env, timeout=60):
    p = subprocess.run(argv, cwd=cwd, env=env, capture_output=True,
                       timeout=timeout)
    return (p.returncode, p.stdout.decode("utf-8", "replace"),
            p.stderr.decode("utf-8", "replace"))


def known_fields(path):
    """`# oracle-known: FIELD[,FIELD...] - why` in a script of the known
    divergences: the fields in which hpcbridge is meant to differ."""
    try:
        with open(path, "rb") as f:
            for raw in f.read().decode("utf-8", "replace").splitlines():
                m = re.match(r"#\s*oracle-known:\s*([^\s]+)", raw)
                if m:
                    return set(m.group(1).split(","))
    except OSError:
        pass
    return set()


def expected_lines(path):
    """`# oracle-expect-line: 3` or `: 2,3` in a reject script."""
    try:
        with open(path, "rb") as f:
            for raw in f.read().decode("utf-8", "replace").splitlines():
                m = re.match(r"#\s*oracle-expect-line:\s*([0-9, ]+)", raw)
                if m:
                    return {int(x) for x in m.group(1).replace(" ", "")
                            .split(",") if x}
    except OSError:
        pass
    return None


def read_realworld_known(path):
    """`NAME FIELD: why` lines (blank lines and `#` comments aside) ->
    {NAME: {FIELD: why}}; a malformed line raises ValueError."""
    known = {}
    if not path:
        return known
    with open(path, encoding="utf-8") as f:
        for num, raw in enumerate(f, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            m = re.fullmatch(r"(\S+)\s+([^\s:]+):\s*(\S.*)", line)
            if not m:
                raise ValueError("%s:%d: want `NAME FIELD: why`"
                                 % (path, num))
            known.setdefault(m.group(1), {})[m.group(2)] = m.group(3)
    return known


def check_rejected_by_us(path, rc, out, err, rep, why):
    name = os.path.basename(path)
    if rc != 1:
        rep.bad(name, "acceptance", "rejected (%s)" % why,
                "exit %d" % rc, "hpcbridge must exit 1")
    if out.strip():
        rep.bad(name, "stdout", "", out.strip()[:80],
                "hpcbridge wrote to stdout on an input error")
    pat = re.compile(r"^(?:%s|%s):([0-9]+): \S" % (
        re.escape(path), re.escape(name)), re.M)
    m = pat.search(err)
    if not m:
        rep.bad(name, "stderr", "FILE:LINE: message",
                err.strip()[:120] or "(empty)",
                "no FILE:LINE: location on stderr")
        return
    want = expected_lines(path)
    line = int(m.group(1))
    if want and line not in want:
        rep.bad(name, "error line", sorted(want), line,
                "the error names the wrong line")


def translate(hpcbridge, path, cwd, env):
    return run_cmd([hpcbridge, "translate", "--to", "jobspec", "--format",
                    "json", path], cwd, env)


def cmd_run(args):
    rep = Report()
    env = clean_env()
    if "SLURM_CONF" not in env:
        print("oracle: SLURM_CONF is not set", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    items = [(p, "accept") for p in args.accept] + \
            [(p, "reject") for p in args.reject] + \
            [(p, "known") for p in args.known] + \
            [(p, "realworld") for p in args.realworld]
    try:
        rw_known = read_realworld_known(args.realworld_known)
    except (OSError, ValueError) as e:
        print("oracle: %s" % e, file=sys.stderr)
        return 2
    rw_names = {os.path.basename(p) for p in args.realworld}
    for name in sorted(set(rw_known) - rw_names):
        rep.bad(name, "stale", "", "", "listed in %s but not a realworld "
                "script" % os.path.basename(args.realworld_known))
    results = []
    for path, expect in items:
        path = os.path.abspath(path)
        name = os.path.basename(path)
        before = len(rep.mismatches)
        try:
            run_one(args, env, rep, path, name, expect, results)
        finally:
            if expect == "known":
                settle_known(rep, path, name, before)
            elif expect == "realworld":
                settle_realworld(rep, name, rw_known.get(name, {}), before)

    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    return print_report(rep, len(items))


def move_known(rep, before, fields):
    """Move the mismatches since `before` in `fields` to rep.known; return
    the fields seen."""
    mine = rep.mismatches[before:]
    del rep.mismatches[before:]
    seen = set()
    for m in mine:
        if m[1] in fields:
            rep.known.append(m)
            seen.add(m[1])
        else:
            rep.mismatches.append(m)
    return seen


def settle_known(rep, path, name, before):
    """Move a known-divergence script's declared mismatches to rep.known."""
    fields = known_fields(path)
    seen = move_known(rep, before, fields)
    if not fields:
        rep.bad(name, "corpus", "", "", "no `# oracle-known:` line")
    for f in sorted(fields - seen):
        rep.note(name, "declared divergence %s no longer seen: hpcbridge "
                 "now agrees with Slurm; move the script to the corpus" % f)


def settle_realworld(rep, name, fields, before):
    """A realworld script's listed mismatches are KNOWN; a listed field
    that no longer differs is a stale entry, and fails."""
    seen = move_known(rep, before, fields)
    skipped = any(s[0] == name for s in rep.skipped)
    for f in sorted(set(fields) - seen):
        rep.bad(name, "stale", f, "", "listed divergence no longer seen%s;"
                " remove the line" % (" (not compared: skipped)"
                                      if skipped else ""))


def run_one(args, env, rep, path, name, expect, results):
    """Submit one script, translate it, compare; record in rep."""
    rc, out, err = run_cmd(["sbatch", "--hold", "--parsable", path],
                           args.workdir, env)
    jobid = out.strip().split(";")[0] if rc == 0 else ""
    srec = None
    if rc == 0:
        if not re.fullmatch(r"[0-9]+", jobid):
            rep.bad(name, "sbatch", "job id", out.strip()[:80],
                    "unexpected sbatch --parsable output")
            return
        src, sout, serr = run_cmd(["scontrol", "show", "job", "-o",
                                   jobid], args.workdir, env)
        line = ""
        for ln in sout.splitlines():
            if ln.startswith("JobId=%s " % jobid):
                line = ln
                break
        if src != 0 or not line:
            rep.bad(name, "scontrol", "job %s" % jobid,
                    serr.strip()[:80], "scontrol show job failed")
            return
        srec = parse_scontrol(line)
        with open(os.path.join(args.out, name + ".scontrol"), "w") as f:
            f.write(line + "\n")
    hrc, hout, herr = translate(args.hpcbridge, path, args.workdir, env)
    with open(os.path.join(args.out, name + ".json"), "w") as f:
        f.write(hout)
    with open(os.path.join(args.out, name + ".stderr"), "w") as f:
        f.write(herr)
    results.append({"script": name, "expect": expect, "sbatch_rc": rc,
                    "sbatch_stderr": err.strip(), "job": jobid,
                    "hpcbridge_rc": hrc, "hpcbridge_stderr": herr.strip()})

    if rc != 0:
        why = " ".join(err.split())[:100]
        if any(e in err for e in ENV_REJECTIONS):
            rep.skipped.append((name, "sbatch: " + why))
            return
        if expect == "accept":
            rep.bad(name, "corpus", "sbatch rejected: " + why,
                    "meant to be accepted",
                    "a corpus script sbatch does not accept")
        check_rejected_by_us(path, hrc, hout, herr, rep, why)
        rep.rejected_ok += 1
        return
    if expect == "reject":
        rep.bad(name, "corpus", "sbatch accepted (job %s)" % jobid,
                "meant to be rejected",
                "a reject script that sbatch accepts")
    if hrc != 0:
        rep.bad(name, "acceptance", "accepted (job %s)" % jobid,
                "exit %d: %s" % (hrc, " ".join(herr.split())[:100]))
        return
    try:
        spec = load_jobspec(hout)
    except ValueError as e:
        rep.bad(name, "json", "a jobspec object", str(e)[:80],
                "hpcbridge output is not a jobspec")
        return
    try:
        compare(path, srec, spec, rep)
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        rep.bad(name, "comparator", "", "", "cannot read a value: %s" % e)
    rep.compared += 1


def print_report(rep, total):
    for (script, field, s, o, note) in rep.mismatches:
        print("MISMATCH %s: %s: slurm=%s ours=%s%s" % (
            script, field, fmt(s), fmt(o), ("  (" + note + ")") if note
            else ""))
    for (script, field, s, o, note) in rep.known:
        print("KNOWN %s: %s: slurm=%s ours=%s%s" % (
            script, field, fmt(s), fmt(o), ("  (" + note + ")") if note
            else ""))
    for (script, reason) in rep.skipped:
        print("SKIP %s: rejected for a configuration reason: %s"
              % (script, reason))
    for (script, text) in rep.notes:
        print("NOTE %s: %s" % (script, text))
    print("oracle: %d scripts, %d compared, %d rejected by both, %d skipped,"
          " %d known divergences, %d mismatches" % (
              total, rep.compared, rep.rejected_ok, len(rep.skipped),
              len(rep.known), len(rep.mismatches)))
    return 1 if rep.mismatches else 0


# --------------------------------------------------------------- selftest

SAMPLE = (
    "JobId=14 ArrayJobId=14 ArrayTaskId=1,4,7,10%2 ArrayTaskThrottle=2 "
    "JobName=my job UserId=root(0) GroupId=root(0) MCS_label=N/A "
    "Priority=0 Nice=0 Account=proj x QOS=(null) JobState=PENDING "
    "Reason=JobHeldUser Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 "
    "Reboot=0 ExitCode=0:0 RunTime=00:00:00 TimeLimit=1-02:04:00 "
    "TimeMin=N/A SubmitTime=2026-11-21T07:38:16 EligibleTime=Unknown "
    "AccrueTime=Unknown StartTime=Unknown EndTime=Unknown Deadline=N/A "
    "SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-11-21T07:38:16 "
    "Scheduler=Main Partition=gpu AllocNode:Sid=localhost:6387 "
    "ReqNodeList=(null) ExcNodeList=(null) NodeList= NumNodes=2-3 "
    "NumCPUs=3 NumTasks=3 CPUs/Task=2 ReqB:S:C:T=0:0:*:* "
    "TRES=cpu=6,mem=24000M,node=2,billing=6 Socks/Node=* "
    "NtasksPerN:B:S:C=0:0:*:* CoreSpec=* MinCPUsNode=2 MinMemoryCPU=1500M "
    "MinTmpDiskNode=0 Features=(null) DelayBoot=00:00:00 OverSubscribe=OK "
    "Contiguous=0 Licenses=(null) Network=(null) Command=/tmp/t/o1.sh "
    "WorkDir=/tmp/t StdErr=/tmp/t/slurm-14_4294967294.out StdIn=/dev/null "
    "StdOut=/tmp/t/slurm-14_4294967294.out Power= "
    "TresPerNode=gres:gpu:a100:4")

SAMPLE_SPEC = {
    "name": "my job", "account": "proj x", "partition": "gpu",
    "nodes_min": 2, "nodes_max": 4, "ntasks": 3, "cpus_per_task": 2,
    "mem": {"kind": "per_cpu", "mb": 1500},
    "gpus": {"scope": "node", "count": 4, "type": "a100"},
    "time_limit": 93784,   # 1-02:03:04 = 1563.07 min -> 1564 = 1-02:04
    "array": {"spec": "1-10:3%2", "ranges": [[1, 10, 3]], "max_running": 2},
    "shape": {"nodes": 2, "tasks_per_node": 2, "ntasks": 3,
              "cpus_per_task": 2},
}


def selftest():
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)

    rec = parse_scontrol(SAMPLE)
    expect(rec["JobName"] == "my job", "JobName with a space")
    expect(rec["Account"] == "proj x", "Account with a space")
    expect(rec["NumNodes"] == "2-3", "NumNodes")
    expect(rec["TresPerNode"] == "gres:gpu:a100:4", "TresPerNode")
    expect(rec["StdOut"].endswith(".out"), "StdOut")
    expect(parse_mb("1500M") == 1500 and parse_mb("2G") == 2048 and
           parse_mb("1T") == 1048576 and parse_mb("0") == 0 and
           parse_mb("1.50G") == 1536, "parse_mb")
    expect(parse_minutes("1-02:04:00") == 1564 and
           parse_minutes("01:30:00") == 90 and
           parse_minutes("UNLIMITED") == "UNLIMITED" and
           parse_minutes("05:00") == 5, "parse_minutes")
    expect(parse_tres_list("gres:gpu:a100:2,gres:gpu") ==
           [("gpu", "a100", 2), ("gpu", None, 1)], "tres 22.05")
    expect(parse_tres_list("gres/gpu:h100=3") == [("gpu", "h100", 3)],
           "tres later")
    expect(parse_array_ids("1,4,7,10%2") == ({1, 4, 7, 10}, 2), "array list")
    expect(parse_array_ids("0-15%4") == (set(range(16)), 4), "array range")
    expect(parse_array_ids("1-9:2") == ({1, 3, 5, 7, 9}, None), "array step")

    # A spec that agrees with the sample in every field (its 93784 s round
    # up to Slurm's 1564 minutes) -> no mismatch at all.
    rep = Report()
    compare("/tmp/t/o1.sh", rec, SAMPLE_SPEC, rep)
    expect(not rep.mismatches, "agreeing sample: %r" % rep.mismatches)

    # Each of these alterations must be reported, in the named field.
    def mutated(field, change):
        spec = json.loads(json.dumps(SAMPLE_SPEC))
        change(spec)
        r = Report()
        compare("/tmp/t/o1.sh", rec, spec, r)
        got = {m[1] for m in r.mismatches}
        expect(field in got, "mutation %s not caught (got %s)"
               % (field, sorted(got)))

    mutated("JobName", lambda s: s.pop("name"))
    mutated("Partition", lambda s: s.update(partition="debug"))
    mutated("Account", lambda s: s.pop("account"))
    mutated("NumNodes", lambda s: s.update(nodes_min=1))
    mutated("NumNodes", lambda s: [s.pop("nodes_min"), s.pop("nodes_max")])
    mutated("NumTasks", lambda s: s.update(ntasks=4))
    mutated("CPUs/Task", lambda s: s.pop("cpus_per_task"))
    mutated("NtasksPerNode", lambda s: s.update(ntasks_per_node=2))
    mutated("TimeLimit", lambda s: s.update(time_limit=93900))
    mutated("TimeLimit", lambda s: s.pop("time_limit"))
    mutated("MinMemoryCPU", lambda s: s.update(mem={"kind": "per_cpu",
                                                    "mb": 1536}))
    mutated("MinMemoryNode", lambda s: s.update(mem={"kind": "per_node",
                                                     "mb": 1500}))
    mutated("GPUs(TresPerNode)", lambda s: s["gpus"].update(type="h100"))
    mutated("GPUs(TresPerNode)", lambda s: s["gpus"].update(count=2))
    mutated("GPUs(TresPerJob)", lambda s: s["gpus"].update(scope="job"))
    mutated("GPUs(TresPerNode)", lambda s: s.pop("gpus"))
    mutated("ArrayTaskId", lambda s: s["array"].update(ranges=[[1, 10, 1]]))
    mutated("ArrayTaskThrottle", lambda s: s["array"].pop("max_running"))
    mutated("ArrayTaskId", lambda s: s.pop("array"))

    # Defaults: a bare script.
    bare = parse_scontrol(
        "JobId=3 JobName=bare.sh Account=(null) QOS=(null) "
        "TimeLimit=UNLIMITED Partition=debug NumNodes=1 NumCPUs=1 "
        "NumTasks=1 CPUs/Task=1 NtasksPerN:B:S:C=0:0:*:* MinCPUsNode=1 "
        "MinMemoryNode=0 MinTmpDiskNode=0")
    r = Report()
    compare("/x/bare.sh", bare, {"shape": {"nodes": 1, "ntasks": 1}}, r)
    expect(not r.mismatches, "bare script: %r" % r.mismatches)
    r = Report()
    compare("/x/bare.sh", bare, {"time_limit": 0}, r)
    expect({m[1] for m in r.mismatches} == {"TimeLimit"},
           "--time=0 must be UNLIMITED: %r" % r.mismatches)
    r = Report()
    compare("/x/bare.sh", bare, {"mem": {"kind": "per_node", "mb": 0}}, r)
    expect(not r.mismatches, "--mem=0: %r" % r.mismatches)
    r = Report()
    compare("/x/bare.sh", bare, {"qos": "high"}, r)
    expect(not r.mismatches and r.notes, "unobservable QOS is a note")
    rec_q = dict(bare, AdminComment="oracle:qos=high")
    r = Report()
    compare("/x/bare.sh", rec_q, {"qos": "high"}, r)
    expect(not r.mismatches, "recorded QOS: %r" % r.mismatches)
    r = Report()
    compare("/x/bare.sh", rec_q, {}, r)
    expect({m[1] for m in r.mismatches} == {"QOS"}, "QOS we missed")
    r = Report()
    compare("/x/bare.sh", dict(bare, AdminComment="oracle:qos="),
            {"qos": "high"}, r)
    expect({m[1] for m in r.mismatches} == {"QOS"}, "QOS sbatch did not see")

    # -n 10 at 4 per node, no -N: the held job shows 2 nodes, Slurm
    # allocates 3.
    est = parse_scontrol(
        "JobId=5 JobName=u.sh Account=(null) QOS=(null) "
        "TimeLimit=UNLIMITED Partition=debug NumNodes=2 NumCPUs=10 "
        "NumTasks=10 CPUs/Task=1 NtasksPerN:B:S:C=4:0:*:* "
        "ReqNodeList=(null) MinMemoryNode=0")
    ok = {"ntasks": 10, "ntasks_per_node": 4, "nodes_min": 3,
          "shape": {"nodes": 3, "ntasks": 10}}
    r = Report()
    compare("/x/u.sh", est, ok, r)
    expect(not r.mismatches, "derived node count: %r" % r.mismatches)
    r = Report()
    compare("/x/u.sh", est, dict(ok, nodes_min=2), r)
    expect({m[1] for m in r.mismatches} == {"NumNodes"},
           "a node count Slurm would not allocate")
    r = Report()
    compare("/x/u.sh", est, {"ntasks": 10, "ntasks_per_node": 4,
                             "shape": {"nodes": 1}}, r)
    expect({m[1] for m in r.mismatches} == {"NumNodes"},
           "one worker for 10 tasks at 4 per node")

    # -N 2-4 with ntasks-per-node 8: NumTasks 16, no ntasks.
    rng = parse_scontrol(
        "JobId=4 JobName=r.sh Account=(null) QOS=(null) TimeLimit=00:10:00 "
        "Partition=debug NumNodes=2-4 NumCPUs=16 NumTasks=16 CPUs/Task=1 "
        "NtasksPerN:B:S:C=8:0:*:* MinMemoryNode=4G "
        "TresPerJob=gres:gpu:16 MemPerTres=gres:gpu:10240")
    r = Report()
    compare("/x/r.sh", rng, {"nodes_min": 2, "nodes_max": 4,
                             "ntasks_per_node": 8, "time_limit": 600,
                             "mem": {"kind": "per_gpu", "mb": 10240},
                             "gpus": {"scope": "job", "count": 16}}, r)
    got = {m[1] for m in r.mismatches}
    # MinMemoryNode=4G is not checked for per_gpu; everything else agrees.
    expect(not got, "range sample: %r" % r.mismatches)
    r = Report()
    compare("/x/r.sh", rng, {"nodes_min": 2, "nodes_max": 4,
                             "ntasks_per_node": 8, "time_limit": 600,
                             "mem": {"kind": "per_gpu", "mb": 10240},
                             "gpus": {"scope": "job", "count": 16},
                             "shape": {"ntasks": 32}}, r)
    expect({m[1] for m in r.mismatches} == {"NumTasks"},
           "shape.ntasks is compared: %r" % r.mismatches)

    # Fields beyond the shape.
    more = parse_scontrol(
        "JobId=5 JobName=m.sh Account=(null) QOS=(null) Dependency="
        "afterok:12(unfulfilled),afterany:13(unfulfilled) Requeue=0 "
        "TimeLimit=02:00:00 TimeMin=01:00:00 Partition=debug "
        "ReqNodeList=hb[1-2] ExcNodeList=hb4 NumNodes=2 NumTasks=2 "
        "CPUs/Task=1 NtasksPerN:B:S:C=0:0:*:* MinMemoryNode=0 "
        "Features=ib&skylake OverSubscribe=NO Licenses=matlab:2 "
        "Deadline=2035-12-31T23:00:00 Comment=a b, c  StdErr=/x "
        "MailUser=a@b MailType=BEGIN,END")
    more_spec = {"nodelist": "hb1,hb2", "exclude": "hb4", "nodes_min": 2,
                 "dependency": "afterok:12,afterany:13", "requeue": False,
                 "time_limit": 7200, "time_min": 3600,
                 "constraint": "ib&skylake", "exclusive": True,
                 "licenses": "matlab:2", "deadline": "2035-12-31T23:00:00",
                 "comment": "a b, c", "mail_user": "a@b",
                 "mail_type": "BEGIN,END"}
    r = Report()
    compare("/x/m.sh", more, more_spec, r)
    expect(not r.mismatches, "more fields: %r" % r.mismatches)
    for field, change in (
            ("ReqNodeList", lambda s: s.update(nodelist="hb[1-3]")),
            ("ExcNodeList", lambda s: s.pop("exclude")),
            ("Dependency", lambda s: s.update(dependency="afterok:12")),
            ("Requeue", lambda s: s.pop("requeue")),
            ("TimeMin", lambda s: s.pop("time_min")),
            ("Features", lambda s: s.pop("constraint")),
            ("OverSubscribe", lambda s: s.pop("exclusive")),
            ("Licenses", lambda s: s.update(licenses="matlab")),
            ("Deadline", lambda s: s.pop("deadline")),
            ("Comment", lambda s: s.update(comment="a b")),
            ("MailUser", lambda s: s.pop("mail_user")),
            ("MailType", lambda s: s.update(mail_type="END"))):
        spec = dict(more_spec)
        change(spec)
        r = Report()
        compare("/x/m.sh", more, spec, r)
        got = {m[1] for m in r.mismatches}
        expect(field in got, "mutation %s not caught (got %s)"
               % (field, sorted(got)))
    expect(dep_set("afterok:2_*(unfulfilled),afterany:3(unfulfilled)") ==
           {"afterok:2", "afterany:3"}, "array dependency")
    r = Report()
    compare("/x/m.sh", dict(more, UserId="root(0)", MailUser="root"),
            dict(more_spec, mail_user=None), r)
    expect(not r.mismatches, "default mail user: %r" % r.mismatches)
    r = Report()
    no_mail = {k: v for k, v in more.items()
               if k not in ("MailUser", "MailType")}
    compare("/x/m.sh", no_mail, dict(more_spec, mail_type=None), r)
    expect(not r.mismatches, "--mail-user alone is not shown: %r"
           % r.mismatches)
    r = Report()
    compare("/x/m.sh", no_mail, more_spec, r)
    expect({m[1] for m in r.mismatches} == {"MailType"},
           "a mail type Slurm did not see: %r" % r.mismatches)
    r = Report()
    compare("/x/m.sh", dict(more, TresPerJob="gres:gpu:0"), more_spec, r)
    expect(not r.mismatches, "gpu:0 is no GPU: %r" % r.mismatches)
    expect(expand_hostlist("hb[1-2,4],n[08-10]x") ==
           {"hb1", "hb2", "hb4", "n08x", "n09x", "n10x"}, "hostlist")

    # Reject checks.
    r = Report()
    check_rejected_by_us("/x/bad.sh", 1, "", "/x/bad.sh:3: unknown option",
                         r, "x")
    expect(not r.mismatches, "good rejection: %r" % r.mismatches)
    r = Report()
    check_rejected_by_us("/x/bad.sh", 0, "{}", "", r, "x")
    expect({m[1] for m in r.mismatches} == {"acceptance", "stdout",
                                            "stderr"},
           "accepted bad script: %r" % r.mismatches)

    # Realworld list: a listed mismatch is known, an unlisted one is not,
    # a listed field that agrees is stale.
    r = Report()
    r.bad("rw.sbatch", "NumTasks", 4, 2)
    r.bad("rw.sbatch", "TimeLimit", 5, 6)
    settle_realworld(r, "rw.sbatch", {"NumTasks": "x", "acceptance": "y"}, 0)
    expect([m[1] for m in r.known] == ["NumTasks"] and
           sorted(m[1] for m in r.mismatches) == ["TimeLimit", "stale"],
           "realworld settle: %r %r" % (r.known, r.mismatches))

    for f in failures:
        print("selftest FAILED: %s" % f)
    print("oracle selftest: %d failures" % len(failures))
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--hpcbridge", required=True)
    r.add_argument("--workdir", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--accept", nargs="*", default=[])
    r.add_argument("--reject", nargs="*", default=[])
    r.add_argument("--known", nargs="*", default=[])
    r.add_argument("--realworld", nargs="*", default=[])
    r.add_argument("--realworld-known", default="")
    sub.add_parser("selftest")
    args = ap.parse_args()
    if args.cmd == "selftest":
        return selftest()
    return cmd_run(args)


if __name__ == "__main__":
    sys.exit(main())
