#!/usr/bin/python3
"""How close espgrid's pair models come to a Poisson-Boltzmann map, where people look: on the
molecular surface.

For each structure the script runs APBS (Debian's apbs 3.4.1: linearized PB, protein dielectric
2, water 78.54, 0.15 M of +1/-1 ions of radius 2 A, smoothed molecular surface, 298.15 K) on a
cubic fine grid, then espgrid on exactly the same grid nodes for each model, and compares them
at the nodes that lie 1.2 to 1.6 A outside the van der Waals surface (the shell a surface
colouring samples): Pearson and Spearman correlation and the fraction of nodes where the signs
agree. Times of APBS and of espgrid (CPU here; GPU with --espgrid-args "--backend cuda") are
reported beside them.

    benchmarks/pb_agreement.py [--espgrid build/espgrid] [--structures data/fasciculin2.pqr ...]
                               [--out benchmarks/results/pb-agreement] [--keep DIR]

Writes OUT/pb-agreement.csv, OUT/pb-agreement.json and OUT/pb-agreement.md (the README table).
Needs /usr/bin/python3 with numpy and scipy, and apbs on the PATH.
"""

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
from scipy import spatial, stats

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# The bundled proteins and nucleic acids (data/README.md).
STRUCTURES = ["data/fasciculin2.pqr", "data/boxb_rna_pdb2pqr3.pqr", "data/npep_boxb_complex.pqr",
              "data/actin_dimer.pqr", "data/achbp.pqr"]

# name -> espgrid options. Sign and rank agreement do not depend on a model's overall scale, so
# the dielectric only sets the values' customary scale (and, for Debye, the screening length).
MODELS = [
    ("coulomb", ["--model", "coulomb", "--dielectric", "1"]),
    ("distance", ["--model", "distance", "--dielectric", "4", "--units", "kcal/mol/e"]),
    ("debye", ["--model", "debye", "--dielectric", "78.54", "--ionic-strength", "0.15"]),
]

SHELL = (1.2, 1.6)  # Å outside the van der Waals surface


def read_dx(path):
    """(origin[3], spacing[3], counts[3], values[nx, ny, nz]) of a DX regular grid (z fastest)."""
    counts = origin = None
    deltas = []
    values = []
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            w = line.split()
            if w[0] == "object" and "gridpositions" in w:
                counts = [int(x) for x in w[-3:]]
            elif w[0] == "origin":
                origin = [float(x) for x in w[1:4]]
            elif w[0] == "delta":
                deltas.append([float(x) for x in w[1:4]])
            elif w[0] == "object" and "array" in w:
                n = int(w[w.index("items") + 1])
                for data in f:
                    if data.startswith("attribute") or data.startswith("object"):
                        break
                    values.extend(float(x) for x in data.split())
                if len(values) != n:
                    sys.exit(f"pb_agreement: {path}: {len(values)} values for {n} items")
                break
    spacing = [deltas[a][a] for a in range(3)]
    return np.array(origin), np.array(spacing), counts, np.array(values).reshape(counts)


def read_atoms(espgrid, path):
    """Positions (Å) and radii (Å) as espgrid reads them."""
    out = subprocess.run([espgrid, "atoms", path], check=True, capture_output=True, text=True).stdout
    rows = np.array([[float(v) for v in l.split()[:5]] for l in out.splitlines() if l and not l.startswith("#")])
    return rows[:, 0:3], rows[:, 4]


def apbs_grid(xyz):
    """Fine and coarse cubic boxes (Å) and the points per side APBS solves on: 20 Å of margin
    around the atoms, about 0.6 Å spacing, at most 193 points (a 32k+1 size APBS accepts)."""
    extent = float(np.max(xyz.max(axis=0) - xyz.min(axis=0)))
    fine = extent + 20.0
    dime = min(193, max(97, 32 * math.ceil((fine / 0.6) / 32) + 1))
    return fine, 1.7 * fine + 10.0, dime, xyz.mean(axis=0)


