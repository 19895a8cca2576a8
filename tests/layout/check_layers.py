#!/usr/bin/env python3
"""check_layers.py SRC - fail when an #include crosses a layer the wrong way.

The parts and their layers are drawn in docs/internals/README.md.  A source
file may include a header of its own part, or of a part on a lower layer;
never a part on its own layer or above.  The Slurm plugin may include only
the parts it links.  Every public header (include/hpcbridge/) must be
listed in HEADERS under the part that implements it, so a new header gets
a place before it can be used.
"""
import os
import re
import sys

# Part (a folder from the top) -> layer; lower layers know nothing above.
LAYERS = {
    "translators/base": 0,
    "translators": 1,  # with translators/sbatch, pbs and k8s
    "gateway/metrics": 1,  # counted by the store, the clients, the daemon
    "state": 2,
    "gateway/proto": 2,
    "gateway/config": 2,
    "gateway/s3": 2,
    "gateway/ckpt": 2,
    "gateway/kube": 3,
    "gateway/mirror": 3,
    "gateway/ledger": 3,
    "gateway/slurm": 3,
    "gateway/fabric": 3,
    "gateway/placement": 3,
    "gateway/sides": 4,
    "gateway/daemon": 5,
    "gateway/cli": 5,
    "slurm-plugin": 5,
}
# The plugin's .so carries only these (tests/layout/plugin_symbols.sh).
# The plugin decides inside slurmctld with the placement engine (issue
# 23); the daemon's decider and the state store stay out of it, which
# plugin_symbols.sh checks in the built .so.
PLUGIN_MAY_USE = {"slurm-plugin", "gateway/config", "gateway/proto",
                  "gateway/placement", "translators", "translators/base"}

# Public header -> the part that implements it.
HEADERS = {
    "error.h": "translators/base", "buf.h": "translators/base",
    "bytes.h": "translators/base", "units.h": "translators/base",
    "doc.h": "translators/base", "log.h": "translators/base",
    "file.h": "translators/base", "user.h": "translators/base",
    "timefmt.h": "translators/base", "hash.h": "translators/base",
    "clock.h": "translators/base",
    "jobspec.h": "translators", "fidelity.h": "translators",
    "translate.h": "translators", "sbatch.h": "translators",
"mpijob.h": "translators",
    "trainjob.h": "translators", "launcher.h": "translators",
    "schema.h": "translators", "k8s_opts.h": "translators",
    "store.h": "state",
    "metrics.h": "gateway/metrics",
    "proto.h": "gateway/proto",
    "config.h": "gateway/config",
    "s3.h": "gateway/s3",
    "ckpt.h": "gateway/ckpt",
    "mirror.h": "gateway/mirror",
    "ratecard.h": "gateway/ledger", "meter.h": "gateway/ledger",
    "kube.h": "gateway/kube",
    "slurmc.h": "gateway/slurm",
    "fabric.h": "gateway/fabric",
    "placement.h": "gateway/placement", "policy.h": "gateway/placement",
    "snapshot.h": "gateway/placement", "rules.h": "gateway/placement",
    "kube_capacity.h": "gateway/placement", "snapfile.h": "gateway/placement",
    "remote.h": "gateway/sides",
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def part_of(path):
    """The part a file under the top folder belongs to, or None."""
    d = os.path.dirname(path)
    if d.startswith("translators/") and d != "translators/base":
        return "translators"
    return d if d in LAYERS else None


def owner(src_part, src_path, inc):
    if inc.startswith("hpcbridge/"):
        return HEADERS.get(inc[len("hpcbridge/"):], "?" + inc)
    if "/" not in inc:  # next to the including file
        return src_part
    return part_of(inc) or "?" + inc


def main():
    top = sys.argv[1] if len(sys.argv) > 1 else "."
    bad = []
    files = 0
    for root in ("translators", "state", "gateway", "slurm-plugin",
                 "include/hpcbridge"):
        for dirpath, _, names in os.walk(os.path.join(top, root)):
            for n in sorted(names):
                if not n.endswith((".c", ".h")):
                    continue
                path = os.path.relpath(os.path.join(dirpath, n), top)
                if path.startswith("include/"):
                    src = HEADERS.get(n)
                    if src is None:
                        bad.append(f"{path}: public header not listed in "
                                   "tests/layout/check_layers.py HEADERS")
                        continue
                else:
                    src = part_of(path)
                    if src is None:
                        bad.append(f"{path}: folder is not a part")
                        continue
                files += 1
                with open(os.path.join(top, path), encoding="utf-8") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        dst = owner(src, path, m.group(1))
                        where = f"{path}:{lineno}"
                        if dst.startswith("?"):
                            bad.append(f"{where}: {m.group(1)} belongs to "
                                       "no part")
                        elif src == "slurm-plugin" and \
                                dst not in PLUGIN_MAY_USE:
                            bad.append(f"{where}: the plugin includes "
                                       f"{m.group(1)} ({dst})")
                        elif dst != src and LAYERS[dst] >= LAYERS[src]:
                            bad.append(f"{where}: {src} (layer "
                                       f"{LAYERS[src]}) includes "
                                       f"{m.group(1)} of {dst} (layer "
                                       f"{LAYERS[dst]})")
    for b in bad:
        print(b)
    print(f"check_layers: {files} files, {len(bad)} wrong-way includes")
    return 1 if bad or files == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
