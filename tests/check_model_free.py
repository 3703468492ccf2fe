#!/usr/bin/env python3
"""Which core sources both core libraries can share (CMakeLists.txt compiles them once, as the
object library espgrid_core_common, for espgrid_core and the added-model test's second core): those
that neither include, themselves or through any project header they include, src/physics/
pair_potentials.h (which the added-model test extends through ESPGRID_EXTRA_MODEL_HEADER) nor read
ESPGRID_HAVE_CUDA (off in that test's library). A shared source that reached either would give the
added-model library an object built without its model.

  check_model_free.py --suggest     every core source that qualifies (what CMake's configure shares)
  check_model_free.py --check FILE  each source listed in FILE (the build's choice, written at
                                    configure) still qualifies; exit 1 naming each that no longer
                                    does and the chain that reaches the header (re-run cmake)
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL_HEADER = "src/physics/pair_potentials.h"
DIFFERING_MACROS = ("ESPGRID_HAVE_CUDA", "ESPGRID_EXTRA_MODEL")
INCLUDE = re.compile(r'^\s*#\s*include\s+"((?:src|kernels|python|tests)/[^"]+)"', re.M)


def cmake_list(path, variable):
    """The entries of set(VARIABLE ...) in a CMake file (comments dropped)."""
    text = re.sub(r"#[^\n]*", "", open(os.path.join(ROOT, path)).read())
    match = re.search(r"set\(\s*" + variable + r"\s+([^)]*)\)", text)
    if not match:
        sys.exit(f"check_model_free: no set({variable} ...) in {path}")
    return match.group(1).split()


def differing_reason(source, cache):
    """None when `source` reaches neither the model header nor the differing macros; else the
    include chain that reaches one."""
    def visit(path, chain):
        if path in cache:
            return cache[path]
        cache[path] = None  # cycles: #pragma once headers
        text = open(os.path.join(ROOT, path), encoding="utf-8").read()
        reason = None
        if path == MODEL_HEADER:
            reason = chain + [path]
        elif any(m in text for m in DIFFERING_MACROS):
            reason = chain + [path + " (reads " + ", ".join(m for m in DIFFERING_MACROS if m in text) + ")"]
        else:
            for included in INCLUDE.findall(text):
                if os.path.exists(os.path.join(ROOT, included)):
                    sub = visit(included, chain + [path])
                    if sub:
                        reason = sub
                        break
        cache[path] = reason
        return reason
    return visit(source, [])


def main():
    core = cmake_list("CMakeLists.txt", "ESPGRID_CORE_SOURCES")
    cache = {}
    if len(sys.argv) == 2 and sys.argv[1] == "--suggest":
        print(";".join(source for source in core if not differing_reason(source, cache)))
        return 0
    if len(sys.argv) != 3 or sys.argv[1] != "--check":
        sys.exit(__doc__)
    listed = [s for s in open(sys.argv[2]).read().replace(";", "\n").split() if s]
    problems = []
    for source in listed:
        if source not in core:
            problems.append(f"{source}: no longer in ESPGRID_CORE_SOURCES (CMakeLists.txt); re-run cmake")
            continue
        reason = differing_reason(source, cache)
        if reason:
            problems.append(f"{source}: now reaches {' -> '.join(reason)}, yet this build compiled it once for both "
                            "core libraries; re-run cmake (its configure shares only the sources that qualify)")
    for p in problems:
        print(p)
    print(f"check_model_free: {len(problems)} problem(s)" if problems else
          f"check_model_free: {len(listed)} sources shared by the core libraries, none reaches the model")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