def run_apbs(pqr, workdir):
    xyz, _ = read_atoms(ARGS.espgrid, pqr)
    fine, coarse, dime, _ = apbs_grid(xyz)
    stem = os.path.join(workdir, "apbs-pot")
    inp = os.path.join(workdir, "apbs.in")
    with open(inp, "w") as f:
        f.write(f"""read
    mol pqr {os.path.abspath(pqr)}
end
elec name pb
    mg-auto
    dime {dime} {dime} {dime}
    cglen {coarse:.3f} {coarse:.3f} {coarse:.3f}
    fglen {fine:.3f} {fine:.3f} {fine:.3f}
    cgcent mol 1
    fgcent mol 1
    mol 1
    lpbe
    bcfl sdh
    ion charge 1 conc 0.15 radius 2.0
    ion charge -1 conc 0.15 radius 2.0
    pdie 2.0
    sdie 78.54
    srfm smol
    chgm spl2
    sdens 10.0
    srad 1.4
    swin 0.3
    temp 298.15
    calcenergy no
    calcforce no
    write pot dx {stem}
end
quit
""")
    t0 = time.perf_counter()
    r = subprocess.run(["apbs", inp], cwd=workdir, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    # APBS names the map STEM.dx, or STEM-PE0.dx when built for parallel runs (Debian's is).
    written = [os.path.join(workdir, n) for n in sorted(os.listdir(workdir))
               if n.startswith(os.path.basename(stem)) and n.endswith(".dx")]
    if r.returncode != 0 or not written:
        sys.exit(f"pb_agreement: apbs failed on {pqr}:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    return written[0], seconds, dime


def shell_nodes(origin, spacing, counts, xyz, radii):
    """Flat indices (z fastest, as DX stores them) of the nodes 1.2-1.6 Å outside the vdW surface."""
    i, j, k = np.meshgrid(*(np.arange(n) for n in counts), indexing="ij")
    nodes = np.stack([origin[a] + spacing[a] * g.ravel() for a, g in enumerate((i, j, k))], axis=1)
    tree = spatial.cKDTree(xyz)
    reach = SHELL[1] + float(radii.max())
    depth = np.full(len(nodes), np.inf)  # distance outside the vdW surface
    for n, neighbours in enumerate(tree.query_ball_point(nodes, reach)):
        if neighbours:
            d = np.linalg.norm(xyz[neighbours] - nodes[n], axis=1) - radii[neighbours]
            depth[n] = d.min()
    return np.nonzero((depth >= SHELL[0]) & (depth <= SHELL[1]))[0]


def run_espgrid(pqr, origin, spacing, counts, model_args, workdir):
    out = os.path.join(workdir, "espgrid.dx")
    cmd = [ARGS.espgrid, "map", pqr, "-o", out, "--origin", ",".join(repr(float(v)) for v in origin),
           "--dims", ",".join(str(c) for c in counts), "--spacing", ",".join(repr(float(v)) for v in spacing)]
    cmd += model_args + ARGS.espgrid_args
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"pb_agreement: {' '.join(cmd)} failed:\n{r.stderr}")
    kernel = re.search(r"kernel (\S+ \S+), transfers", r.stdout)
    return read_dx(out)[3], seconds, kernel.group(1) if kernel else ""


def main():
    global ARGS
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--espgrid", default=os.path.join(ROOT, "build", "espgrid"))
    p.add_argument("--structures", nargs="+", default=[os.path.join(ROOT, s) for s in STRUCTURES])
    p.add_argument("--models", default=",".join(m for m, _ in MODELS), help="comma list of the models above")
    p.add_argument("--espgrid-args", default="", help="extra espgrid map options, e.g. '--backend cuda'")
    p.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "pb-agreement"))
    p.add_argument("--keep", help="keep the APBS and espgrid maps in this folder")
    ARGS = p.parse_args()
    ARGS.espgrid_args = ARGS.espgrid_args.split()
    if not shutil.which("apbs"):
        sys.exit("pb_agreement: apbs is not installed (apt-get install apbs)")
    wanted = ARGS.models.split(",")
    models = [m for m in MODELS if m[0] in wanted]
    rows = []
    for pqr in ARGS.structures:
        name = os.path.splitext(os.path.basename(pqr))[0]
        workdir = os.path.join(ARGS.keep, name) if ARGS.keep else tempfile.mkdtemp(prefix="pb-agreement-")
        os.makedirs(workdir, exist_ok=True)
        apbs_dx, apbs_s, dime = run_apbs(pqr, workdir)
        origin, spacing, counts, pb = read_dx(apbs_dx)
        xyz, radii = read_atoms(ARGS.espgrid, pqr)
        shell = shell_nodes(origin, spacing, counts, xyz, radii)
        pb_shell = pb.ravel()[shell]
        print(f"{name}: {len(xyz)} atoms, APBS {dime}^3 at {spacing[0]:.3f} A in {apbs_s:.1f} s, "
              f"{len(shell)} shell nodes", flush=True)
        for model, args in models:
            values, seconds, kernel = run_espgrid(pqr, origin, spacing, counts, args, workdir)
            v = values.ravel()[shell]
            row = {
                "structure": name, "atoms": int(len(xyz)), "model": model, "options": " ".join(args),
                "grid": f"{counts[0]}x{counts[1]}x{counts[2]}", "spacing_A": float(spacing[0]),
                "shell_nodes": int(len(shell)),
                "pearson": float(stats.pearsonr(v, pb_shell)[0]),
                "spearman": float(stats.spearmanr(v, pb_shell)[0]),
                "sign_agreement": float(np.mean(np.sign(v) == np.sign(pb_shell))),
                "apbs_seconds": apbs_s, "espgrid_seconds": seconds, "espgrid_kernel": kernel,
            }
            rows.append(row)
            print(f"  {model:10s} pearson {row['pearson']:.3f} spearman {row['spearman']:.3f} "
                  f"sign {row['sign_agreement']:.3f}  espgrid {seconds:.2f} s (kernel {kernel})", flush=True)
        if not ARGS.keep:
            shutil.rmtree(workdir)
    os.makedirs(ARGS.out, exist_ok=True)
    base = os.path.join(ARGS.out, "pb-agreement")
    keys = list(rows[0].keys())
    with open(base + ".csv", "w") as f:
        f.write(",".join(keys) + "\n")
        for r in rows:
            f.write(",".join(f'"{r[k]}"' if isinstance(r[k], str) else f"{r[k]:.6g}" for k in keys) + "\n")
    meta = {"date": time.strftime("%Y-%m-%d"), "apbs": "3.4.1 lpbe, pdie 2, sdie 78.54, 0.15 M +1/-1 ions r 2 A, "
            "srfm smol, srad 1.4, chgm spl2, 298.15 K", "shell_A": SHELL,
            "espgrid": ARGS.espgrid, "espgrid_args": ARGS.espgrid_args, "host": os.uname().nodename}
    with open(base + ".json", "w") as f:
        json.dump({"metadata": meta, "rows": rows}, f, indent=1)
    with open(base + ".md", "w") as f:
        f.write("| structure | atoms | model | Pearson | Spearman | sign agreement | espgrid s | APBS s |\n")
        f.write("| --- | --- | --- | --- | --- | --- | --- | --- |\n")
        for r in rows:
            f.write(f"| {r['structure']} | {r['atoms']:,} | {r['model']} | {r['pearson']:.3f} | {r['spearman']:.3f} | "
                    f"{r['sign_agreement']:.3f} | {r['espgrid_seconds']:.2f} | {r['apbs_seconds']:.1f} |\n")
    print(f"wrote {base}.csv, .json, .md")


if __name__ == "__main__":
    main()
