#!/usr/bin/python3
"""Makes the APBS fixtures of tests/test_apbs.cpp: what APBS 3.4.1 itself sets up for each input in
nosh/ (its grids level by level, its energies, its files), recorded once so the tests need no APBS.

For each nosh/NAME.in: the input and the molecules it reads (data/*.pqr, tests/data/apbs/*.pqr) are
copied into a temporary directory, `apbs NAME.in` runs there, and nosh/NAME.apbs.txt gets, from
APBS's standard output, every CALCULATION's grid lines ("Grid dimensions/spacings/lengths/center",
printed %4.3f), boundary line, energies ("Total electrostatic energy", %1.12E) and written files,
the PRINT section, and the first 11 lines (the grid header) of every .dx file APBS wrote.

mg-para inputs run once per partition with `async RANK` after `mg-para` (Debian's APBS has no MPI:
one process can only compute one partition); their sections start with "## rank R".

    /usr/bin/python3 tests/data/apbs/make_apbs_fixtures.py [NAME ...]
"""

import datetime
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
KEEP = re.compile(r"^(CALCULATION #|  Grid |  Multigrid levels|  .*[Bb]oundary conditions|  Total electrostatic energy"
                  r"|  Writing |print energy|  Local net|  Global net|  Partition overlap|  Processor array)")


def molecules_of(text):
    return re.findall(r"(?im)^\s*mol\s+(?:pqr|pdb)\s+(\S+)", text)


def run_apbs(text, name, molecules):
    with tempfile.TemporaryDirectory() as work:
        with open(os.path.join(work, name), "w") as f:
            f.write(text)
        for m in molecules:
            for folder in (HERE, os.path.join(ROOT, "data")):
                if os.path.exists(os.path.join(folder, m)):
                    shutil.copy(os.path.join(folder, m), work)
                    break
            else:
                sys.exit(f"{name}: molecule {m} is neither in tests/data/apbs/ nor in data/")
        run = subprocess.run(["apbs", name], cwd=work, capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"{name}: apbs failed ({run.returncode}):\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}")
        lines = [line for line in run.stdout.splitlines() if KEEP.match(line)]
        for dx in sorted(glob.glob(os.path.join(work, "*.dx"))):
            lines.append(f"### {os.path.basename(dx)}")
            with open(dx) as f:
                lines += [next(f).rstrip("\n") for _ in range(11)]
        return lines


def make(path):
    name = os.path.basename(path)
    with open(path) as f:
        text = f.read()
    molecules = molecules_of(text)
    out = [f"# APBS 3.4.1 (Debian apbs) on {name}, {datetime.date.today()}: tests/data/apbs/make_apbs_fixtures.py"]
    if re.search(r"(?im)^\s*mg-para", text):
        pdime = [int(x) for x in re.search(r"(?im)^\s*pdime\s+(\d+)\s+(\d+)\s+(\d+)", text).groups()]
        for rank in range(pdime[0] * pdime[1] * pdime[2]):
            ranked = re.sub(r"(?im)^(\s*mg-para)\s*$", rf"\1\n    async {rank}", text)
            out.append(f"## rank {rank}")
            out += run_apbs(ranked, name, molecules)
    else:
        out += run_apbs(text, name, molecules)
    with open(path[:-3] + ".apbs.txt", "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"{name}: {len(out)} lines")


def main():
    wanted = sys.argv[1:]
    for path in sorted(glob.glob(os.path.join(HERE, "nosh", "*.in"))):
        if not wanted or os.path.basename(path)[:-3] in wanted:
            make(path)


if __name__ == "__main__":
    main()
