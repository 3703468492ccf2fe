#!/usr/bin/python3
"""Makes the APBS 3.4.1 reference maps and energies tests/test_pb.cpp and tests/test_pb_nonlinear.cpp
compare espgrid's PB solver with (on a machine with Debian's apbs; the GPU host has none, so the
references travel in the repository).

    tests/data/pb/make_references.py            # every reference below
    tests/data/pb/make_references.py energies   # only energies.txt, comps_per_atom.txt, focus_fine.dx

Each map of REFERENCES (and each run of ENERGIES): APBS `mg-manual`, bcfl mdh, chgm spl2, pdie 2,
sdie 78.54, srad 1.4, sdens 10, 298.15 K, etol 1e-10 (so APBS's own solve is converged far below
the comparison's tolerance), on a small anisotropic grid (spacing differs per axis; dims APBS's
multigrid accepts); lpbe unless npbe is named. apbs_energies.txt: their `calcenergy total` energy
and Vpmg_energy's terms (from APBS's io.mc) in kT, one run a line.

energies.txt: APBS's "Total electrostatic energy" (kJ/mol) of each of ENERGY_CASES (bcfl, chgm,
srfm, ion species; comps adds its terms) on one small grid, one line each ("name total fixed
mobile dielectric", nan where APBS printed none), and of the two levels of a focusing run (FOCUS:
a coarse mg-manual level, then a fine one with bcfl focus whose box cuts through the molecule; its
line "focus coarse fine"), whose fine map is focus_fine.dx; comps_per_atom.txt: the comps case's
per-atom energies; write_KIND.dx.gz: APBS's `write KIND` maps (every kind) of WRITE_CASE on the
same grid. tests/test_pb_physics.cpp holds the same cases by name: keep the two lists in step.
"""
import os
import shutil
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(ROOT, "tests", "interop"))
import apbs_pb  # noqa: E402

# (output, structure, APBS parameters, dims, spacing)
REFERENCES = [
    ("fasciculin2_smol_I0.15.dx", "data/fasciculin2.pqr", {"srfm": "smol", "ionic_strength": 0.15},
     [33, 33, 41], [1.5, 1.6, 1.4]),
    ("boxb_rna_mol_I0.dx", "data/boxb_rna_pdb2pqr3.pqr", {"srfm": "mol", "ionic_strength": 0.0},
     [33, 41, 33], [1.7, 1.5, 1.6]),
    # The nonlinear equation where it matters: boxB RNA (charge -18) at 0.5 M moves by ~2% from lpbe.
    ("boxb_rna_smol_I0.5_npbe.dx", "data/boxb_rna_pdb2pqr3.pqr",
     {"srfm": "smol", "ionic_strength": 0.5, "equation": "npbe"}, [33, 41, 33], [1.7, 1.5, 1.6]),
]

# Energies only: (name, structure, APBS parameters, dims, spacing)
ENERGIES = [
    ("boxb_rna_smol_I0.5_lpbe", "data/boxb_rna_pdb2pqr3.pqr", {"srfm": "smol", "ionic_strength": 0.5},
     [33, 41, 33], [1.7, 1.5, 1.6]),
    ("fasciculin2_smol_I0.15_npbe", "data/fasciculin2.pqr",
     {"srfm": "smol", "ionic_strength": 0.15, "equation": "npbe"}, [33, 33, 41], [1.5, 1.6, 1.4]),
    ("fasciculin2_spl2_I0.15_npbe", "data/fasciculin2.pqr",
     {"srfm": "spl2", "ionic_strength": 0.15, "equation": "npbe"}, [33, 33, 41], [1.5, 1.6, 1.4]),
    ("boxb_rna_mol_I0_npbe", "data/boxb_rna_pdb2pqr3.pqr", {"srfm": "mol", "ionic_strength": 0.0, "equation": "npbe"},
     [33, 41, 33], [1.7, 1.5, 1.6]),
]


def main():
    if not apbs_pb.find_apbs():
        sys.exit("make_references: apbs is not installed (apt-get install apbs)")
    rows = ["# APBS 3.4.1 energies in kT (tests/data/pb/make_references.py); nan: not printed by APBS",
            "# name structure dims spacing origin equation srfm ionic_strength total qf qm diel"]
    for out, structure, params, dims, spacing in REFERENCES + ENERGIES:
        pqr = os.path.join(ROOT, structure)
        xyz, _ = apbs_pb.read_pqr(pqr)
        centre = (xyz.min(axis=0) + xyz.max(axis=0)) / 2
        origin = np.round(centre - np.array(spacing) * (np.array(dims) - 1) / 2, 3)
        work = tempfile.mkdtemp(prefix="pb-reference-")
        dx, seconds = apbs_pb.run_apbs(pqr, origin, dims, spacing, work, dict(params, calcenergy="total"), etol=1e-10)
        if out.endswith(".dx"):
            shutil.copy(dx, os.path.join(HERE, out))
        e = apbs_pb.apbs_energies(dx)
        shutil.rmtree(work)
        p = dict(apbs_pb.DEFAULTS, **params)
        numbers = " ".join(repr(e.get(k, float("nan"))) for k in ("total", "qf", "qm", "diel"))
        triple = lambda v: ",".join(repr(float(x)) for x in v)  # noqa: E731
        rows.append(f"{out.removesuffix('.dx')} {structure} {','.join(str(d) for d in dims)} {triple(spacing)} {triple(origin)} "
                    f"{p['equation']} {p['srfm']} {p['ionic_strength']!r} {numbers}")
        print(f"{out}: {structure}, {dims} at {spacing} A, origin {list(origin)}, {params}: APBS {seconds:.1f} s, {e}")
    with open(os.path.join(HERE, "apbs_energies.txt"), "w") as f:
        f.write("\n".join(rows) + "\n")


