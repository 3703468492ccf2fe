#!/usr/bin/python3
"""Our .mrc passes mrcfile's strict MRC2014 validation, and mrcfile reads back our values, grid and
labels.

Client: mrcfile (Debian: python3-mrcfile), the CCP-EM reference implementation of MRC2014.
mrcfile.validate checks the format ID, machine stamp, mode, dimensions, axis order, labels, the
version (20140) and that the header's min, max, mean and RMS describe the data. The reference
values are our .dx of the same map read by the strict reader (every float exact in its text).
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

CASES = common.CASES + [
    ("kcal_eps4", "tests/data/pqr_whitespace.pqr", ["--spacing", "0.35", "--padding", "3", "--units",
                                                    "kcal/mol/e", "--dielectric", "4"]),
]


def main():
    args = common.parse_args(__doc__)
    try:
        import io
        import mrcfile
    except ImportError as e:
        common.skip(f"mrcfile is not installed for {sys.executable} ({e}); apt-get install python3-mrcfile")
    print(f"client: mrcfile {mrcfile.__version__} ({os.path.dirname(mrcfile.__file__)})")
    errors = 0
    with common.Workdir(args.keep) as wd:
        for name, structure, options in CASES:
            before = errors
            m = common.make_map(args, wd, name, structure, options, formats=("dx", "mrc", "map", "ccp4"))
            dx = common.read_dx_strict(m["dx"])
            report = io.StringIO()
            if not mrcfile.validate(m["mrc"], print_file=report):
                print(f"FAIL {name}: mrcfile.validate:\n{report.getvalue()}")
                errors += 1
            mrc_bytes = open(m["mrc"], "rb").read()
            for ext in ("map", "ccp4"):
                if open(m[ext], "rb").read() != mrc_bytes:
                    print(f"FAIL {name}: the .{ext} differs from the .mrc (one format, three names)")
                    errors += 1
            with mrcfile.open(m["mrc"], permissive=False) as mrc:
                h = mrc.header
                data = np.asarray(mrc.data)  # [z, y, x]: x fastest
                if data.dtype != np.float32 or data.shape != dx.counts[::-1]:
                    print(f"FAIL {name}: data {data.dtype} {data.shape}, expected float32 {dx.counts[::-1]}")
                    errors += 1
                    continue
                ours = data.transpose(2, 1, 0)
                if not np.array_equal(ours, dx.values32):
                    i, j, k = np.argwhere(ours != dx.values32)[0]
                    print(f"FAIL {name}: {int((ours != dx.values32).sum())} values differ from the .dx; first at "
                          f"({i},{j},{k}): mrc {ours[i, j, k]!r}, dx {dx.values32[i, j, k]!r}")
                    errors += 1
                voxel = np.array([mrc.voxel_size.x, mrc.voxel_size.y, mrc.voxel_size.z], dtype=np.float32)
                # What a float32 header holds: the float nearest the spacing (see tests/test_writers.cpp
                # for the rare spacings no float cell reaches; none of these is one).
                if not np.array_equal(voxel, dx.spacing.astype(np.float32)):
                    print(f"FAIL {name}: voxel size {voxel}, spacing {dx.spacing}")
                    errors += 1
                # Placement (maps/map_formats.h, mrc_placement): espgrid's default grids lie on the
                # lattice of their spacing, so the start indices carry the origin in whole voxels
                # and ORIGIN is 0 (readers that add the two, like GridDataFormats, agree).
                start = np.array([int(h.nxstart), int(h.nystart), int(h.nzstart)])
                if not np.array_equal(start, np.rint(dx.origin / dx.spacing).astype(int)):
                    print(f"FAIL {name}: start indices {start.tolist()}, origin/spacing {dx.origin / dx.spacing}")
                    errors += 1
                origin = start * voxel.astype(np.float64)  # where crystallographic readers put it
                # float32 voxel sizes (~6e-8 relative) times at most a few hundred voxels
                if not np.allclose(origin, dx.origin, rtol=0, atol=1e-4):
                    print(f"FAIL {name}: start x voxel {origin}, ours {dx.origin}")
                    errors += 1
                if (float(h.origin.x), float(h.origin.y), float(h.origin.z)) != (0.0, 0.0, 0.0):
                    print(f"FAIL {name}: ORIGIN {h.origin}, expected 0 beside the start indices")
                    errors += 1
                if (int(h.mapc), int(h.mapr), int(h.maps)) != (1, 2, 3) or int(h.nversion) != 20140:
                    print(f"FAIL {name}: axes {(int(h.mapc), int(h.mapr), int(h.maps))}, version {int(h.nversion)}")
                    errors += 1
                labels = [bytes(label).decode("ascii").strip() for label in h.label[:int(h.nlabl)]]
                unit = "kcal/mol/e" if "kcal/mol/e" in options else "kT/e"
                if not any(f"Potential in {unit}" in label and "model coulomb" in label for label in labels):
                    print(f"FAIL {name}: no label names the unit {unit} and the model: {labels}")
                    errors += 1
                if float(h.dmin) != float(dx.values32.min()) or float(h.dmax) != float(dx.values32.max()):
                    print(f"FAIL {name}: header range {h.dmin} .. {h.dmax}, data {dx.values32.min()} .. "
                          f"{dx.values32.max()}")
                    errors += 1
            if errors == before:
                print(f"ok   {name}: {dx.counts}, voxel {voxel.tolist()}, origin {origin.tolist()}, "
                      f"rms {float(h.rms):.6g}; valid MRC2014, all {dx.values32.size} values equal the .dx; "
                      f"labels {labels}")
    if errors:
        common.fail(f"{errors} check(s) failed")
    print("PASS")


if __name__ == "__main__":
    main()
