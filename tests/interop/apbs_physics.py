"""APBS 3.4.1 (`mg-manual`) and `espgrid map --model pb` on the same grid with any of the PB physics
options APBS's inputs use (bcfl, chgm, srfm, ion species, calcenergy, write maps), and the parsing of
APBS's energies. Shared by tests/interop/test_apbs_physics.py (CI) and benchmarks/pb_benchmarks.py.

A case is a dict of APBS keywords: pdie, sdie, srfm, chgm, bcfl, ions [(z, c, r), ...], srad, swin,
sdens, temp, calcenergy, writes [types]. espgrid gets the same through its options.
"""

import json
import os
import re
import subprocess
import time

import apbs_pb  # noqa: E402  (numpy)

DEFAULTS = dict(pdie=2.0, sdie=78.54, srfm="smol", chgm="spl2", bcfl="mdh", ions=[(1, 0.15, 2.0), (-1, 0.15, 2.0)],
                srad=1.4, swin=0.3, sdens=10.0, temp=298.15, calcenergy="total", writes=("pot",))


def apbs_input(pqr, origin, dims, spacing, stem, case, etol=1e-10):
    p = dict(DEFAULTS, **case)
    glen = [spacing[a] * (dims[a] - 1) for a in range(3)]
    gcent = [origin[a] + glen[a] / 2 for a in range(3)]
    ions = "".join(f"    ion charge {z!r} conc {c!r} radius {r!r}\n" for z, c, r in p["ions"])
    writes = "".join(f"    write {w} dx {stem}-{w}\n" for w in p["writes"])
    return f"""read
    mol pqr {os.path.abspath(pqr)}
end
elec name pb
    mg-manual
    dime {dims[0]} {dims[1]} {dims[2]}
    glen {glen[0]!r} {glen[1]!r} {glen[2]!r}
    gcent {gcent[0]!r} {gcent[1]!r} {gcent[2]!r}
    mol 1
    lpbe
    bcfl {p['bcfl']}
{ions}    pdie {p['pdie']!r}
    sdie {p['sdie']!r}
    srfm {p['srfm']}
    chgm {p['chgm']}
    sdens {p['sdens']!r}
    srad {p['srad']!r}
    swin {p['swin']!r}
    temp {p['temp']!r}
    etol {etol!r}
    calcenergy {p['calcenergy']}
    calcforce no
{writes}end
quit
"""


def parse_apbs_energies(stdout):
    """{"total": kJ/mol, "fixed", "mobile", "dielectric" (comps), "per_atom": [kJ/mol] (comps)}."""
    out = {}
    m = re.findall(r"Total electrostatic energy = (\S+) kJ/mol", stdout)
    if m:
        out["total"] = float(m[-1])
    for key, label in (("fixed", "Fixed charge energy"), ("mobile", "Mobile charge energy"),
                       ("dielectric", "Dielectric energy")):
        m = re.findall(label + r" = (\S+) kJ/mol", stdout)
        if m:
            out[key] = float(m[-1])
    atoms = re.findall(r"Atom \d+:\s+(\S+) kJ/mol", stdout)
    if atoms:
        out["per_atom"] = [float(v) for v in atoms]
    return out


def run_apbs(pqr, origin, dims, spacing, workdir, case, name="apbs", etol=1e-10):
    """Runs APBS; returns ({write type: dx path}, energies, wall seconds)."""
    os.makedirs(workdir, exist_ok=True)
    stem = os.path.join(workdir, name)
    with open(stem + ".in", "w") as f:
        f.write(apbs_input(pqr, origin, dims, spacing, stem, case, etol))
    t0 = time.perf_counter()
    r = subprocess.run(["apbs", stem + ".in"], cwd=workdir, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"apbs failed on {pqr} (exit {r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-2000:]}")
    maps = {}
    for w in dict(DEFAULTS, **case)["writes"]:
        for candidate in (f"{stem}-{w}.dx", f"{stem}-{w}-PE0.dx"):
            if os.path.isfile(candidate):
                maps[w] = candidate
    return maps, parse_apbs_energies(r.stdout), seconds


def espgrid_options(case):
    p = dict(DEFAULTS, **case)
    opts = ["--model", "pb", "--dielectric", repr(p["pdie"]), "--solvent-dielectric", repr(p["sdie"]),
            "--probe-radius", repr(p["srad"]), "--surface", p["srfm"], "--surface-density", repr(p["sdens"]),
            "--temperature", repr(p["temp"]), "--boundary", p["bcfl"], "--charge-method", p["chgm"],
            "--pb-energy", p["calcenergy"]]
    if p["ions"]:
        for z, c, r in p["ions"]:
            opts += ["--ion", f"{z!r},{c!r},{r!r}"]
    else:
        opts += ["--ionic-strength", "0"]
    if p["srfm"] in ("spl2", "spl4"):
        opts += ["--surface-window", repr(p["swin"])]
    return opts


def run_espgrid(espgrid, pqr, origin, dims, spacing, workdir, case, extra=()):
    """Runs `espgrid map --model pb --json`; returns (dx path, the JSON summary, wall seconds)."""
    out = os.path.join(workdir, "espgrid.dx")
    summary = os.path.join(workdir, "espgrid.json")
    cmd = [espgrid, "map", pqr, "-o", out, "--json", summary, "--origin", ",".join(repr(float(v)) for v in origin),
           "--dims", ",".join(str(int(c)) for c in dims), "--spacing", ",".join(repr(float(v)) for v in spacing),
           "--pb-tolerance", "1e-10", "--pb-max-iterations", "400"]
    cmd += espgrid_options(case) + list(extra)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    with open(summary) as f:
        return out, json.load(f), seconds


def grid_around(pqr, dims, spacing):
    xyz, _ = apbs_pb.read_pqr(pqr)
    centre = (xyz.min(axis=0) + xyz.max(axis=0)) / 2
    return [round(centre[a] - spacing[a] * (dims[a] - 1) / 2, 3) for a in range(3)]
