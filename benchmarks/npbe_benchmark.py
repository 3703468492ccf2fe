#!/usr/bin/python3
"""npbe against lpbe: the same `espgrid map --model pb` run with --pb-equation lpbe and npbe,
alternated within one session (so both see the same load on a shared machine), repeated, medians.

    benchmarks/npbe_benchmark.py build/espgrid [--repeats 5] [--backend cpu] [--out results/x.md]
    benchmarks/npbe_benchmark.py build/espgrid --agreement [--cases 0,1] [--out results/y.md]

Reports per structure: wall and CPU seconds of the whole process, the PB stage (solve_pb), the
solver (the PB stage less the phases both equations share: surface, boundary, assembly,
combination), Newton steps and linear iterations, and npbe / lpbe ratios (the issue's target:
npbe ≤ 3× lpbe). One warm-up pair first (file cache, MPI's first start).
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
    ("AChBP (-50 e)", "data/achbp.pqr", 1.0, 10, 0.15),
]
SHARED_PHASES = ("boundary", "surface", "assemble", "combine")  # the same work for lpbe and npbe


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
            "pb": timing["kernel_seconds"],
            "solver": timing["kernel_seconds"] - sum(phases.get(p, 0) for p in SHARED_PHASES),
            "steps": steps, "iterations": iterations}


def agreement(args, cases):
    """npbe and lpbe maps against APBS 3.4.1's on APBS-valid grids around each structure (1 Å-ish,
    10 Å margin): relative RMS ≥ 1.4 Å outside, and npbe − lpbe against APBS's npbe − lpbe."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "interop"))
    import apbs_pb  # noqa: E402
    import numpy as np  # noqa: E402
    lines = ["| structure | grid | I (M) | npbe rel. RMS vs APBS | npbe − lpbe (APBS), rel. to map | ours vs APBS's "
             "npbe − lpbe | Newton steps (linear its) | APBS npbe s | espgrid npbe s |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    with tempfile.TemporaryDirectory() as work:
        for name, structure, spacing, padding, salt in cases:
            pqr = os.path.join(ROOT, structure)
            xyz, radii = apbs_pb.read_pqr(pqr)
            origin, dims = apbs_pb.grid_for(xyz, spacing, padding)
            h = [spacing] * 3
            maps, seconds, out = {}, {}, ""
            for eq in ("lpbe", "npbe"):
                params = {"ionic_strength": salt, "equation": eq}
                apbs_dx, seconds[eq] = apbs_pb.run_apbs(pqr, origin, dims, h, os.path.join(work, eq), params)
                ours, seconds["espgrid " + eq], text = apbs_pb.run_espgrid(
                    args.espgrid, pqr, origin, dims, h, os.path.join(work, eq, "es.dx"), params,
                    extra=["--backend", args.backend])
                out = text if eq == "npbe" else out
                o, hh, counts, ref = apbs_pb.read_dx(apbs_dx)
                maps[eq] = (apbs_pb.read_dx(ours)[3].ravel(), ref.ravel())
            outside = apbs_pb.regions(o, hh, counts, xyz, radii)[0].ravel()
            (ol, rl), (on, rn) = maps["lpbe"], maps["npbe"]
            rel = float(np.sqrt(np.sum((on - rn)[outside] ** 2) / np.sum(rn[outside] ** 2)))
            change = (rn - rl)[outside]
            size = float(np.sqrt(np.sum(change ** 2) / np.sum(rl[outside] ** 2)))
            change_rel = float(np.sqrt(np.sum(((on - ol)[outside] - change) ** 2) / np.sum(change ** 2)))
            method = [line for line in out.splitlines() if line.startswith("method")][0]
            steps = method.split("inexact Newton, ")[1].split()[0]
            its = method.split(" iterations, relative residual")[0].split()[-1]
            lines.append(f"| {name} | {'×'.join(map(str, dims))} at {spacing} Å | {salt} | {rel:.1e} | {size:.1e} | "
                         f"{change_rel:.1e} | {steps} ({its}) | {seconds['npbe']:.1f} | {seconds['espgrid npbe']:.1f} |")
            print(lines[-1], flush=True)
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("espgrid")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--out")
    ap.add_argument("--cases", help="comma-separated indices into CASES")
    ap.add_argument("--agreement", action="store_true", help="the maps against APBS 3.4.1 instead of the timings")
    args = ap.parse_args()
    cases = CASES if not args.cases else [CASES[int(i)] for i in args.cases.split(",")]
    if args.agreement:
        lines = agreement(args, cases)
        text = (f"npbe against APBS 3.4.1 (mg-manual, the same grid and parameters; {time.strftime('%Y-%m-%d')})\n\n"
                + "\n".join(lines) + "\n")
        print(text)
        if args.out:
            with open(args.out, "w") as f:
                f.write(text)
        return
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
