#!/usr/bin/python3
"""Makes the APBS 3.4.1 reference maps and energies tests/test_pb.cpp and tests/test_pb_nonlinear.cpp
compare espgrid's PB solver with (on a machine with Debian's apbs; the GPU host has none, so the
references travel in the repository).

    tests/data/pb/make_references.py        # writes tests/data/pb/*.dx and apbs_energies.txt

Each run: APBS `mg-manual`, bcfl mdh, chgm spl2, pdie 2, sdie 78.54, srad 1.4, sdens 10, 298.15 K,
etol 1e-10 (so APBS's own solve is converged far below the comparison's tolerance), on a small
anisotropic grid (spacing differs per axis; dims APBS's multigrid accepts); lpbe unless npbe is
named. apbs_energies.txt: `calcenergy total`'s energy and Vpmg_energy's terms (from APBS's io.mc) in
kT, one run a line.
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


if __name__ == "__main__":
    main()
