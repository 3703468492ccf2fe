#!/usr/bin/python3
"""APBS's `multivalue` tool reads our .dx and returns our values: at grid nodes equal to print
precision, between nodes equal to trilinear interpolation of our values (computed here). And
`espgrid sample --map` reads multivalue's own input (the same CSV file) and gives multivalue's
values, to its print precision.

Client: multivalue from the APBS tools (Debian apbs: /usr/lib/apbs/tools/bin/multivalue). It reads
the map with APBS's Vgrid_readDX and evaluates Vgrid_value at every point of a CSV file, writing
"x,y,z,value" lines with printf("%e") (7 significant digits).
"""

import glob
import os
import shutil
import subprocess
import sys

try:
    import numpy as np
except ImportError:  # numpy is part of the client stack here (python3-numpy): skip, never fail
    print(f"SKIP: numpy is not installed for {sys.executable}; apt-get install python3-numpy")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def find_multivalue():
    env = os.environ.get("ESPGRID_MULTIVALUE")
    if env:
        return env if os.access(env, os.X_OK) else None
    for c in [shutil.which("multivalue"), "/usr/lib/apbs/tools/bin/multivalue",
              "/usr/share/apbs/tools/bin/multivalue", "/usr/local/share/apbs/tools/bin/multivalue"]:
        if c and os.access(c, os.X_OK):
            return c
    for c in sorted(glob.glob("/usr/lib/apbs*/**/multivalue", recursive=True)):
        if os.access(c, os.X_OK):
            return c
    try:
        out = subprocess.run(["dpkg", "-L", "apbs"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True, timeout=30).stdout
        for line in out.split("\n"):
            if line.endswith("/multivalue") and os.access(line, os.X_OK):
                return line
    except (OSError, subprocess.SubprocessError):
        pass
    return None


def apbs_version():
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "apbs"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, timeout=30).stdout.strip()
        if out:
            return f"APBS {out} (Debian package apbs)"
    except (OSError, subprocess.SubprocessError):
        pass
    apbs = shutil.which("apbs")
    if apbs:
        r = common.run([apbs, "--version"], timeout=60)
        for line in r.stdout.split("\n"):
            if line.strip().startswith("APBS "):
                return line.strip()
    return "APBS (version unknown)"


def points_for(dx, rng):
    """(label, point) list: sample nodes, then points between nodes (random fractions)."""
    pts = [("node", tuple(dx.node(*idx))) for idx in common.sample_indices(dx.counts, n=60, seed=3)]
    n = np.array(dx.counts)
    for _ in range(60):
        i = np.array([rng.integers(0, c - 1) for c in n])
        f = rng.uniform(0.05, 0.95, size=3)
        pts.append(("between", tuple(dx.origin + dx.spacing * (i + f))))
    # Midpoints of a cell, of a face and of an edge.
    c = n // 2
    for f in ([0.5, 0.5, 0.5], [0.5, 0.5, 0.0], [0.5, 0.0, 0.0]):
        pts.append(("between", tuple(dx.origin + dx.spacing * (c + np.array(f)))))
    return pts


