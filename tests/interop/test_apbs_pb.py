#!/usr/bin/python3
"""`espgrid map --model pb` against APBS itself (Debian's apbs 3.4.1, `mg-manual`) on the same grid
and parameters: every bundled surface definition, with and without salt, an anisotropic grid.

Targets: relative RMS ≤ 1% over the nodes ≥ 1.4 Å outside every van der Waals sphere
(boundary planes excluded) and sign agreement ≥ 0.99 on the 1.2–1.6 Å shell. espgrid's default
discretization is APBS's own, so the maps must in fact agree to the two solvers' tolerance: both
stop at relative residual 1e-6, which measured 3e-6 to 1e-5 apart (benchmarks/NOTES.md); 1e-4 is
asserted, ten times that, and still a hundred times inside the issue's 1%.

The nonlinear equation (npbe) on a strongly charged structure at high salt, where it
moves the map by ~2%: the npbe map to the same 1e-4, and what the nonlinearity does (npbe − lpbe)
to 1e-2 of APBS's own npbe − lpbe (measured 5e-5 at 65³: both sides' solver tolerances, divided by a
difference 50× smaller than the map).

Skips (77) without apbs, scipy, or a PB solver in this espgrid (hypre or a GPU).
"""

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

try:
    import apbs_pb  # noqa: E402  (numpy)
    import numpy as np
    import scipy  # noqa: F401
except ImportError as e:
    common.skip(f"{e}; apt-get install python3-numpy python3-scipy")

SOLVER_TOLERANCE_AGREEMENT = 1e-4
NONLINEARITY_AGREEMENT = 1e-2   # relative RMS of (npbe − lpbe) against APBS's (npbe − lpbe)
NONLINEARITY_AT_LEAST = 3e-3    # APBS's own npbe − lpbe, relative to its map: the case has teeth
ISSUE_RELATIVE_RMS = 0.01
ISSUE_SIGN = 0.99

# (name, structure, APBS parameters, dims (APBS-valid: c·2^k + 1), spacing Å)
CASES = [
    ("fasciculin2 smol 0.15 M", "data/fasciculin2.pqr", {}, [65, 65, 65], [0.95, 1.0, 1.05]),
    ("boxB RNA mol no salt", "data/boxb_rna_pdb2pqr3.pqr", {"srfm": "mol", "ionic_strength": 0.0},
     [49, 65, 49], [1.1, 1.0, 1.2]),
    ("fasciculin2 spl2 0.5 M", "data/fasciculin2.pqr", {"srfm": "spl2", "ionic_strength": 0.5}, [49, 49, 49],
     [1.4, 1.4, 1.4]),
]

# The nonlinear equation: (name, structure, APBS parameters, dims, spacing); each also runs lpbe.
NPBE_CASES = [
    ("boxB RNA smol 0.5 M", "data/boxb_rna_pdb2pqr3.pqr", {"ionic_strength": 0.5}, [49, 49, 49], [1.2, 1.25, 1.3]),
]


def compare_case(args, wd, name, structure, params, dims, spacing):
    """Runs APBS and espgrid on one case; returns (the comparison, both maps, the summary line's pieces)."""
    pqr = os.path.join(args.source, structure)
    xyz, radii = apbs_pb.read_pqr(pqr)
    centre = (xyz.min(axis=0) + xyz.max(axis=0)) / 2
    origin = [round(centre[a] - spacing[a] * (dims[a] - 1) / 2, 3) for a in range(3)]
    work = os.path.join(wd, name.replace(" ", "_"))
    apbs_dx, apbs_s = apbs_pb.run_apbs(pqr, origin, dims, spacing, work, params)
    try:
        ours, ours_s, out = apbs_pb.run_espgrid(args.espgrid, pqr, origin, dims, spacing,
                                                os.path.join(work, "espgrid.dx"), params)
    except RuntimeError as e:
        if "has no solver here" in str(e):
            common.skip("this espgrid has no PB solver here (no hypre, no GPU)")
        raise
    o, h, counts, reference = apbs_pb.read_dx(apbs_dx)
    values = apbs_pb.read_dx(ours)[3]
    outside, shell = apbs_pb.regions(o, h, counts, xyz, radii)
    c = apbs_pb.compare(values, reference, outside, shell)
    iterations, residual = apbs_pb.iterations_of(out)
    line = (f"{name}: {counts} at {spacing} A, relative RMS {c['relative_rms']:.2e} over "
            f"{c['outside_points']} nodes, sign agreement {c['sign_agreement']:.4f} on {c['shell_points']} "
            f"shell nodes; APBS {apbs_s:.1f} s, espgrid {ours_s:.1f} s ({iterations} iterations, "
            f"residual {residual})")
    ok = (c["relative_rms"] <= SOLVER_TOLERANCE_AGREEMENT and c["relative_rms"] <= ISSUE_RELATIVE_RMS
          and c["sign_agreement"] >= ISSUE_SIGN)
    return ok, line, values, reference, outside, out


def nonlinear_case(args, wd, name, structure, params, dims, spacing):
    """npbe against APBS, and npbe − lpbe against APBS's npbe − lpbe; returns the failures."""
    failures = 0
    maps = {}
    for equation in ("lpbe", "npbe"):
        ok, line, ours, reference, outside, out = compare_case(
            args, wd, f"{name} {equation}", structure, dict(params, equation=equation), dims, spacing)
        if equation == "npbe":
            steps = re.search(r"inexact Newton, (\d+) steps?", out)
            line += f", {steps.group(1) if steps else '?'} Newton steps"
            ok = ok and steps is not None
        print(("ok   " if ok else "FAIL ") + line, flush=True)
        failures += not ok
        maps[equation] = (ours.ravel(), reference.ravel())
    (ours_l, ref_l), (ours_n, ref_n) = maps["lpbe"], maps["npbe"]
    change_ref, change_ours = (ref_n - ref_l)[outside.ravel()], (ours_n - ours_l)[outside.ravel()]
    size = float(np.sqrt(np.sum(change_ref ** 2) / np.sum(ref_l[outside.ravel()] ** 2)))
    rel = float(np.sqrt(np.sum((change_ours - change_ref) ** 2) / np.sum(change_ref ** 2)))
    ok = rel <= NONLINEARITY_AGREEMENT and size >= NONLINEARITY_AT_LEAST
    print(("ok   " if ok else "FAIL ") + f"{name}: npbe - lpbe is {size:.2e} of the map (APBS); espgrid's differs "
          f"from APBS's by {rel:.2e} relative RMS", flush=True)
    return failures + (not ok)


def main():
    args = common.parse_args(__doc__)
    if not apbs_pb.find_apbs():
        common.skip("apbs not installed (apt-get install apbs)")
    kernels = subprocess.run([args.espgrid, "map", "--help"], capture_output=True, text=True).stdout
    if "pb" not in kernels:
        common.fail("this espgrid has no --model pb")
    version = subprocess.run(["apbs", "--version"], capture_output=True, text=True)
    print("client:", (version.stdout + version.stderr).strip().splitlines()[-1:] or ["APBS"])
    failures = 0
    with common.Workdir(args.keep) as wd:
        for name, structure, params, dims, spacing in CASES:
            ok, line = compare_case(args, wd, name, structure, params, dims, spacing)[:2]
            print(("ok   " if ok else "FAIL ") + line, flush=True)
            failures += not ok
        for case in NPBE_CASES:
            failures += nonlinear_case(args, wd, *case)
    if failures:
        common.fail(f"{failures} case(s) disagree with APBS")
    print("PASS")


if __name__ == "__main__":
    main()
