#!/usr/bin/python3
"""GridDataFormats (MDAnalysis' gridData.Grid) reads our .dx and our .mrc at the same place,
with our values.

Client: GridDataFormats (Debian: python3-griddataformats), which reads .mrc through mrcfile and
places it at ORIGIN plus the start indices times the voxel size: a header that set both (as
some writers do) would put the map twice as far out. espgrid writes the start indices and ORIGIN
0 for its grids (maps/map_formats.h, mrc_placement). The reference is our .dx read by the strict
reader.
"""

import os
import sys
import warnings

try:
    import numpy as np
except ImportError:  # numpy is part of the client stack here (python3-numpy): skip, never fail
    print(f"SKIP: numpy is not installed for {sys.executable}; apt-get install python3-numpy")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def main():
    args = common.parse_args(__doc__)
    try:
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        import gridData
    except ImportError as e:
        common.skip(f"GridDataFormats is not installed for {sys.executable} ({e}); "
                    "apt-get install python3-griddataformats")
    print(f"client: GridDataFormats {getattr(gridData, '__version__', '?')} ({os.path.dirname(gridData.__file__)})")
    errors = 0
    with common.Workdir(args.keep) as wd:
        for name, structure, options in common.CASES:
            m = common.make_map(args, wd, name, structure, options, formats=("dx", "mrc"))
            dx = common.read_dx_strict(m["dx"])
            for ext in ("dx", "mrc"):
                g = gridData.Grid(m[ext])
                values = np.asarray(g.grid)
                if values.shape != dx.counts or not np.array_equal(values.astype(np.float32), dx.values32):
                    print(f"FAIL {name}.{ext}: GridDataFormats' values differ from ours (shape {values.shape})")
                    errors += 1
                    continue
                # .dx: the text's numbers; .mrc: float32 header fields (voxel ~6e-8 relative, times
                # at most a few hundred voxels from 0): 1e-4 Å is far below a spacing, far above both.
                if not np.allclose(g.origin, dx.origin, rtol=0, atol=1e-4):
                    print(f"FAIL {name}.{ext}: GridDataFormats puts the origin at {g.origin}, ours {dx.origin}")
                    errors += 1
                delta = np.asarray(g.delta, float)
                delta = np.diag(delta) if delta.ndim == 2 else delta
                if not np.allclose(delta, dx.spacing, rtol=1e-6, atol=0):  # float32 voxel: 6e-8 relative
                    print(f"FAIL {name}.{ext}: spacing {delta}, ours {dx.spacing}")
                    errors += 1
            print(f"ok   {name}: .dx and .mrc at origin {dx.origin.tolist()}, all {dx.values32.size} values equal")
    if errors:
        common.fail(f"{errors} check(s) failed")
    print("PASS")


if __name__ == "__main__":
    main()