def main():
    args = common.parse_args(__doc__)
    mv = find_multivalue()
    if not mv:
        common.skip("APBS multivalue not found (apt-get install apbs; or set ESPGRID_MULTIVALUE)")
    print(f"client: {apbs_version()}, {mv}")
    rng = np.random.default_rng(11)
    errors = 0
    with common.Workdir(args.keep) as wd:
        for name, structure, options in common.CASES:
            m = common.make_map(args, wd, name, structure, options, formats=("dx",))
            dx = common.read_dx_strict(m["dx"])
            pts = points_for(dx, rng)
            csv = os.path.join(wd, f"{name}.csv")
            with open(csv, "w") as f:   # no spaces, no header: multivalue's rules
                for _, p in pts:
                    f.write(",".join(repr(float(x)) for x in p) + "\n")
            out = os.path.join(wd, f"{name}.out")
            r = common.run([mv, csv, m["dx"], out], timeout=300)
            if r.returncode != 0 or not os.path.isfile(out):
                print(f"FAIL {name}: multivalue exited {r.returncode}:\n{r.stdout[-2000:]}")
                errors += 1
                continue
            rows = [l.split(",") for l in open(out).read().split("\n") if l.strip()]
            if len(rows) != len(pts):
                print(f"FAIL {name}: multivalue wrote {len(rows)} rows for {len(pts)} points")
                errors += 1
                continue
            worst_between, nodes_ok, before = 0.0, 0, errors
            for (kind, p), row in zip(pts, rows):
                if len(row) != 4 or row[3].strip().lower() == "nan":
                    print(f"FAIL {name}: multivalue gave {','.join(row)!r} at {kind} point {p}")
                    errors += 1
                    continue
                got = float(row[3])
                if kind == "node":
                    idx = tuple(int(round(x)) for x in (np.array(p) - dx.origin) / dx.spacing)
                    want = dx.values64[idx]
                    # multivalue interpolates even at a node: its weights there can round to
                    # 1 - 1e-16 and 1e-16, so its 7-digit %e may differ from ours in the last
                    # digit (seen once: -6.420666e+01 vs -6.420667e+01). Half a unit in the 7th
                    # digit is 5e-7 relative; 1e-6 allows that plus the weights' rounding.
                    if abs(got - want) > 1e-6 * abs(want):
                        print(f"FAIL {name}: node {idx}: multivalue {row[3].strip()}, ours {want:e}")
                        errors += 1
                    else:
                        nodes_ok += 1
                else:
                    want = common.trilinear(dx, p)
                    # 7 significant digits printed; interpolation in double on both sides.
                    scale = max(abs(want), np.max(np.abs(dx.values64)) * 1e-9)
                    rel = abs(got - want) / scale
                    worst_between = max(worst_between, rel)
                    if rel > 1e-6:
                        print(f"FAIL {name}: between nodes at {p}: multivalue {got:e}, trilinear {want:e}")
                        errors += 1
            # espgrid sample on multivalue's input: the same points, the same rule.
            ours = os.path.join(wd, f"{name}.sample.csv")
            r = common.run([args.espgrid, "sample", "--map", m["dx"], "--points", csv, "-o", ours], timeout=300)
            if r.returncode != 0:
                print(f"FAIL {name}: espgrid sample --map exited {r.returncode}:\n{r.stdout[-2000:]}")
                errors += 1
            else:
                sampled = [l.split(",") for l in open(ours).read().split("\n")[1:] if l.strip()]
                worst_sample = 0.0
                for (kind, p), row, theirs in zip(pts, sampled, rows):
                    # multivalue prints 7 significant digits (half a unit: 5e-7 relative); ours is
                    # float32 (6e-8): 1e-6 of the value, or of the map's scale near zero, as above.
                    got, want = float(row[3]), float(theirs[3])
                    scale = max(abs(want), np.max(np.abs(dx.values64)) * 1e-9)
                    worst_sample = max(worst_sample, abs(got - want) / scale)
                    if [float(x) for x in row[:3]] != list(p) or abs(got - want) > 1e-6 * scale:
                        print(f"FAIL {name}: espgrid sample {','.join(row)} where multivalue gave {','.join(theirs)}")
                        errors += 1
                if len(sampled) != len(pts):
                    print(f"FAIL {name}: espgrid sample wrote {len(sampled)} rows for {len(pts)} points")
                    errors += 1
            if errors == before:
                print(f"ok   {name}: {dx.counts}, {nodes_ok} nodes equal to print precision, "
                      f"{len(pts) - nodes_ok} points between nodes within {worst_between:.1e} (relative) "
                      f"of trilinear interpolation; espgrid sample --map within {worst_sample:.1e} of multivalue")
    if errors:
        common.fail(f"{errors} check(s) failed")
    print("PASS")


if __name__ == "__main__":
    main()
