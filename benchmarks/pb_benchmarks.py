#!/usr/bin/python3
"""Poisson-Boltzmann maps: espgrid against APBS 3.4.1 (issue 23). Two studies, results as CSV,
JSON and a Markdown table under --out:

  agreement    every bundled structure: APBS `mg-manual` and `espgrid map --model pb` (defaults:
               APBS's discretization) on the same grid and parameters; relative RMS over the nodes
               >= 1.4 A outside every vdW sphere, sign agreement on the 1.2-1.6 A shell, wall and CPU
               seconds of both (same machine, same cores; the load is recorded), solver iterations.
  convergence  one structure at h, h/2, h/4: APBS and espgrid (--surface-sampling) against
               converged references (Richardson extrapolations of either series): which map is
               closer to the converged one at the same spacing.

    benchmarks/pb_benchmarks.py agreement   [--espgrid build/espgrid] [--spacing 1.0] [--out DIR]
    benchmarks/pb_benchmarks.py convergence [--espgrid build/espgrid] [--structure data/fasciculin2.pqr] [--out DIR]

Needs /usr/bin/python3 with numpy and scipy, and apbs on the PATH.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "interop"))
import apbs_pb as A  # noqa: E402

STRUCTURES = ["data/fasciculin2.pqr", "data/boxb_rna_pdb2pqr3.pqr", "data/npep_boxb_complex.pqr",
              "data/acetazolamide.xyz", "data/actin_dimer.pqr", "data/achbp.pqr"]


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(fn):
    """(result, wall s, CPU s of the children it ran)."""
    c0, t0 = children_cpu(), time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0, children_cpu() - c0


def as_pqr(espgrid, path, workdir):
    """APBS reads PQR: other formats through `espgrid atoms` (x y z charge radius)."""
    if path.endswith(".pqr"):
        return path
    out = subprocess.run([espgrid, "atoms", path], check=True, capture_output=True, text=True).stdout
    pqr = os.path.join(workdir, os.path.splitext(os.path.basename(path))[0] + ".pqr")
    with open(pqr, "w") as f:
        n = 0
        for line in out.splitlines():
            if not line or line.startswith("#"):
                continue
            x, y, z, q, r = (float(v) for v in line.split()[:5])
            n += 1
            f.write(f"ATOM  {n:5d}  X   MOL A   1    {x:8.3f}{y:8.3f}{z:8.3f} {q:7.4f} {r:6.4f}\n")
    return pqr


def load():
    return os.getloadavg()[0]


def agreement(args):
    rows = []
    for structure in args.structures:
        name = os.path.splitext(os.path.basename(structure))[0]
        work = tempfile.mkdtemp(prefix=f"pb-agree-{name}-")
        pqr = as_pqr(args.espgrid, os.path.join(ROOT, structure), work)
        xyz, radii = A.read_pqr(pqr)
        origin, dims = A.grid_for(xyz, args.spacing, args.margin)
        spacing = [args.spacing] * 3
        load_before = load()
        (apbs_dx, _), apbs_wall, apbs_cpu = timed(lambda: A.run_apbs(pqr, origin, dims, spacing, work))
        (ours, _, out), ours_wall, ours_cpu = timed(lambda: A.run_espgrid(
            args.espgrid, pqr, origin, dims, spacing, os.path.join(work, "espgrid.dx"), extra=args.espgrid_args))
        o, h, counts, reference = A.read_dx(apbs_dx)
        values = A.read_dx(ours)[3]
        outside, shell = A.regions(o, h, counts, xyz, radii)
        c = A.compare(values, reference, outside, shell)
        iterations, residual = A.iterations_of(out)
        phases = next((l.split(None, 1)[1] for l in out.splitlines() if l.startswith("phases")), "")
        row = {"structure": name, "atoms": int(len(xyz)), "grid": "x".join(map(str, counts)), "spacing_A": args.spacing,
               "relative_rms": c["relative_rms"], "sign_agreement": c["sign_agreement"],
               "max_abs_diff_kT_e": c["max_abs_diff"], "outside_nodes": c["outside_points"],
               "shell_nodes": c["shell_points"], "apbs_wall_s": apbs_wall, "apbs_cpu_s": apbs_cpu,
               "espgrid_wall_s": ours_wall, "espgrid_cpu_s": ours_cpu, "iterations": iterations,
               "residual": residual, "espgrid_phases": phases, "load_1min": load_before}
        rows.append(row)
        print(f"{name}: {len(xyz)} atoms, {row['grid']} at {args.spacing} A: relative RMS {c['relative_rms']:.2e}, "
              f"sign {c['sign_agreement']:.4f}; APBS {apbs_wall:.1f} s wall / {apbs_cpu:.1f} s CPU, espgrid "
              f"{ours_wall:.1f} s / {ours_cpu:.1f} s ({iterations} iterations); load {load_before:.1f}\n  {phases}",
              flush=True)
        subprocess.run(["rm", "-rf", work])
    write(args.out, "pb-agreement", rows, {"espgrid_args": args.espgrid_args, "spacing": args.spacing,
                                           "margin": args.margin})
    with open(os.path.join(args.out, "pb-agreement.md"), "w") as f:
        f.write("| structure | atoms | grid | relative RMS | sign agreement | APBS wall / CPU s | espgrid wall / CPU s "
                "| wall speed-up | iterations |\n|---|---|---|---|---|---|---|---|---|\n")
        for r in rows:
            f.write(f"| {r['structure']} | {r['atoms']:,} | {r['grid']} | {r['relative_rms']:.1e} | "
                    f"{r['sign_agreement']:.4f} | {r['apbs_wall_s']:.1f} / {r['apbs_cpu_s']:.1f} | "
                    f"{r['espgrid_wall_s']:.1f} / {r['espgrid_cpu_s']:.1f} | "
                    f"{r['apbs_wall_s'] / r['espgrid_wall_s']:.1f}x | {r['iterations']} |\n")


def convergence(args):
    pqr = os.path.join(ROOT, args.structure)
    xyz, radii = A.read_pqr(pqr)
    work = args.keep or tempfile.mkdtemp(prefix="pb-conv-")
    os.makedirs(work, exist_ok=True)
    coarse = args.spacing
    origin, dims = A.grid_for(xyz, coarse, args.margin)
    levels = [1, 2, 4]
    maps = {"apbs": {}, "espgrid": {}}
    times = {"apbs": {}, "espgrid": {}}
    for f in levels:
        h = coarse / f
        n = [(d - 1) * f + 1 for d in dims]
        sp = [h] * 3
        (dx, _), wall, _ = timed(lambda: A.run_apbs(pqr, origin, n, sp, work, etol=1e-9, name=f"apbs{f}"))
        maps["apbs"][f], times["apbs"][f] = A.read_dx(dx)[3][::f, ::f, ::f], wall
        (ours, _, _), wall, _ = timed(lambda: A.run_espgrid(
            args.espgrid, pqr, origin, n, sp, os.path.join(work, f"espgrid{f}.dx"),
            extra=["--surface-sampling", str(args.sampling), "--pb-tolerance", "1e-9"] + args.espgrid_args))
        maps["espgrid"][f], times["espgrid"][f] = A.read_dx(ours)[3][::f, ::f, ::f], wall
        print(f"h = {h:.3f} A ({'x'.join(map(str, n))}): APBS {times['apbs'][f]:.1f} s, espgrid {wall:.1f} s", flush=True)
    outside, shell = A.regions(origin, [coarse] * 3, dims, xyz, radii)

    def rms(a, b):
        return A.compare(a, b, outside, shell)["relative_rms"]

    def order(series):  # observed order from the three levels
        d1 = series[1] - series[2]
        d2 = series[2] - series[4]
        return float(np.log2(np.sqrt(np.sum(d1.ravel()[outside] ** 2) / np.sum(d2.ravel()[outside] ** 2))))

    refs = {}
    for who in ("apbs", "espgrid"):
        p = order(maps[who])
        refs[f"{who} h/4 + Richardson (observed order {p:.2f})"] = maps[who][4] + (maps[who][4] - maps[who][2]) / (2 ** p - 1)
        refs[f"{who} h/4 + Richardson (order 1)"] = 2 * maps[who][4] - maps[who][2]
    refs["APBS at h/4"] = maps["apbs"][4]
    rows = []
    for ref_name, ref in refs.items():
        for f in levels:
            for who in ("apbs", "espgrid"):
                c = A.compare(maps[who][f], ref, outside, shell)
                rows.append({"reference": ref_name, "spacing_A": coarse / f, "map": who,
                             "relative_rms": c["relative_rms"], "sign_agreement": c["sign_agreement"]})
    spread = max(rms(a, b) for a in refs.values() for b in refs.values())
    write(args.out, "pb-convergence", rows, {"structure": args.structure, "sampling": args.sampling, "grid": dims,
                                             "origin": list(map(float, origin)), "coarse_spacing": coarse,
                                             "reference_spread": spread,
                                             "seconds": {k: {str(f): v for f, v in t.items()} for k, t in times.items()}})
    with open(os.path.join(args.out, "pb-convergence.md"), "w") as f:
        f.write(f"Relative RMS against each converged reference over the {int(outside.sum()):,} nodes of the "
                f"{coarse} A grid >= 1.4 A outside every vdW sphere ({args.structure}; espgrid with "
                f"--surface-sampling {args.sampling}; references differ from each other by at most {spread:.2%}).\n\n")
        f.write("| reference | " + " | ".join(f"APBS h={coarse / l:g} | espgrid h={coarse / l:g}" for l in levels) + " |\n")
        f.write("|---|" + "---|" * (2 * len(levels)) + "\n")
        for ref_name in refs:
            cells = []
            for l in levels:
                for who in ("apbs", "espgrid"):
                    r = next(r for r in rows if r["reference"] == ref_name and r["map"] == who and r["spacing_A"] == coarse / l)
                    cells.append(f"{r['relative_rms']:.2%}")
            f.write(f"| {ref_name} | " + " | ".join(cells) + " |\n")
    print(open(os.path.join(args.out, "pb-convergence.md")).read())


def write(out, stem, rows, meta):
    os.makedirs(out, exist_ok=True)
    meta = dict(meta, date=time.strftime("%Y-%m-%d"), host=os.uname().nodename, cores=os.cpu_count(),
                apbs="3.4.1 (Debian) mg-manual lpbe bcfl mdh chgm spl2 pdie 2 sdie 78.54 0.15 M r 2 srfm smol srad 1.4")
    with open(os.path.join(out, stem + ".json"), "w") as f:
        json.dump({"metadata": meta, "rows": rows}, f, indent=1)
    keys = list(rows[0].keys())
    with open(os.path.join(out, stem + ".csv"), "w") as f:
        f.write(",".join(keys) + "\n")
        for r in rows:
            f.write(",".join(f'"{r[k]}"' if isinstance(r[k], str) else f"{r[k]}" for k in keys) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("study", choices=["agreement", "convergence"])
    p.add_argument("--espgrid", default=os.path.join(ROOT, "build", "espgrid"))
    p.add_argument("--structures", nargs="+", default=STRUCTURES)
    p.add_argument("--structure", default="data/fasciculin2.pqr")
    p.add_argument("--spacing", type=float, default=1.0, help="grid spacing (convergence: the coarsest), A")
    p.add_argument("--margin", type=float, default=10.0, help="A around the atoms")
    p.add_argument("--sampling", type=int, default=4, help="convergence: espgrid's --surface-sampling")
    p.add_argument("--espgrid-args", default="--backend cpu", help="extra espgrid map options")
    p.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "pb-" + time.strftime("%Y-%m-%d")))
    p.add_argument("--keep", help="convergence: keep the maps in this folder")
    args = p.parse_args()
    args.espgrid_args = args.espgrid_args.split()
    if not A.find_apbs():
        sys.exit("pb_benchmarks: apbs is not installed (apt-get install apbs)")
    {"agreement": agreement, "convergence": convergence}[args.study](args)


if __name__ == "__main__":
    main()
