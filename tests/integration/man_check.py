#!/usr/bin/env python3
"""Check that a man page and a program's --help say the same options.

usage: man_check.py cli PAGE HPCBRIDGE     hpcbridge(1) against hpcbridge
       man_check.py daemon PAGE HPCBRIDGED  hpcbridged(8) against hpcbridged
       man_check.py keys PAGE KEYS_FILE     hpcbridge.yaml(5) against the
                                            configuration table
       man_check.py policy PAGE POLICY_C    hpcbridge-policy(5) against the
                                            policy reader's key tables

cli: every command 'hpcbridge --help' lists has a '.SS COMMAND' under
COMMANDS; every option (-x, --long) 'hpcbridge COMMAND --help' prints is
documented in that section (an option the help lists in [brackets] or at
the start of a line must be a .TP item; one the help only mentions in
prose must at least be mentioned); and every .TP item's option is one the
help prints.  'hpcbridge --help' itself is checked against OPTIONS.
daemon: the same for hpcbridged --help and hpcbridged(8)'s OPTIONS.
keys: every key of the table is a .TP item of KEYS, and every KEYS item is
a key of the table.
policy: every key in a '*_keys[]' table (and RULE_KEYS) of the policy
reader is a .TP item of KEYS, and every KEYS item is such a key.
Prints one line per disagreement; exit 1 when there is any.
"""
import re
import subprocess
import sys

# An option: after the start, a blank, [, |, ( or a comma; not followed
# by '=' (then it is an example value of another option: -O --partition=gpu)
OPT = re.compile(r"(?:^|(?<=[\s\[|(,]))(--[a-z][a-z0-9-]*|-[A-Za-z])(?![\w=-])")
BRACKETED = re.compile(r"\[[^\]]*\]")

problems = []


def bad(msg):
    problems.append(msg)


def roff_text(line):
    """A roff line as plain text: escapes and font changes removed."""
    line = line.replace("\\-", "-").replace("\\&", "").replace("\\e", "\\")
    line = re.sub(r"\\f(\[[^\]]*\]|.)", "", line)
    line = re.sub(r"\\\((..)", " ", line)
    if line.startswith("."):
        macro, _, rest = line.partition(" ")
        if macro in (".B", ".I", ".BR", ".BI", ".IR", ".RB", ".RI", ".IB"):
            # alternating-font macros: arguments, quotes dropped
            line = rest.replace('"', "")
            if macro not in (".B", ".I"):
                line = "".join(re.findall(r'"[^"]*"|\S+', rest)).replace(
                    '"', "")
        elif macro.startswith('.\\"'):
            return ""
        else:
            line = rest
    return line


def sections(page, level):
    """{name: [lines]} of the page's .SH (level 'SH') or .SS sections."""
    out, name = {}, None
    for raw in open(page, encoding="utf-8").read().split("\n"):
        if raw.startswith(".SH ") or raw.startswith(".SS "):
            head = raw[4:].strip().strip('"')
            if raw.startswith("." + level + " "):
                name = head
                out[name] = []
                continue
            if level == "SS" and raw.startswith(".SH "):
                name = None
                continue
        if name is not None:
            out[name].append(raw)
    return out


def tagged_and_mentioned(lines):
    """Options in the .TP tags, and options anywhere, of a section."""
    tags, all_ = set(), set()
    for i, raw in enumerate(lines):
        text = roff_text(raw)
        found = set(OPT.findall(text))
        all_ |= found
        if i > 0 and lines[i - 1].strip() == ".TP":
            tags |= found
    return tags, all_


def help_options(text):
    """(strict, all): options the help lists in [brackets] or at the start
    of a line, and every option it names."""
    strict, all_ = set(), set(OPT.findall(text))
    for line in text.split("\n"):
        for br in BRACKETED.findall(line):
            strict |= set(OPT.findall(br))
        # an option list's line: "  --json  print ..."
        m = re.match(r"\s+(-[A-Za-z]|--[a-z][a-z0-9-]*)(?![\w=-])", line)
        if m:
            strict.add(m.group(1))
        # "-t, --to KIND": the long form after a short one too
        m = re.match(r"\s+-[A-Za-z], (--[a-z][a-z0-9-]*)", line)
        if m:
            strict.add(m.group(1))
        if line.startswith("usage:") or re.match(r"\s+hpcbridge", line):
            # options a usage line names outside brackets are required
            # ones (retain --keep N, explain --dump-state)
            strict |= set(OPT.findall(BRACKETED.sub("", line)))
    return strict, all_


