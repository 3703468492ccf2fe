#!/usr/bin/python3
"""The four-way picture of docs/pb.md: fasciculin-2's surface coloured by espgrid's Debye–Hückel
map, espgrid's PB map (defaults: APBS's discretization), APBS 3.4.1's map of the same grid, and
espgrid's PB map with --surface-sampling 4; all on ±5 kT/e, by viz/render_potential.py.

    benchmarks/pb_picture.py [--espgrid build/espgrid] [--out docs/fasciculin2-pb.png]

Needs apbs, /usr/bin/python3 with numpy, VTK (python3-vtk9) and matplotlib.
"""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "interop"))
import apbs_pb as A  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--espgrid", default=os.path.join(ROOT, "build", "espgrid"))
    p.add_argument("--out", default=os.path.join(ROOT, "docs", "fasciculin2-pb.png"))
    args = p.parse_args()
    pqr = os.path.join(ROOT, "data", "fasciculin2.pqr")
    xyz, _ = A.read_pqr(pqr)
    origin, dims = A.grid_for(xyz, 0.5, 10)
    work = tempfile.mkdtemp(prefix="pb-picture-")
    grid = ["--origin", ",".join(f"{v:.4f}" for v in origin), "--dims", ",".join(map(str, dims)), "--spacing", "0.5"]
    maps = []
    for name, options, title in [
        ("debye", ["--model", "debye", "--dielectric", "78.54", "--ionic-strength", "0.15"],
         "espgrid debye (Debye-Hückel, 0.15 M)"),
        ("pb", ["--model", "pb"], "espgrid pb (defaults: APBS's discretization)"),
        ("apbs", None, "APBS 3.4.1 mg-manual, the same grid"),
        ("pb4", ["--model", "pb", "--surface-sampling", "4"], "espgrid pb --surface-sampling 4"),
    ]:
        if options is None:
            dx, _ = A.run_apbs(pqr, [round(v, 4) for v in origin], dims, [0.5] * 3, work, name="apbs")
        else:
            dx = os.path.join(work, name + ".dx")
            subprocess.run([args.espgrid, "map", pqr, "-o", dx, *grid, *options], check=True, capture_output=True)
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "viz", "render_potential.py"), dx, "-s", pqr,
                        "--kinds", "surface", "--out", os.path.join(work, name), "--espgrid", args.espgrid,
                        "--size", "800x600"], check=True, capture_output=True)
        maps.append((os.path.join(work, name + "-surface.png"), title))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.image as mpimg
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 4, figsize=(20, 4.6))
    for ax, (png, title) in zip(axes, maps):
        ax.imshow(mpimg.imread(png))
        ax.set_title(title, fontsize=12)
        ax.axis("off")
    fig.suptitle("fasciculin-2, 0.5 Å grid, surface 1.4 Å outside the atoms coloured on ±5 kT/e", fontsize=13)
    plt.tight_layout()
    plt.savefig(args.out, dpi=80)
    print(f"wrote {args.out} (maps in {work})")


if __name__ == "__main__":
    main()
