#!/usr/bin/python3
"""gemmi reads our .mrc at the right place: its interpolate_value at a point equals our value
there, at grid nodes and between them.

Client: gemmi's Python module (Debian: python3-gemmi), a crystallographic reader like Coot and
the CCP4 programs: it places a map by its start indices (NXSTART, NYSTART, NZSTART, in voxels of
CELLA / MX) and ignores ORIGIN. espgrid once wrote the start indices 0 and the origin in ORIGIN
only, so gemmi's value at a point was the value at that point minus the origin (-43.3 instead of
-67.8 kT/e in the issue). The reference values are our .dx of the same map, read by the strict
reader; between nodes, their trilinear interpolation (common.trilinear), which is what gemmi's
interpolate_value computes.
"""

import os
import sys

try:
    import numpy as np
except ImportError:  # numpy is part of the client stack here (python3-numpy): skip, never fail
    print(f"SKIP: numpy is not installed for {sys.executable}; apt-get install python3-numpy")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def tolerance(dx):
    """How far gemmi may be from our value. gemmi places node i at (NXSTART + i) * CELLA / MX
    with CELLA a float32 (relative error up to 6e-8): at most ~300 voxels from 0 here, a node is
    off by up to 2e-5 voxel, which moves the interpolated value by that fraction of the largest
    step between neighbouring nodes; gemmi interpolates in float32 (1.2e-7 relative per
    operation, a few operations). The old writer's error was a whole origin (tens of Å)."""
    steps = max(float(np.abs(np.diff(dx.values64, axis=a)).max()) for a in range(3))
    return 2e-5 * steps + 1e-6 * float(np.abs(dx.values64).max())


def main():
    args = common.parse_args(__doc__)
    try:
        import gemmi
    except ImportError as e:
        common.skip(f"gemmi is not installed for {sys.executable} ({e}); apt-get install python3-gemmi")
    print(f"client: gemmi {gemmi.__version__} ({os.path.dirname(gemmi.__file__)})")
    errors = 0
    rng = np.random.default_rng(7)
    with common.Workdir(args.keep) as wd:
        for name, structure, options in common.CASES:
            m = common.make_map(args, wd, name, structure, options, formats=("dx", "mrc"))
            dx = common.read_dx_strict(m["dx"])
            ccp4 = gemmi.read_ccp4_map(m["mrc"])
            ccp4.setup(float("nan"))  # the map fills its cell (MX = NX): nothing is left NaN
            grid = ccp4.grid
            if (grid.nu, grid.nv, grid.nw) != dx.counts:
                print(f"FAIL {name}: gemmi grid {(grid.nu, grid.nv, grid.nw)}, ours {dx.counts}")
                errors += 1
                continue
            tol = tolerance(dx)
            worst = 0.0
            # Every node (the fixtures' maps are at most ~60,000 points).
            nx, ny, nz = dx.counts
            for i in range(nx):
                for j in range(ny):
                    for k in range(nz):
                        p = dx.node(i, j, k)
                        got = grid.interpolate_value(gemmi.Position(*p))
                        diff = abs(got - dx.values64[i, j, k])
                        worst = max(worst, diff)
                        if not diff <= tol:
                            if errors < 20:
                                print(f"FAIL {name}: node ({i},{j},{k}) at {p}: gemmi {got}, ours "
                                      f"{dx.values64[i, j, k]} (tolerance {tol:.3g})")
                            errors += 1
            # Points between the nodes, inside the box.
            last = dx.node(nx - 1, ny - 1, nz - 1)
            for _ in range(2000):
                p = dx.origin + rng.random(3) * (last - dx.origin)
                got = grid.interpolate_value(gemmi.Position(*p))
                want = common.trilinear(dx, p)
                diff = abs(got - want)
                worst = max(worst, diff)
                if not diff <= tol:
                    if errors < 20:
                        print(f"FAIL {name}: point {p}: gemmi {got}, trilinear of ours {want} (tolerance {tol:.3g})")
                    errors += 1
            print(f"ok   {name}: {dx.counts}, origin {dx.origin.tolist()}: {nx * ny * nz} nodes and 2000 points "
                  f"between them, largest difference {worst:.3g} (tolerance {tol:.3g})")
    if errors:
        common.fail(f"{errors} check(s) failed")
    print("PASS")


if __name__ == "__main__":
    main()
