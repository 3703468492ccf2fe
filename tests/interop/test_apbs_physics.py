#!/usr/bin/python3
"""`espgrid map --model pb` with APBS's other PB physics against APBS 3.4.1 itself
(Debian's apbs, `mg-manual`, etol 1e-10 both) on the same small grid: boundary conditions zero and
sdh, charge methods spl0 and spl4, the spl4 and mol surfaces, several ion species (a 2:1 salt),
`calcenergy comps`. Compares APBS's "Total electrostatic energy" with the JSON summary's (the
issue: within 0.1%) and the potential maps (the issue: within 1e-3 relative RMS at nodes ≥ 1.4 Å
outside the van der Waals surface).

Same discretization, so both agree far closer: the energies differ by APBS's 1986 constants
(−1.22e-5: its source term's CGS e²/k_B and its kJ/mol factor against CODATA 2018), which this
test takes out before asserting 1e-6 (measured after: 3e-8); the maps by the same constants
(1e-5 relative RMS), asserted at 5e-5. Grids are coarse (33 × 33 × 41 at 1.4–1.6 Å) to keep CI short.

Skips (77) without apbs, scipy, or a PB solver in this espgrid (hypre or a GPU).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

try:
    import apbs_pb  # noqa: E402  (numpy)
    import apbs_physics  # noqa: E402
    import scipy  # noqa: F401
except ImportError as e:
    common.skip(f"{e}; apt-get install python3-numpy python3-scipy")

APBS_CONSTANTS = (1 + 6.2696e-6) * (1 + 5.9169e-6)  # APBS's energy / espgrid's, same discretization
ENERGY_TOLERANCE = 1e-6   # after the constants; the solvers stop at 1e-10 (measured 3e-8)
ISSUE_ENERGY = 1e-3       # the issue's target, raw
MAP_TOLERANCE = 5e-5      # the constants' 6e-6 on φ plus the boundary's, with room
ISSUE_MAP = 1e-3

CASES = [
    ("sdh spl0 2:1 salt comps", {"bcfl": "sdh", "chgm": "spl0", "ions": [(2, 0.05, 2.0), (-1, 0.1, 1.5)],
                                 "calcenergy": "comps"}),
    ("zero spl4 srfm spl4", {"bcfl": "zero", "chgm": "spl4", "srfm": "spl4"}),
    ("mdh spl2 mol no ions", {"srfm": "mol", "ions": []}),
]


def main():
    args = common.parse_args(__doc__)
    if not apbs_pb.find_apbs():
        common.skip("apbs not installed (apt-get install apbs)")
    pqr = os.path.join(args.source, "data/fasciculin2.pqr")
    dims, spacing = [33, 33, 41], [1.5, 1.6, 1.4]
    origin = apbs_physics.grid_around(pqr, dims, spacing)
    xyz, radii = apbs_pb.read_pqr(pqr)
    failures = 0
    with common.Workdir(args.keep) as wd:
        for name, case in CASES:
            work = os.path.join(wd, name.replace(" ", "_").replace(":", ""))
            maps, apbs_energy, apbs_s = apbs_physics.run_apbs(pqr, origin, dims, spacing, work, case)
            try:
                dx, summary, ours_s = apbs_physics.run_espgrid(args.espgrid, pqr, origin, dims, spacing, work, case)
            except RuntimeError as e:
                if "has no solver here" in str(e):
                    common.skip("this espgrid has no PB solver here (no hypre, no GPU)")
                raise
            ours = summary["energy"]["total"]["kJ_per_mol"]
            raw = ours / apbs_energy["total"] - 1
            corrected = ours * APBS_CONSTANTS / apbs_energy["total"] - 1
            o, h, counts, reference = apbs_pb.read_dx(maps["pot"])
            outside, shell = apbs_pb.regions(o, h, counts, xyz, radii)
            c = apbs_pb.compare(apbs_pb.read_dx(dx)[3], reference, outside, shell)
            ok = (abs(corrected) <= ENERGY_TOLERANCE and abs(raw) <= ISSUE_ENERGY and c["relative_rms"] <= MAP_TOLERANCE
                  and c["relative_rms"] <= ISSUE_MAP)
            if case.get("calcenergy") == "comps":
                per_atom = summary["energy"]["per_atom_kJ_per_mol"]
                worst = max(abs(a * APBS_CONSTANTS - b) for a, b in zip(per_atom, apbs_energy["per_atom"]))
                largest = max(abs(b) for b in apbs_energy["per_atom"])
                ok = ok and len(per_atom) == len(apbs_energy["per_atom"]) and worst <= 1e-6 * largest
            print(("ok   " if ok else "FAIL ") + f"{name}: energy APBS {apbs_energy['total']:.9e}, espgrid {ours:.9e} "
                  f"kJ/mol ({raw:+.2e}; {corrected:+.1e} with APBS's constants); map relative RMS "
                  f"{c['relative_rms']:.2e} over {c['outside_points']} nodes; APBS {apbs_s:.1f} s, espgrid {ours_s:.1f} s",
                  flush=True)
            failures += not ok
    if failures:
        common.fail(f"{failures} case(s) disagree with APBS")


if __name__ == "__main__":
    main()
