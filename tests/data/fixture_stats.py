#!/usr/bin/env python3
"""Independent reference values for the espgrid reader fixtures and data.

Usage:  python3 tests/data/fixture_stats.py FILE...

For each valid PQR / XYZ file prints atom count, total charge (math.fsum),
bounding-box size and the first three atoms (x, y, z, charge, radius).
This is deliberately NOT the C++ reader's algorithm:
  * PQR: every ATOM/HETATM line (CR stripped); the numbers x y z q r are the
    LAST FIVE decimal numbers (regex -?digits.digits) on the line, so fields
    that run together ("-83.555-100.754") and tab/space separators are all
    handled; for lines of PDB2PQR fixed-column layout (length 69, '.' at
    columns 35/43/51) the result is cross-checked against column slicing
    [30:38] [38:46] [46:54] [54:62] [62:69].
  * XYZ: count line, then either an extended-XYZ Properties= key (columns
    located by name: species, pos, charge|initial_charges) or plain
    "El x y z q".
"""
import math
import re
import sys

NUM = re.compile(r"-?\d+\.\d+")


def parse_pqr(path):
    atoms = []
    with open(path, newline="") as f:
        text = f.read()
    for line in text.split("\n"):
        line = line.rstrip("\r")
        if not line.startswith(("ATOM", "HETATM")):
            continue
        nums = [float(v) for v in NUM.findall(line)]
        if len(nums) < 5:
            raise ValueError(f"{path}: cannot parse: {line!r}")
        a = tuple(nums[-5:])
        if len(line) == 69 and line[34] == line[42] == line[50] == ".":
            cols = tuple(float(line[s:e]) for s, e in
                         ((30, 38), (38, 46), (46, 54), (54, 62), (62, 69)))
            assert cols == a, (line, cols, a)
        atoms.append(a)
    return atoms


def parse_xyz(path):
    with open(path) as f:
        lines = f.read().split("\n")
    n = int(lines[0])
    comment = lines[1]
    body = [l.split() for l in lines[2:2 + n]]
    assert len(body) == n and all(body), path
    m = re.search(r"Properties=(\S+)", comment)
    if m:
        spec = m.group(1).split(":")
        col = 0
        where = {}
        for i in range(0, len(spec), 3):
            name, _, width = spec[i], spec[i + 1], int(spec[i + 2])
            where[name] = col
            col += width
        p = where["pos"]
        q = where["charge"] if "charge" in where else where["initial_charges"]
        return [(float(r[p]), float(r[p + 1]), float(r[p + 2]), float(r[q]), None)
                for r in body]
    return [(float(r[1]), float(r[2]), float(r[3]), float(r[4]), None) for r in body]


def fmt(v):
    return "-" if v is None else f"{v:.4f}"


def main(paths):
    for path in paths:
        atoms = parse_xyz(path) if path.endswith(".xyz") else parse_pqr(path)
        q = math.fsum(a[3] for a in atoms)
        size = [max(a[k] for a in atoms) - min(a[k] for a in atoms) for k in range(3)]
        lo = [min(a[k] for a in atoms) for k in range(3)]
        hi = [max(a[k] for a in atoms) for k in range(3)]
        print(f"{path}: atoms={len(atoms)} total_charge={q:.4f} (raw {q!r}) "
              f"bbox_size={size[0]:.3f} x {size[1]:.3f} x {size[2]:.3f} "
              f"min=({lo[0]:.3f},{lo[1]:.3f},{lo[2]:.3f}) "
              f"max=({hi[0]:.3f},{hi[1]:.3f},{hi[2]:.3f})")
        for i, a in enumerate(atoms[:3], 1):
            print(f"   atom {i}: x={a[0]:.3f} y={a[1]:.3f} z={a[2]:.3f} "
                  f"q={fmt(a[3])} r={fmt(a[4])}")


if __name__ == "__main__":
    main(sys.argv[1:])
