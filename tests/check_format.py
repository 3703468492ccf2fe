#!/usr/bin/env python3
"""Every C++ and CUDA source file is laid out as the project's .clang-format says.

The layout is clang-format 14's (Debian 12's): another version formats some constructs
differently, so with another version, or none, the check is skipped (exit 77) with the reason.
Exit 1 names each file that differs (fix: clang-format -i FILE), 0 when every file matches.
"""

import os
import re
import shutil
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
    # One clang-format process for every file: started once a file, its libraries' loading took
    # 40 s of CPU on CI's 2 cores for ~340 files; one run checks them all in about 2 s.
    paths = list(sources())
    run = subprocess.run([tool, "--style=file", "--dry-run", "-Werror", *paths], capture_output=True, text=True)
    flagged = set()
    for line in run.stderr.splitlines():
        match = re.match(r"(.+?):\d+:\d+: (?:error|warning): code should be clang-formatted", line)
        if match:
            flagged.add(os.path.abspath(match.group(1)))
    if run.returncode != 0 and not flagged:  # a failure that is not a layout difference
        print(f"check_format: clang-format failed ({run.returncode}):\n{run.stderr[-2000:]}")
        return 1
    different = [os.path.relpath(p, ROOT) for p in paths if os.path.abspath(p) in flagged]
    for path in different:
        print(f"{path}: not formatted (clang-format -i {path})")
    print(f"check_format: {len(different)} file(s) differ" if different else "check_format: every file is formatted")
    return 1 if different else 0


if __name__ == "__main__":
    sys.exit(main())
