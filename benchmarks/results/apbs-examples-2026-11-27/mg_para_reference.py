#!/usr/bin/python3
"""Which of the two mg-para answers is nearer a solve without partitions? (a diagnostic of this
results folder, not a test)

actin-dimer/apbs-smol-parallel.in at its own resolution (dime 97 per process, 2 x 2 x 2): espgrid
once (the whole fine grid, 162^3 at 0.696 A, every partition's file), APBS once per partition with
`async R`, and APBS on the same input turned into mg-auto at dime 161 (fine spacing 0.70 A over the
same fglen, no partitions: the reference). For every partition file, the relative RMS over the nodes
>= 1.4 A outside every vdW sphere of espgrid against APBS's partition, and of each against the
reference (trilinear interpolation of the reference's complex map onto the partition's nodes).

    /usr/bin/python3 benchmarks/results/apbs-examples-2026-11-27/mg_para_reference.py --espgrid BIN
"""

import argparse
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import apbs_examples_compare as compare  # noqa: E402
from apbs_examples_compare import frontend  # noqa: E402

apbs_pb = frontend.apbs_pb
np = apbs_pb.np
EXAMPLE = "actin-dimer/apbs-smol-parallel.in"


def as_mg_auto(text, dime):
    text = re.sub(r"(?im)^(\s*)mg-para\s*$", r"\1mg-auto", text)
    text = re.sub(r"(?im)^\s*(ofrac|pdime)\b.*\n", "", text)
    return re.sub(r"(?im)^(\s*dime)\s+\d+\s+\d+\s+\d+", rf"\1 {dime} {dime} {dime}", text)


def relative_rms(a, b, mask):
    return float(np.sqrt(np.sum((a[mask] - b[mask]) ** 2) / np.sum(b[mask] ** 2)))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--espgrid", default=os.path.join(ROOT, "build", "espgrid"))
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    name = os.path.basename(EXAMPLE)
    with open(os.path.join(frontend.EXAMPLES, EXAMPLE)) as f:
        text = f.read()
    with tempfile.TemporaryDirectory(prefix="espgrid-mg-para-") as work:
        ours_dir = os.path.join(work, "espgrid")
        frontend.prepare(ours_dir, EXAMPLE, None, [], ROOT, name, lambda t: t)
        out, wall, _ = compare.run([os.path.abspath(args.espgrid), "apbs", name], ours_dir, args.threads)
        assert out.returncode == 0, out.stderr
        print(f"espgrid (whole grid, every partition's file): {wall:.1f} s")
        ref_dir = os.path.join(work, "reference")
        frontend.prepare(ref_dir, EXAMPLE, None, [], ROOT, name, lambda t: as_mg_auto(t, 161))
        out, wall, _ = compare.run(["apbs", name], ref_dir, args.threads)
        assert out.returncode == 0, out.stdout[-2000:]
        print(f"APBS mg-auto dime 161 (the reference): {wall:.1f} s; its binding energy "
              f"{frontend.GLOBAL.findall(out.stdout)[-1]} kJ/mol")
        o_r, h_r, c_r, ref = apbs_pb.read_dx(os.path.join(ref_dir, "pot-PE0.dx"))
        from scipy.interpolate import RegularGridInterpolator
        interp = RegularGridInterpolator([o_r[a] + h_r[a] * np.arange(c_r[a]) for a in range(3)], ref,
                                         bounds_error=False, fill_value=np.nan)
        xyz, radii = frontend.atoms_of(ours_dir, text)
        print("partition | nodes | espgrid vs APBS's partition | espgrid vs reference | APBS's partition vs reference")
        for rank in range(compare.partitions(text)):
            d = os.path.join(work, f"apbs-rank{rank}")
            frontend.prepare(d, EXAMPLE, None, [], ROOT, name, lambda t, r=rank: compare.with_async(t, r))
            out, wall, _ = compare.run(["apbs", name], d, args.threads)
            assert out.returncode == 0, out.stdout[-2000:]
            o, h, c, theirs = apbs_pb.read_dx(os.path.join(d, "pot-PE0.dx"))
            o2, h2, c2, ours = apbs_pb.read_dx(os.path.join(ours_dir, f"pot-PE{rank}.dx"))
            assert c == c2 and np.abs(o - o2).max() < 1e-5 and np.abs(h - h2).max() < 1e-6
            outside, _ = apbs_pb.regions(o, h, c, xyz, radii)
            nodes = np.stack(np.meshgrid(*[o[a] + h[a] * np.arange(c[a]) for a in range(3)], indexing="ij"),
                             -1).reshape(-1, 3)
            r = interp(nodes)
            m = outside & np.isfinite(r)
            u, t = ours.ravel(), theirs.ravel()
            print(f"{rank} | {int(m.sum())} | {relative_rms(u, t, outside):.2e} | {relative_rms(u, r, m):.2e} | "
                  f"{relative_rms(t, r, m):.2e}   (APBS partition {wall:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
