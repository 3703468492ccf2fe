#!/usr/bin/python3
"""`espgrid apbs FILE.in` against `apbs FILE.in`, whole process, on the same input (issue 32's speed
targets: CPU >= 3x APBS on the same cores, one GPU >= 200x APBS on two cores for PDB2PQR's template on
a >= 40,000-atom protein). Each program runs in its own copy of the input's folder, --repeats times
after one warm-up run; wall time and the child's CPU time (user + system) are reported as medians,
with the energies each printed (they must agree: the benchmark refuses a run whose energies differ
by more than the issue's 0.1%).

    /usr/bin/python3 benchmarks/apbs_frontend_benchmark.py --out results.md born/apbs-mol-auto.in ...
    /usr/bin/python3 benchmarks/apbs_frontend_benchmark.py --template data/big.pqr --backend cuda --no-apbs

Inputs are paths under /usr/share/apbs/examples (APBS's examples, as they are) or files of your own
(with their molecules beside them). --template PQR writes PDB2PQR's --apbs-input template for that
molecule (psize.py's rules: fine grid the molecule's extent + 20 A at <= 0.5 A spacing, dime 32k+1,
coarse grid 1.7x the extent, mg-auto, lpbe, bcfl sdh, smol, spl2, pdie 2, sdie 78.54, calcenergy
total, write pot). --no-apbs skips APBS (a GPU host without it): compare with APBS times measured
elsewhere on the same input.
"""

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

EXAMPLES = "/usr/share/apbs/examples"
ENERGY = re.compile(r"^  (?:Total electrostatic|Global net ELEC) energy = (\S+) kJ/mol$", re.M)


def template(pqr):
    """PDB2PQR's --apbs-input for `pqr` (psize.py's constants: cfac 1.7, fadd 20 A, space 0.5 A)."""
    xyz = []
    with open(pqr) as f:
        for line in f:
            if line.startswith(("ATOM", "HETATM")):
                xyz.append([float(v) for v in line.split()[-5:-2]])
    lo = [min(p[a] for p in xyz) for a in range(3)]
    hi = [max(p[a] for p in xyz) for a in range(3)]
    extent = [max(hi[a] - lo[a], 0.1) for a in range(3)]
    cglen = [1.7 * e for e in extent]
    fglen = [min(e + 20.0, c) for e, c in zip(extent, cglen)]
    dime = [32 * ((int(f / 0.5 + 0.5) - 1 + 31) // 32) + 1 for f in fglen]
    three = lambda v: " ".join(f"{x:.3f}" if isinstance(x, float) else str(x) for x in v)  # noqa: E731
    return (f"read\n    mol pqr {os.path.basename(pqr)}\nend\nelec name mol1\n    mg-auto\n    dime {three(dime)}\n"
            f"    cglen {three(cglen)}\n    fglen {three(fglen)}\n    cgcent mol 1\n    fgcent mol 1\n    mol 1\n"
            "    lpbe\n    bcfl sdh\n    pdie 2.0\n    sdie 78.54\n    srfm smol\n    chgm spl2\n    sdens 10.0\n"
            "    srad 1.4\n    swin 0.3\n    temp 298.15\n    calcenergy total\n    calcforce no\n    write pot dx pot\n"
            "end\nprint elecEnergy 1 end\nquit\n")


def prepare(work, source):
    """Copies the input's folder into `work`; returns the input's file name there."""
    folder = os.path.dirname(source)
    os.makedirs(work)
    for f in os.listdir(folder):
        if os.path.isfile(os.path.join(folder, f)):
            shutil.copy(os.path.join(folder, f), work)
    return os.path.basename(source)


def timed(cmd, cwd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    run = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if run.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({run.returncode}):\n{run.stderr[-2000:]}")
    return wall, cpu, [float(x) for x in ENERGY.findall(run.stdout)]


def measure(cmd, cwd, repeats):
    timed(cmd, cwd)  # warm-up: file cache, CUDA context, hypre's first allocations
    runs = [timed(cmd, cwd) for _ in range(repeats)]
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs), runs[-1][2]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="*", help="inputs under /usr/share/apbs/examples, or paths")
    p.add_argument("--template", help="also PDB2PQR's template for this PQR")
    p.add_argument("--espgrid", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                    "build", "espgrid"))
    p.add_argument("--backend", default="auto", help="espgrid apbs --backend (auto, cpu, cuda)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--no-apbs", action="store_true", help="run espgrid only")
    p.add_argument("--out", help="append the table to this Markdown file")
    a = p.parse_args()
    espgrid = os.path.abspath(a.espgrid)
    rows = ["| input | APBS wall / CPU s | espgrid wall / CPU s | wall ratio | CPU ratio | largest energy difference |",
            "| --- | --- | --- | --- | --- | --- |"]
    with tempfile.TemporaryDirectory() as wd:
        sources = [i if os.path.isabs(i) or os.path.exists(i) else os.path.join(EXAMPLES, i) for i in a.inputs]
        if a.template:
            folder = os.path.join(wd, "template")
            os.makedirs(folder)
            shutil.copy(a.template, folder)
            with open(os.path.join(folder, "template.in"), "w") as f:
                f.write(template(a.template))
            sources.append(os.path.join(folder, "template.in"))
        for n, source in enumerate(sources):
            name = os.path.relpath(source, EXAMPLES) if source.startswith(EXAMPLES) else os.path.basename(source)
            ours_dir = os.path.join(wd, f"{n}-espgrid")
            infile = prepare(ours_dir, source)
            ew, ec, ee = measure([espgrid, "apbs", infile, "--backend", a.backend], ours_dir, a.repeats)
            if a.no_apbs:
                rows.append(f"| `{name}` | — | {ew:.2f} / {ec:.2f} | | | |")
            else:
                apbs_dir = os.path.join(wd, f"{n}-apbs")
                prepare(apbs_dir, source)
                aw, ac, ae = measure(["apbs", infile], apbs_dir, a.repeats)
                worst = max((abs(x - y) / max(abs(y), 1e-300) for x, y in zip(ee, ae)), default=0.0)
                if len(ee) != len(ae) or worst > 1e-3:
                    sys.exit(f"{name}: energies disagree ({ee} vs APBS {ae})")
                rows.append(f"| `{name}` | {aw:.2f} / {ac:.2f} | {ew:.2f} / {ec:.2f} | {aw / ew:.1f}x | {ac / ec:.1f}x | "
                            f"{worst:.1e} |")
            print(rows[-1], flush=True)
    header = (f"espgrid apbs --backend {a.backend} against apbs, medians of {a.repeats} runs after a warm-up, "
              f"{time.strftime('%Y-%m-%d')}, {os.uname().nodename}, {os.cpu_count()} CPUs:\n\n")
    text = header + "\n".join(rows) + "\n"
    if a.out:
        with open(a.out, "a") as f:
            f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
