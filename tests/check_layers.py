#!/usr/bin/env python3
"""No include runs from a lower layer up to a higher one (docs/ARCHITECTURE.md, "Where each
concept lives"). Every #include "src/..." or "kernels/..." of every source file is checked
against the folder's allowed dependencies; the Python module must not reach the command line.
Exit 1 with each offending line, 0 when the layering holds.
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# folder -> the folders it may include from (itself always allowed)
ALLOWED = {
    "src/core": set(),
    "src/physics": {"src/core"},
    "src/os": {"src/core"},
    "src/structure": {"src/core", "src/physics", "src/os"},
    "src/maps": {"src/core", "src/physics", "src/os"},
    "src/view": {"src/core", "src/physics", "src/os", "src/structure", "src/maps"},
    "src/compute": {"src/core", "src/physics"},
    "src/msm": {"src/core", "src/physics", "src/compute"},
    "src/registry": {"src/core", "src/physics", "src/compute", "src/msm"},
    "src/pb_numerics": {"src/core"},
    "src/pb_surface": {"src/core", "src/physics", "src/pb_numerics"},
    "src/pb": {"src/core", "src/physics", "src/compute", "src/registry", "src/pb_numerics", "src/pb_surface"},
    "kernels": {"src/core", "src/physics", "src/compute", "src/msm", "src/pb", "src/pb_numerics", "src/pb_surface"},
}
_BELOW_JOB = {"src/core", "src/physics", "src/os", "src/structure", "src/maps", "src/view", "src/compute", "src/msm",
              "src/registry", "src/pb_numerics", "src/pb_surface", "src/pb"}
ALLOWED["src/job"] = set(_BELOW_JOB)
ALLOWED["src/pipeline"] = _BELOW_JOB | {"src/job"}
ALLOWED["src/bench"] = ALLOWED["src/pipeline"] | {"src/pipeline"}
ALLOWED["src/scaleout"] = ALLOWED["src/pipeline"] | {"src/pipeline"}
ALLOWED["src/apbs"] = ALLOWED["src/pipeline"] | {"src/pipeline"}
ALLOWED["python/src"] = ALLOWED["src/pipeline"] | {"src/pipeline", "src/apbs"}
ALLOWED["src/cli"] = ALLOWED["src/pipeline"] | {"src/pipeline", "src/bench", "src/scaleout", "src/apbs"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"((?:src|kernels|python)/[^"]+)"')


def folder_of(path):
    for folder in sorted(ALLOWED, key=len, reverse=True):
        if path.startswith(folder + "/"):
            return folder
    return None


def main():
    problems = []
    for folder in ALLOWED:
        for dirpath, _, files in os.walk(os.path.join(ROOT, folder)):
            for name in files:
                if not name.endswith((".h", ".cpp", ".cu", ".cuh")):
                    continue
                path = os.path.relpath(os.path.join(dirpath, name), ROOT)
                here = folder_of(path)
                with open(os.path.join(ROOT, path), encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = folder_of(m.group(1))
                        if target is None or target == here or target in ALLOWED[here]:
                            continue
                        problems.append(f"{path}:{number}: {here} includes {m.group(1)} ({target} is above it)")
    for p in problems:
        print(p)
    print(f"check_layers: {len(problems)} include(s) run up a layer" if problems else "check_layers: layering holds")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
