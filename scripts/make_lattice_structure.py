#!/usr/bin/python3
"""Builds a large structure from real molecules: copies of a bundled PQR on a cubic lattice,
each copy rotated at random about its centre, so that a protein's real charge distribution
(and its net charge) repeats through the box. Used for large-structure benchmarks and tests
(data/README.md says how each was made); the files are generated, never committed.

    scripts/make_lattice_structure.py data/achbp.pqr --atoms 300000 -o /tmp/big.pqr
    scripts/make_lattice_structure.py data/actin_dimer.pqr --copies 4x4x4 --gap 5 -o big.pqr

The lattice pitch is the copy's largest extent (its bounding sphere's diameter) plus --gap Å,
so copies never overlap. Atom records are written in PDB2PQR's column layout.
"""

import argparse
import math
import random
import sys


def read_pqr(path):
    """(name, resname, x, y, z, q, r) of every ATOM/HETATM record, fields from the right."""
    atoms = []
    with open(path) as f:
        for line in f:
            if not line.startswith(("ATOM", "HETATM")):
                if line.startswith("ENDMDL"):
                    break
                continue
            t = line.split()
            x, y, z, q, r = (float(v) for v in t[-5:])
            atoms.append((t[2], t[3], x, y, z, q, r))
    if not atoms:
        sys.exit(f"make_lattice_structure: {path}: no atoms")
    return atoms


def rotation(rng):
    """A uniformly random rotation matrix (from a random unit quaternion)."""
    u1, u2, u3 = rng.random(), rng.random(), rng.random()
    a, b = math.sqrt(1 - u1), math.sqrt(u1)
    w, x, y, z = a * math.sin(2 * math.pi * u2), a * math.cos(2 * math.pi * u2), \
        b * math.sin(2 * math.pi * u3), b * math.cos(2 * math.pi * u3)
    return [[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]]


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input", help="a PQR file (e.g. data/achbp.pqr)")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--atoms", type=int, help="about this many atoms: the near-cubic lattice (sides differing by at most "
                                            "one copy) whose atom count is closest")
    g.add_argument("--copies", help="NXxNYxNZ copies")
    p.add_argument("--gap", type=float, default=4.0, help="Å between neighbouring copies' bounding spheres")
    p.add_argument("--seed", type=int, default=1, help="seed of the rotations")
    p.add_argument("-o", "--output", required=True)
    a = p.parse_args(argv)
    atoms = read_pqr(a.input)
    n = len(atoms)
    cx = sum(t[2] for t in atoms) / n
    cy = sum(t[3] for t in atoms) / n
    cz = sum(t[4] for t in atoms) / n
    radius = max(math.sqrt((t[2] - cx) ** 2 + (t[3] - cy) ** 2 + (t[4] - cz) ** 2) for t in atoms)
    pitch = 2 * radius + a.gap
    if a.atoms:
        side = max(1, round((a.atoms / n) ** (1 / 3)))
        shapes = [(x, y, z) for x in range(max(1, side - 1), side + 2) for y in range(max(1, x - 1), x + 1)
                  for z in range(max(1, x - 1), y + 1)]
        counts = min(shapes, key=lambda c: (abs(c[0] * c[1] * c[2] * n - a.atoms), c))
    else:
        counts = tuple(int(v) for v in a.copies.lower().split("x"))
        if len(counts) != 3 or min(counts) < 1:
            sys.exit("make_lattice_structure: --copies expects NXxNYxNZ")
    rng = random.Random(a.seed)
    serial = 0
    with open(a.output, "w") as out:
        out.write(f"REMARK   1 {counts[0]}x{counts[1]}x{counts[2]} copies of {a.input} ({n} atoms each), "
                  f"randomly rotated, lattice pitch {pitch:.3f} A, seed {a.seed}\n")
        for i in range(counts[0]):
            for j in range(counts[1]):
                for k in range(counts[2]):
                    m = rotation(rng)
                    ox, oy, oz = i * pitch, j * pitch, k * pitch
                    chain = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[(i * counts[1] * counts[2] + j * counts[2] + k) % 26]
                    for (name, res, x, y, z, q, r) in atoms:
                        dx, dy, dz = x - cx, y - cy, z - cz
                        px = ox + m[0][0] * dx + m[0][1] * dy + m[0][2] * dz
                        py = oy + m[1][0] * dx + m[1][1] * dy + m[1][2] * dz
                        pz = oz + m[2][0] * dx + m[2][1] * dy + m[2][2] * dz
                        serial += 1
                        out.write(f"ATOM  {serial % 100000:5d} {name:<4s} {res:>3s} {chain}{(serial // 100) % 10000:4d}    "
                                  f"{px:8.3f}{py:8.3f}{pz:8.3f} {q:7.4f} {r:6.4f}\n")
        out.write("END\n")
    print(f"wrote {a.output}: {serial} atoms ({counts[0]}x{counts[1]}x{counts[2]} copies of {n}), "
          f"box about {counts[0] * pitch:.0f} x {counts[1] * pitch:.0f} x {counts[2] * pitch:.0f} A")


if __name__ == "__main__":
    main(sys.argv[1:])
