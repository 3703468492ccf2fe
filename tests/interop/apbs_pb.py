"""Run APBS 3.4.1 (`mg-manual`) and `espgrid map --model pb` on the same grid and parameters, and
compare the maps where the issue's targets are stated. Shared by tests/interop/test_apbs_pb.py (CI)
and benchmarks/pb_benchmarks.py (the full tables).

APBS's grid: `dime` points over `glen` Å centred on `gcent`, so node i lies at gcent − glen/2 + i·glen/(dime − 1);
espgrid's: --origin + i·--spacing. apbs_input() writes the one from the other.
"""

import os
import re
import shutil
import subprocess
import time

import numpy as np

SHELL = (1.2, 1.6)   # Å outside the van der Waals surface: where surface colourings sample
OUTSIDE = 1.4        # Å: the agreement region starts this far outside every vdW sphere

DEFAULTS = dict(pdie=2.0, sdie=78.54, ionic_strength=0.15, ion_radius=2.0, srad=1.4, srfm="smol", swin=0.3,
                sdens=10.0, temp=298.15, equation="lpbe", calcenergy="no")


def find_apbs():
    return shutil.which("apbs")


def read_dx(path):
    """(origin[3], spacing[3], counts[3], values[nx, ny, nz] float64) of a DX regular grid (z fastest)."""
    counts = origin = None
    deltas, values = [], []
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
                for data in f:
                    if data.startswith("attribute") or data.startswith("object"):
                        break
                    values.extend(float(x) for x in data.split())
                break
    return (np.array(origin), np.array([deltas[a][a] for a in range(3)]), counts,
            np.array(values).reshape(counts))


def read_pqr(path):
    """Positions (N, 3) and radii (N) of a whitespace PQR."""
    rows = []
    with open(path) as f:
        for line in f:
            if line.startswith(("ATOM", "HETATM")):
                w = line.split()
                rows.append([float(x) for x in w[-5:]])
    rows = np.array(rows)
    return rows[:, :3], rows[:, 4]


def grid_for(xyz, spacing, margin, multiple=32):
    """A cubic-ish grid APBS accepts (points ≡ 1 mod `multiple`... per axis, c·2^k + 1): the atoms' box
    plus `margin` Å on every side at `spacing` Å. Returns (origin[3], dims[3])."""
    lo, hi = xyz.min(axis=0) - margin, xyz.max(axis=0) + margin
    dims = []
    for a in range(3):
        n = int(np.ceil((hi[a] - lo[a]) / spacing)) + 1
        n = multiple * int(np.ceil((n - 1) / multiple)) + 1
        dims.append(n)
    centre = (lo + hi) / 2
    origin = centre - spacing * (np.array(dims) - 1) / 2
    return origin, dims


def apbs_input(pqr, origin, dims, spacing, stem, p, etol=None):
    glen = [spacing[a] * (dims[a] - 1) for a in range(3)]
    gcent = [origin[a] + glen[a] / 2 for a in range(3)]
    ions = ""
    if p["ionic_strength"] > 0:
        ions = (f"    ion charge 1 conc {p['ionic_strength']} radius {p['ion_radius']}\n"
                f"    ion charge -1 conc {p['ionic_strength']} radius {p['ion_radius']}\n")
    extra = f"    etol {etol}\n" if etol else ""
    return f"""read
    mol pqr {os.path.abspath(pqr)}
end
elec name pb
    mg-manual
    dime {dims[0]} {dims[1]} {dims[2]}
    glen {glen[0]!r} {glen[1]!r} {glen[2]!r}
    gcent {gcent[0]!r} {gcent[1]!r} {gcent[2]!r}
    mol 1
    {p['equation']}
    bcfl mdh
{ions}    pdie {p['pdie']}
    sdie {p['sdie']}
    srfm {p['srfm']}
    chgm spl2
    sdens {p['sdens']}
    srad {p['srad']}
    swin {p['swin']}
    temp {p['temp']}
{extra}    calcenergy {p['calcenergy']}
    calcforce no
    write pot dx {stem}
end
quit
"""