def run_help(argv):
    p = subprocess.run(argv + ["--help"], capture_output=True, text=True)
    if p.returncode != 0:
        bad(f"{' '.join(argv)} --help: exit {p.returncode}")
    return p.stdout


def compare(what, help_text, lines):
    strict, named = help_options(help_text)
    tags, mentioned = tagged_and_mentioned(lines)
    for o in sorted(strict - tags):
        bad(f"{what}: --help lists {o}; the man page has no .TP item for it")
    for o in sorted(named - strict - mentioned):
        bad(f"{what}: --help mentions {o}; the man page does not")
    for o in sorted(tags - named):
        bad(f"{what}: the man page documents {o}; --help does not print it")


def check_cli(page, exe):
    top = run_help([exe])
    cmds = re.findall(r"^  ([a-z][a-z-]*) ", top.split("commands:", 1)[-1],
                      re.M)
    if len(cmds) < 10:
        bad(f"hpcbridge --help lists only {len(cmds)} commands: {cmds}")
    subs = sections(page, "SS")
    shs = sections(page, "SH")
    if "COMMANDS" not in shs:
        bad(f"{page}: no COMMANDS section")
    head = top.split("commands:", 1)[0]
    compare("hpcbridge", head, shs.get("OPTIONS", []))
    for c in cmds:
        if c not in subs:
            bad(f"hpcbridge {c}: no '.SS {c}' in {page}")
            continue
        compare(f"hpcbridge {c}", run_help([exe, c]), subs[c])
    for s in subs:
        if s not in cmds and s in roff_commands(shs.get("COMMANDS", [])):
            bad(f"{page}: '.SS {s}' is not a command 'hpcbridge --help' lists")
    print(f"{len(cmds)} commands checked")


def roff_commands(lines):
    return [l[4:].strip() for l in lines if l.startswith(".SS ")]


def check_daemon(page, exe):
    shs = sections(page, "SH")
    compare("hpcbridged", run_help([exe]), shs.get("OPTIONS", []))
    print("hpcbridged options checked")


def check_keys(page, keys_file):
    keys = [l.split("\t", 1)[0] for l in open(keys_file) if l.strip()]
    if len(keys) < 19:
        bad(f"only {len(keys)} keys in {keys_file}")
    lines = sections(page, "SH").get("KEYS", [])
    items = {roff_text(lines[i + 1]).strip()
             for i, l in enumerate(lines[:-1]) if l.strip() == ".TP"}
    for k in keys:
        if k not in items:
            bad(f"{k}: a configuration key that {page} does not document")
    for k in sorted(items - set(keys)):
        bad(f"{page} documents {k}, which is not a configuration key")
    print(f"{len(keys)} keys checked")


def check_policy(page, source):
    src = open(source, encoding="utf-8").read()
    macros = {m.group(1): m.group(2) for m in re.finditer(
        r"#define (\w+)\s+((?:[^\n]*\\\n)*[^\n]*)", src)}
    keys = set()
    for m in re.finditer(r"_keys\[\] = \{([^}]*)\}", src):
        body = m.group(1)
        for name, text in macros.items():
            body = body.replace(name, text)
        keys |= set(re.findall(r'"([a-z_0-9]+)"', body))
    if len(keys) < 40:
        bad(f"only {len(keys)} policy keys found in {source}")
    lines = sections(page, "SH").get("KEYS", [])
    items = {roff_text(lines[i + 1]).split()[0]
             for i, l in enumerate(lines[:-1]) if l.strip() == ".TP"}
    for k in sorted(keys - items):
        bad(f"{k}: a policy key that {page} does not document")
    for k in sorted(items - keys):
        bad(f"{page} documents {k}, which the policy reader does not know")
    print(f"{len(keys)} policy keys checked")


def main():
    mode, page, arg = sys.argv[1:4]
    {"cli": check_cli, "daemon": check_daemon, "keys": check_keys,
     "policy": check_policy}[mode](
        page, arg)
    for p in problems:
        print("FAIL: " + p)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