ENERGY_GRID = ("data/fasciculin2.pqr", [33, 33, 41], [1.5, 1.6, 1.4])
# (name, APBS keywords beyond apbs_physics.DEFAULTS)
ENERGY_CASES = [
    ("default", {}),
    ("comps", {"calcenergy": "comps"}),
    ("zero", {"bcfl": "zero"}),
    ("sdh", {"bcfl": "sdh"}),
    ("sdh_no_ions", {"bcfl": "sdh", "ions": []}),
    ("spl0", {"chgm": "spl0"}),
    ("spl4", {"chgm": "spl4"}),
    ("srfm_spl4", {"srfm": "spl4"}),
    ("srfm_spl2", {"srfm": "spl2"}),
    ("mol_spl0", {"srfm": "mol", "chgm": "spl0"}),
    ("ions_2_1", {"ions": [(2, 0.05, 2.0), (-1, 0.1, 1.5)]}),
    ("ions_three", {"ions": [(1, 0.1, 1.5), (-1, 0.15, 2.5), (2, 0.025, 2.0)]}),
    ("spl4_spl4_2_1", {"srfm": "spl4", "chgm": "spl4", "ions": [(2, 0.05, 2.0), (-1, 0.1, 1.5)]}),
]
WRITE_KINDS = ["pot", "charge", "kappa", "dielx", "diely", "dielz", "smol", "sspl", "vdw", "ivdw", "lap", "edens",
               "ndens", "qdens"]
WRITE_CASE = {"ions": [(2, 0.05, 2.0), (-1, 0.1, 1.5)], "writes": WRITE_KINDS}
# Focusing: (dime, glen, gcent) of the coarse and the fine level; the fine box cuts the molecule.
FOCUS = ([33, 33, 33], [80.0, 80.0, 80.0], [0.126, 1.73, 27.407]), ([33, 33, 33], [30.0, 30.0, 30.0], [5.0, 3.0, 25.0])


def focus_input(pqr, stem):
    blocks = []
    for name, (dime, glen, gcent), bcfl in (("coarse", FOCUS[0], "mdh"), ("fine", FOCUS[1], "focus")):
        blocks.append(f"""elec name {name}
    mg-manual
    dime {dime[0]} {dime[1]} {dime[2]}
    glen {glen[0]!r} {glen[1]!r} {glen[2]!r}
    gcent {gcent[0]!r} {gcent[1]!r} {gcent[2]!r}
    mol 1
    lpbe
    bcfl {bcfl}
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
    etol 1e-10
    calcenergy total
    calcforce no
    write pot dx {stem}-{name}
end
""")
    return f"read\n    mol pqr {os.path.abspath(pqr)}\nend\n" + "".join(blocks) + "quit\n"


def energies():
    import re
    import subprocess
    import apbs_physics  # noqa: E402
    structure, dims, spacing = ENERGY_GRID
    pqr = os.path.join(ROOT, structure)
    origin = apbs_physics.grid_around(pqr, dims, spacing)
    lines = [f"# APBS 3.4.1 mg-manual, {structure}, dime {dims}, spacing {spacing}, origin {origin}, etol 1e-10",
             "# name total_kJ_per_mol fixed_kJ_per_mol mobile_kJ_per_mol dielectric_kJ_per_mol"]
    for name, case in ENERGY_CASES:
        work = tempfile.mkdtemp(prefix="pb-energy-")
        _, e, seconds = apbs_physics.run_apbs(pqr, origin, dims, spacing, work, dict(case, writes=()))
        shutil.rmtree(work)
        values = [e.get(k, float("nan")) for k in ("total", "fixed", "mobile", "dielectric")]
        lines.append(name + " " + " ".join(repr(v) for v in values))
        if "per_atom" in e:
            with open(os.path.join(HERE, "comps_per_atom.txt"), "w") as f:
                f.write("".join(repr(v) + "\n" for v in e["per_atom"]))
        print(f"energy {name}: {e.get('total')} kJ/mol ({seconds:.1f} s)")
    work = tempfile.mkdtemp(prefix="pb-write-")
    maps, _, _ = apbs_physics.run_apbs(pqr, origin, dims, spacing, work, WRITE_CASE)
    import gzip
    for kind, path in maps.items():
        with open(path, "rb") as src, open(os.path.join(HERE, f"write_{kind}.dx.gz"), "wb") as raw, \
                gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as dst:
            dst.write(src.read())
    shutil.rmtree(work)
    print(f"write maps: {sorted(maps)}")
    work = tempfile.mkdtemp(prefix="pb-focus-")
    with open(os.path.join(work, "focus.in"), "w") as f:
        f.write(focus_input(pqr, os.path.join(work, "focus")))
    r = subprocess.run(["apbs", "focus.in"], cwd=work, capture_output=True, text=True, check=True)
    levels = [float(v) for v in re.findall(r"Total electrostatic energy = (\S+) kJ/mol", r.stdout)]
    for candidate in ("focus-fine.dx", "focus-fine-PE0.dx"):
        if os.path.isfile(os.path.join(work, candidate)):
            shutil.copy(os.path.join(work, candidate), os.path.join(HERE, "focus_fine.dx"))
    shutil.rmtree(work)
    lines.append("focus " + " ".join(repr(v) for v in levels))
    print(f"focus: {levels} kJ/mol")
    with open(os.path.join(HERE, "energies.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] != "energies":
        main()
    energies()
