#!/usr/bin/env python3
"""Every C++ and CUDA source file is laid out as the project's .clang-format says.

The layout is clang-format 14's (Debian 12's): another version formats some constructs
differently, so with another version, or none, the check is skipped (exit 77) with the reason.
Exit 1 names each file that differs (fix: clang-format -i FILE), 0 when every file matches.
"""

import os
import re
import shutil
from concurrent.futures import ThreadPoolExecutor
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = ("src", "kernels", "python/src", "tests", "fuzz", "benchmarks")
SKIP = 77


def sources():
    for folder in FOLDERS:
        for dirpath, _, files in os.walk(os.path.join(ROOT, folder)):
            for name in sorted(files):
                if name.endswith((".h", ".cpp", ".cu", ".cuh")):
                    yield os.path.join(dirpath, name)


def main():
    tool = shutil.which("clang-format-14") or shutil.which("clang-format")
    if not tool:
        print("check_format: skipped: clang-format is not installed (Debian: apt-get install clang-format)")
        return SKIP
    version = subprocess.run([tool, "--version"], capture_output=True, text=True).stdout
    if not re.search(r"version 14\.", version):
        print(f"check_format: skipped: the layout is clang-format 14's, this is {version.strip()}")
        return SKIP
    def differs(path):
        with open(path, "rb") as f:
            original = f.read()
        return subprocess.run([tool, "--style=file", path], capture_output=True, check=True).stdout != original

    paths = list(sources())
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        flags = list(pool.map(differs, paths))
    different = [os.path.relpath(p, ROOT) for p, d in zip(paths, flags) if d]
    for path in different:
        print(f"{path}: not formatted (clang-format -i {path})")
    print(f"check_format: {len(different)} file(s) differ" if different else "check_format: every file is formatted")
    return 1 if different else 0


if __name__ == "__main__":
    sys.exit(main())
