#!/usr/bin/python3
"""npbe against lpbe: the same `espgrid map --model pb` run with --pb-equation lpbe and npbe,
alternated within one session (so both see the same load on a shared machine), repeated, medians.

    benchmarks/npbe_benchmark.py build/espgrid [--repeats 5] [--backend cpu] [--out results/x.md]

Reports per structure: wall and CPU seconds of the whole process, the PB stage (solve_pb), the
solver's phases (setup + solve), Newton steps and linear iterations, and npbe / lpbe ratios (the
issue's target: npbe ≤ 3× lpbe). One warm-up pair first (file cache, MPI's first start).
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (name, structure, spacing Å, padding Å, ionic strength M)
CASES = [
    ("fasciculin-2 (+4 e)", "data/fasciculin2.pqr", 1.0, 10, 0.15),
    ("boxB RNA (-18 e), 0.15 M", "data/boxb_rna_pdb2pqr3.pqr", 0.8, 10, 0.15),
    ("boxB RNA (-18 e), 0.5 M", "data/boxb_rna_pdb2pqr3.pqr", 0.8, 10, 0.5),
    ("actin dimer (-24 e)", "data/actin_dimer.pqr", 1.0, 10, 0.15),
]


def run(espgrid, case, equation, backend, workdir):
    name, structure, spacing, padding, salt = case
    summary = os.path.join(workdir, "summary.json")
    cmd = [espgrid, "map", os.path.join(ROOT, structure), "-o", os.path.join(workdir, "map.dx"), "--model", "pb",
           "--spacing", str(spacing), "--padding", str(padding), "--ionic-strength", str(salt), "--backend", backend,
           "--pb-equation", equation, "--json", summary]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stderr}")
    timing = json.load(open(summary))["timing"]
    phases = timing["phases"]
    method = timing["method"]
    steps = 0
    if "inexact Newton, " in method:
        steps = int(method.split("inexact Newton, ")[1].split()[0])
    iterations = int(method.split(" iterations, relative residual")[0].split()[-1])
    return {"wall": wall, "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "pb": timing["kernel_seconds"], "solver": phases.get("solver setup", 0) + phases.get("solve", 0),
            "steps": steps, "iterations": iterations}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("espgrid")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--out")
    ap.add_argument("--cases", help="comma-separated indices into CASES")
    args = ap.parse_args()
    cases = CASES if not args.cases else [CASES[int(i)] for i in args.cases.split(",")]
    lines = [f"npbe vs lpbe, `espgrid map --model pb --backend {args.backend}`, {args.repeats} alternating repeats, "
             f"medians; load average {os.getloadavg()[0]:.1f} at the start ({time.strftime('%Y-%m-%d %H:%M')})", "",
             "| structure | grid | Newton steps | linear its (lpbe / npbe) | solver s (lpbe / npbe) | PB stage s "
             "(lpbe / npbe) | process wall s (lpbe / npbe) | process CPU s (lpbe / npbe) | npbe / lpbe (PB stage, wall, CPU) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    with tempfile.TemporaryDirectory() as work:
        for case in cases:
            run(args.espgrid, case, "lpbe", args.backend, work)  # warm-up
            run(args.espgrid, case, "npbe", args.backend, work)
            results = {"lpbe": [], "npbe": []}
            for _ in range(args.repeats):
                for eq in ("lpbe", "npbe"):
                    results[eq].append(run(args.espgrid, case, eq, args.backend, work))
            med = {eq: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for eq, rs in results.items()}
            grid = json.load(open(os.path.join(work, "summary.json")))["shape"]
            l, n = med["lpbe"], med["npbe"]
            lines.append(f"| {case[0]} | {'×'.join(str(x) for x in grid)} at {case[2]} Å | {n['steps']:.0f} | "
                         f"{l['iterations']:.0f} / {n['iterations']:.0f} | {l['solver']:.2f} / {n['solver']:.2f} | "
                         f"{l['pb']:.2f} / {n['pb']:.2f} | {l['wall']:.2f} / {n['wall']:.2f} | "
                         f"{l['cpu']:.2f} / {n['cpu']:.2f} | {n['pb'] / l['pb']:.2f}, {n['wall'] / l['wall']:.2f}, "
                         f"{n['cpu'] / l['cpu']:.2f} |")
            print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
