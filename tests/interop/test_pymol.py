#!/usr/bin/python3
"""PyMOL loads our .dx, .dx.gz and .mrc, and each map holds our values at every node, with our
origin and extent.

Client: PyMOL's Python module (Debian: pymol / python3-pymol), run headless in this process
(pymol.finish_launching(['pymol', '-cq'])). cmd.get_volume_field(name) returns the map as an
array indexed [i, j, k] (x, y, z); the reference values are our .dx read by the strict reader,
rounded to float32 as PyMOL stores them. PyMOL rescales MRC/CCP4 maps to mean 0 and RMS 1 on
loading unless normalize_ccp4_maps is off (README says so); the test turns it off to compare
values, then checks that the default (normalized) map is (value - mean) / RMS.
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


def main():
    args = common.parse_args(__doc__)
    try:
        import pymol
        from pymol import cmd
    except ImportError as e:
        common.skip(f"PyMOL is not installed for {sys.executable} ({e}); apt-get install pymol")
    pymol.finish_launching(["pymol", "-cq"])
    version = cmd.get_version()
    print(f"client: PyMOL {version[0]} (module {os.path.dirname(pymol.__file__)})")
    errors = 0
    with common.Workdir(args.keep) as wd:
        # .dx.gz needs an espgrid built with zlib: probe once.
        probe = common.run([args.espgrid, "map", os.path.join(args.source, "tests/data/pqr_whitespace.pqr"), "-o",
                            os.path.join(wd, "probe.dx.gz"), "--spacing", "2", "--padding", "1", "--backend", "cpu"])
        formats = ("dx", "dx.gz", "mrc") if probe.returncode == 0 else ("dx", "mrc")
        if probe.returncode != 0:
            print(f"note: .dx.gz not checked: {probe.stdout.strip().splitlines()[-1]}")
        for name, structure, options, ext in [c + (e,) for c in common.CASES for e in formats]:
            m = common.make_map(args, wd, name, structure, options, formats=formats)
            dx = common.read_dx_strict(m["dx"])
            before = errors
            obj = f"esp_{name}_{ext.replace('.', '_')}"
            cmd.set("normalize_ccp4_maps", 0)
            cmd.load(m[ext], obj)
            if cmd.get_type(obj) != "object:map":
                print(f"FAIL {name}.{ext}: PyMOL loaded {obj} as {cmd.get_type(obj)!r}, not a map")
                errors += 1
                continue
            field = np.asarray(cmd.get_volume_field(obj, copy=1))
            if field.shape != dx.counts:
                print(f"FAIL {name}: PyMOL field shape {field.shape} != counts {dx.counts}")
                errors += 1
                continue
            # Sample nodes first (clear message on an index-order mix-up), then every node.
            for idx in common.sample_indices(dx.counts):
                if np.float32(field[idx]) != dx.values32[idx]:
                    print(f"FAIL {name}: node {idx}: PyMOL {field[idx]!r}, ours {dx.values32[idx]!r}")
                    errors += 1
                    break
            diff = field.astype(np.float32) != dx.values32
            if diff.any():
                print(f"FAIL {name}: {int(diff.sum())} of {diff.size} nodes differ")
                errors += 1
            (lo, hi) = cmd.get_extent(obj)
            want_lo = dx.origin
            want_hi = dx.origin + dx.spacing * (np.array(dx.counts) - 1)
            if not (np.allclose(lo, want_lo, atol=1e-4) and np.allclose(hi, want_hi, atol=1e-4)):
                print(f"FAIL {name}: PyMOL extent {lo} .. {hi}, ours {want_lo} .. {want_hi}")
                errors += 1
            if ext == "mrc":
                # PyMOL's default: the map rescaled to mean 0 and RMS 1 (statistics PyMOL computes
                # itself, in float32: ~1e-4 relative off the exact ones, so 1e-3 here).
                normalized = f"{obj}_normalized"
                cmd.set("normalize_ccp4_maps", 1)
                cmd.load(m[ext], normalized)
                z = np.asarray(cmd.get_volume_field(normalized, copy=1)).astype(np.float64)
                want = (dx.values32.astype(np.float64) - dx.values64.mean()) / dx.values64.std()
                if not np.allclose(z, want, rtol=1e-3, atol=1e-3):
                    print(f"FAIL {name}.mrc: normalized map differs from (value - mean) / rms by up to "
                          f"{np.abs(z - want).max():.3g}")
                    errors += 1
                cmd.delete(normalized)
            if errors == before:
                print(f"ok   {name}.{ext}: {dx.counts}, extent {np.round(lo, 4).tolist()} .. {np.round(hi, 4).tolist()}, "
                      f"range {field.min():.6g} .. {field.max():.6g}; all {field.size} nodes equal")
            cmd.delete(obj)
    if errors:
        common.fail(f"{errors} check(s) failed")
    print("PASS")


if __name__ == "__main__":
    # PyMOL's shutdown swallows sys.exit codes; pass ours on explicitly.
    try:
        main()
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
