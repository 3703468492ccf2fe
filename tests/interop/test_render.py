#!/usr/bin/python3
"""viz/render_potential.py turns our .vti, .dx and .mrc into the three PNGs, and fails cleanly (exit 1,
one 'render_potential: error:' line, no traceback) on bad input.

Client: Debian's VTK Python (python3-vtk9) and matplotlib; 3-D pictures need an X display or
xvfb-run (the renderer starts Xvfb itself). Skipped (77) when those are missing.
"""

import os
import struct
import subprocess
import sys
import shutil

try:
    import numpy as np
except ImportError:  # numpy is part of the client stack here (python3-numpy): skip, never fail
    print(f"SKIP: numpy is not installed for {sys.executable}; apt-get install python3-numpy")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", head[16:24])


def pixels(path):
    import matplotlib.image as mpimg
    img = mpimg.imread(path)
    return img[..., :3] if img.ndim == 3 else np.stack([img] * 3, axis=-1)


def main():
    args = common.parse_args(__doc__)
    try:
        import vtk
        import matplotlib
    except ImportError as e:
        common.skip(f"VTK Python or matplotlib missing for {sys.executable} ({e}); "
                    f"apt-get install python3-vtk9 python3-matplotlib")
    if not os.environ.get("DISPLAY") and not shutil.which("xvfb-run"):
        common.skip("no X display and no xvfb-run (apt-get install xvfb)")
    print(f"client: VTK {vtk.vtkVersion.GetVTKVersion()}, matplotlib {matplotlib.__version__}, "
          f"{sys.executable}")
    renderer = os.path.join(args.source, "viz", "render_potential.py")
    pqr = os.path.join(args.source, "data", "fasciculin2.pqr")
    errors = 0
    with common.Workdir(args.keep) as wd:
        m = common.make_map(args, wd, "fas", "data/fasciculin2.pqr", ["--spacing", "1", "--padding", "6"],
                            formats=("dx", "vti", "mrc"))
        runs = []
        if m["vti"]:
            runs.append(("vti", [m["vti"], "--structure", pqr, "--limit", "auto", "--levels", "auto"],
                         ("slices", "iso", "surface")))
        runs.append(("dx", [m["dx"], "--structure", pqr, "--kinds", "slices,surface", "--plane", "z=20"],
                     ("slices", "surface")))
        runs.append(("mrc", [m["mrc"], "--kinds", "slices"], ("slices",)))  # every format espgrid writes
        for label, argv, kinds in runs:
            prefix = os.path.join(wd, "pics", label)
            r = common.run([sys.executable, renderer] + argv + ["--espgrid", args.espgrid, "--out", prefix,
                                                                  "--size", "480x360"],
                           timeout=600)
            if r.returncode != 0:
                print(f"FAIL render {label}: exit {r.returncode}\n{r.stdout[-3000:]}")
                errors += 1
                continue
            for kind in kinds:
                png = f"{prefix}-{kind}.png"
                size = png_size(png) if os.path.isfile(png) else None
                if size != (480, 360):
                    print(f"FAIL render {label}: {png}: size {size}, expected (480, 360)")
                    errors += 1
                    continue
                px = pixels(png)
                coloured = np.mean(np.abs(px - px.mean(axis=-1, keepdims=True)).sum(axis=-1) > 0.15)
                nonwhite = np.mean(px.min(axis=-1) < 0.9)
                blue = np.mean((px[..., 2] > px[..., 0] + 0.15))
                if nonwhite < 0.05 or coloured < 0.02 or blue < 0.01:
                    print(f"FAIL render {label}: {kind} looks empty (non-white {nonwhite:.1%}, "
                          f"coloured {coloured:.1%}, blue {blue:.1%})")
                    errors += 1
                else:
                    print(f"ok   render {label} {kind}: 480x360, non-white {nonwhite:.0%}, blue {blue:.0%}")
        # Expected errors: exit 1, one clear line, no traceback.
        nopot = os.path.join(wd, "nopot.vti")
        img = vtk.vtkImageData()
        img.SetDimensions(3, 3, 3)
        a = vtk.vtkFloatArray()
        a.SetName("phi")
        a.SetNumberOfTuples(27)
        a.Fill(1.0)
        img.GetPointData().AddArray(a)
        w = vtk.vtkXMLImageDataWriter()
        w.SetFileName(nopot)
        w.SetInputData(img)
        w.Write()
        truncated = os.path.join(wd, "truncated.dx")
        with open(m["dx"]) as f, open(truncated, "w") as g:
            g.write(f.read()[:3000])
        # Half the data removed, the closing tags kept: once drawn with values up to 2.4e29, exit 0.
        half_vti = os.path.join(wd, "half.vti")
        if m["vti"]:
            data = open(m["vti"], "rb").read()
            start = data.index(b"_", data.index(b"<AppendedData")) + 1
            tail = data.rindex(b"\n  </AppendedData>")
            open(half_vti, "wb").write(data[:start + (tail - start) // 2] + data[tail:])
        # A .vti whose array has no type: VTK 9.1's reader dereferenced a null array (the renderer
        # died with SIGSEGV); fuzz_map found it (the first byte of the input picks the format).
        no_type = os.path.join(wd, "no-type.vti")
        with open(os.path.join(args.source, "fuzz", "regressions", "map", "vti-array-without-type-vtk-segfault"),
                  "rb") as f:
            open(no_type, "wb").write(f.read()[1:])
        cut_mrc = os.path.join(wd, "cut.mrc")
        data = open(m["mrc"], "rb").read()
        open(cut_mrc, "wb").write(data[:len(data) * 3 // 4])
        bad = [
            ("missing map", [os.path.join(wd, "nope.vti")], "no such file"),
            ("no potential array", [nopot, "--kinds", "slices"], "no point array named 'potential'"),
            ("truncated dx", [truncated, "--kinds", "slices"], "truncated.dx:"),  # espgrid's FILE:LINE message
            ("truncated mrc", [cut_mrc, "--kinds", "slices"], "cut.mrc: the file has"),
            ("array without a type", [no_type, "--kinds", "slices"], "has type ''"),
        ] + ([("truncated vti", [half_vti, "--kinds", "slices"], "the file is truncated")] if m["vti"] else []) + [
            ("surface without structure", [m["dx"], "--kinds", "surface"], "needs --structure"),
            ("missing structure", [m["dx"], "--structure", os.path.join(wd, "nope.pqr")], "no such file"),
        ]
        for what, argv, needle in bad:
            r = subprocess.run([sys.executable, renderer] + argv + ["--espgrid", args.espgrid,
                                                                    "--out", os.path.join(wd, "bad")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
            if r.returncode != 1 or "Traceback" in r.stderr or needle not in r.stderr \
                    or not r.stderr.startswith("render_potential: error:"):
                print(f"FAIL error case '{what}': exit {r.returncode}, stderr {r.stderr.strip()[:300]!r}")
                errors += 1
            else:
                print(f"ok   error case '{what}': exit 1, {r.stderr.strip()}")
    if errors:
        common.fail(f"{errors} check(s) failed")
    print("PASS")


if __name__ == "__main__":
    main()
