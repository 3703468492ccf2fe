#!/usr/bin/python3
"""Makes the APBS 3.4.1 reference maps tests/test_pb.cpp compares espgrid's PB solver with (on a
machine with Debian's apbs; the GPU host has none, so the maps travel in the repository).

    tests/data/pb/make_references.py        # writes tests/data/pb/*.dx

Each map: APBS `mg-manual`, lpbe, bcfl mdh, chgm spl2, pdie 2, sdie 78.54, srad 1.4, sdens 10,
298.15 K, etol 1e-10 (so APBS's own solve is converged far below the comparison's tolerance), on a
small anisotropic grid (spacing differs per axis; dims APBS's multigrid accepts).
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
]


def main():
    if not apbs_pb.find_apbs():
        sys.exit("make_references: apbs is not installed (apt-get install apbs)")
    for out, structure, params, dims, spacing in REFERENCES:
        pqr = os.path.join(ROOT, structure)
        xyz, _ = apbs_pb.read_pqr(pqr)
        centre = (xyz.min(axis=0) + xyz.max(axis=0)) / 2
        origin = np.round(centre - np.array(spacing) * (np.array(dims) - 1) / 2, 3)
        work = tempfile.mkdtemp(prefix="pb-reference-")
        dx, seconds = apbs_pb.run_apbs(pqr, origin, dims, spacing, work, params, etol=1e-10)
        shutil.copy(dx, os.path.join(HERE, out))
        shutil.rmtree(work)
        print(f"{out}: {structure}, {dims} at {spacing} A, origin {list(origin)}, {params}: APBS {seconds:.1f} s")


if __name__ == "__main__":
    main()
