#!/usr/bin/env python3
"""check_docs.py SRC - the internals pages name only what exists.

Every `code span` in docs/internals/*.md that names a C function
(`name()`), a project symbol (`hb_...`, `HB_...`, `struct hb_...`) or a
path in the tree (`gateway/...`, `translators/...`, `tests/...`, ...) must
be found in the source: a function or symbol as a whole word in some .c or
.h file, a path as a file or folder (a `*` in it as a glob).  A page that
names a function after it was renamed or a file after it moved fails,
naming the page and line.
"""
import glob
import os
import re
import sys

TOP_DIRS = ("gateway/", "translators/", "state/", "slurm-plugin/", "tests/",
            "include/", "scripts/", "config/", "docs/", "examples/")
SPAN = re.compile(r"`([^`\n]+)`")
FUNC = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*\.)?([A-Za-z_][A-Za-z0-9_]*)\(\)$")
# Functions of Slurm and the C library that the pages name.
EXTERNAL = {"spank_init_post_opt", "spank_set_job_env",
            "gres_prepend_tres_type", "gmtime"}
SYM = re.compile(r"^(?:struct |enum )?((?:hb|HB)_[A-Za-z0-9_]+)$")


def words(top):
    """Every identifier in the project's C sources and scripts."""
    seen = set()
    for root in ("gateway", "translators", "state", "slurm-plugin", "include",
                 "tests"):
        for dirpath, _, names in os.walk(os.path.join(top, root)):
            for n in names:
                if n.endswith((".c", ".h", ".sh", ".py", ".txt")):
                    with open(os.path.join(dirpath, n), encoding="utf-8",
                              errors="replace") as f:
                        seen.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*",
                                               f.read()))
    return seen


def main():
    top = sys.argv[1] if len(sys.argv) > 1 else "."
    known = words(top) | EXTERNAL
    bad = []
    pages = sorted(glob.glob(os.path.join(top, "docs/internals/*.md")))
    for page in pages:
        rel = os.path.relpath(page, top)
        with open(page, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                for span in SPAN.findall(line):
                    s = span.strip()
                    if s.startswith("_"):  # a suffix: `_free()` of hb_x_free
                        continue
                    m = FUNC.match(s) or SYM.match(s)
                    if m:
                        if m.group(1) not in known:
                            bad.append(f"{rel}:{lineno}: {s} is not in the "
                                       "source")
                        continue
                    if not s:
                        continue
                    path = s.split()[0].rstrip(",;:")
                    if path.startswith(TOP_DIRS) and "/" in path:
                        p = path.split("#")[0].rstrip(".")
                        if "..." in p or "<" in p or "{" in p:
                            continue
                        if not glob.glob(os.path.join(top, p)):
                            bad.append(f"{rel}:{lineno}: {path} does not "
                                       "exist")
    for b in bad:
        print(b)
    print(f"check_docs: {len(pages)} pages, {len(bad)} stale names")
    return 1 if bad or not pages else 0


if __name__ == "__main__":
    sys.exit(main())