def run_apbs(pqr, origin, dims, spacing, workdir, params=None, etol=None, name="apbs"):
    """Runs APBS; returns (dx path, wall seconds)."""
    p = dict(DEFAULTS, **(params or {}))
    os.makedirs(workdir, exist_ok=True)
    stem = os.path.join(workdir, name)
    inp = stem + ".in"
    with open(inp, "w") as f:
        f.write(apbs_input(pqr, origin, dims, spacing, stem, p, etol))
    t0 = time.perf_counter()
    r = subprocess.run(["apbs", inp], cwd=workdir, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    with open(stem + ".out", "w") as f:  # what apbs_energies() reads
        f.write(r.stdout)
    for candidate in (stem + ".dx", stem + "-PE0.dx"):   # Debian's MPI build names it STEM-PE0.dx
        if os.path.isfile(candidate) and r.returncode == 0:
            return candidate, seconds
    raise RuntimeError(f"apbs failed on {pqr} (exit {r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-2000:]}")


def apbs_energies(dx_path):
    """APBS's energies of the run that wrote `dx_path`, in kT: {"total": ...} and, with calcenergy
    comps or npbe with ions, "qf", "qm", "diel" (Vpmg_energy's terms, from io.mc, 13 digits)."""
    workdir = os.path.dirname(dx_path)
    stem = re.sub(r"(-PE0)?\.dx$", "", dx_path)
    out = open(stem + ".out").read()
    m = re.search(r"Total electrostatic energy = (\S+) kJ/mol", out)
    temp = float(re.search(r"temp\s+(\S+)", open(stem + ".in").read()).group(1))
    kj_per_kt = 1.3806581e-23 * temp * 1e-3 * 6.0221367e23   # APBS's own constants (vunit.h)
    energies = {"total": float(m.group(1)) / kj_per_kt} if m else {}
    mc = os.path.join(workdir, "io.mc")
    if os.path.isfile(mc):
        for term in ("qf", "qm", "diel"):
            found = re.findall(rf"Vpmg_energy:\s+{term}Energy = (\S+) kT", open(mc).read())
            if found:
                energies[term] = float(found[-1])
    return energies


def espgrid_options(params=None):
    p = dict(DEFAULTS, **(params or {}))
    opts = ["--model", "pb", "--dielectric", repr(p["pdie"]), "--solvent-dielectric", repr(p["sdie"]),
            "--ionic-strength", repr(p["ionic_strength"]), "--ion-radius", repr(p["ion_radius"]),
            "--probe-radius", repr(p["srad"]), "--surface", p["srfm"], "--surface-density", repr(p["sdens"]),
            "--temperature", repr(p["temp"])]
    if p["srfm"] == "spl2":
        opts += ["--surface-window", repr(p["swin"])]
    if p["equation"] != "lpbe":
        opts += ["--pb-equation", p["equation"]]
    return opts


def run_espgrid(espgrid, pqr, origin, dims, spacing, out, params=None, extra=()):
    """Runs `espgrid map --model pb`; returns (dx path, wall seconds, stdout)."""
    cmd = [espgrid, "map", pqr, "-o", out, "--origin", ",".join(repr(float(v)) for v in origin),
           "--dims", ",".join(str(int(c)) for c in dims), "--spacing", ",".join(repr(float(v)) for v in spacing)]
    cmd += espgrid_options(params) + list(extra)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return out, seconds, r.stdout


def iterations_of(stdout):
    m = re.search(r"(\d+) iterations, relative residual (\S+)", stdout)
    return (int(m.group(1)), float(m.group(2))) if m else (None, None)


def depth_outside(origin, spacing, counts, xyz, radii, reach):
    """Distance (Å) of every node (flattened, z fastest) outside the nearest vdW surface; inf beyond `reach`."""
    from scipy import spatial
    i, j, k = np.meshgrid(*(np.arange(n) for n in counts), indexing="ij")
    nodes = np.stack([origin[a] + spacing[a] * g.ravel() for a, g in enumerate((i, j, k))], axis=1)
    tree = spatial.cKDTree(xyz)
    depth = np.full(len(nodes), np.inf)
    for n, nb in enumerate(tree.query_ball_point(nodes, reach + float(radii.max()))):
        if nb:
            depth[n] = (np.linalg.norm(xyz[nb] - nodes[n], axis=1) - radii[nb]).min()
    interior = ((i > 0) & (j > 0) & (k > 0) & (i < counts[0] - 1) & (j < counts[1] - 1) & (k < counts[2] - 1)).ravel()
    return depth, interior


def regions(origin, spacing, counts, xyz, radii):
    """Boolean masks (flattened): `outside` = ≥ 1.4 Å outside every vdW sphere, boundary planes excluded;
    `shell` = 1.2–1.6 Å outside the vdW surface."""
    depth, interior = depth_outside(origin, spacing, counts, xyz, radii, SHELL[1] + 1.0)
    return (depth >= OUTSIDE) & interior, (depth >= SHELL[0]) & (depth <= SHELL[1]) & interior


def compare(ours, reference, outside, shell):
    """Relative RMS over `outside`, sign agreement over `shell`, max |difference| over `outside`."""
    a, b = ours.ravel(), reference.ravel()
    rel = float(np.sqrt(np.sum((a[outside] - b[outside]) ** 2) / np.sum(b[outside] ** 2)))
    sign = float(np.mean(np.sign(a[shell]) == np.sign(b[shell])))
    return {"relative_rms": rel, "sign_agreement": sign, "max_abs_diff": float(np.max(np.abs(a[outside] - b[outside]))),
            "outside_points": int(outside.sum()), "shell_points": int(shell.sum())}
