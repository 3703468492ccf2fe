#!/usr/bin/python3
"""Builds a virus-like capsid from a bundled protein: copies placed by icosahedral symmetry on a
shell, the test structure for PB maps where APBS runs out of memory (docs/pb.md, "At scale").

    benchmarks/make_capsid.py data/achbp.pqr --per-unit 2 -o /tmp/capsid.pqr
    # 120 copies of AChBP: 1,930,800 atoms, total charge -5960.4 e, shell radius 276 Å, extent 606 Å
    # (a 627³ grid at 1 Å with 10 Å padding: 246 M points). Takes ~30 s.

A real capsid of triangulation number T has 60·T subunits: 60 icosahedral positions, each
holding T quasi-equivalent copies. Here the asymmetric unit holds --per-unit copies of the
protein, each at its own direction: the first in general position (on no symmetry axis), each
next one the candidate direction farthest from every copy placed so far and all their symmetry
images (farthest-point sampling over a fixed set of candidates), so the copies spread evenly
over the shell. Each copy lies flat: its shortest principal axis points out of the shell. The 60 rotations of the icosahedral
group (generated from a 5-fold and a 3-fold rotation, closed under products) carry the unit
around the shell. The shell's radius is the smallest (to 0.5 Å) at which no atom of one copy
comes within --min-gap Å of an atom of another; by symmetry only the unit's copies need checking
against their neighbours. Charges are the protein's, so the capsid's total charge is
60·per-unit times the protein's. Atom records are written in PDB2PQR's column layout; the output
is generated, never committed (a 2 M-atom PQR is ~150 MB).
"""

import argparse
import math
import sys

import numpy as np
from scipy.spatial import cKDTree


def read_pqr(path):
    """Names, residue names, positions (N×3, Å), charges (e) and radii (Å) of the ATOM/HETATM records."""
    names, residues, xyz, q, r = [], [], [], [], []
    with open(path) as f:
        for line in f:
            if line.startswith("ENDMDL"):
                break
            if not line.startswith(("ATOM", "HETATM")):
                continue
            t = line.split()
            names.append(t[2])
            residues.append(t[3])
            xyz.append([float(v) for v in t[-5:-2]])
            q.append(float(t[-2]))
            r.append(float(t[-1]))
    if not xyz:
        sys.exit(f"make_capsid: {path}: no atoms")
    return names, residues, np.array(xyz), np.array(q), np.array(r)


def axis_rotation(axis, angle):
    """The rotation by `angle` (radians) about the unit vector `axis` (Rodrigues)."""
    a = np.asarray(axis, float) / np.linalg.norm(axis)
    k = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + math.sin(angle) * k + (1 - math.cos(angle)) * (k @ k)


def icosahedral_group():
    """The 60 proper rotations of the icosahedron: closure of a 5-fold rotation about a vertex
    (0, 1, φ) and a 3-fold rotation about a face centre (1, 1, 1)."""
    phi = (1 + math.sqrt(5)) / 2
    generators = [axis_rotation((0, 1, phi), 2 * math.pi / 5), axis_rotation((1, 1, 1), 2 * math.pi / 3)]
    group = [np.eye(3)]
    frontier = [np.eye(3)]
    while frontier:
        found = []
        for g in frontier:
            for h in generators:
                m = h @ g
                if not any(np.allclose(m, e, atol=1e-9) for e in group):
                    group.append(m)
                    found.append(m)
        frontier = found
    if len(group) != 60:
        raise RuntimeError(f"the icosahedral group came out with {len(group)} elements, not 60")
    return group


def frame_towards(direction, long_axis):
    """A rotation taking `long_axis` onto `direction` (both unit vectors)."""
    v = np.cross(long_axis, direction)
    s, c = np.linalg.norm(v), float(np.dot(long_axis, direction))
    if s < 1e-12:
        return np.eye(3) if c > 0 else axis_rotation(np.cross(long_axis, [1, 0, 0]) + [0, 0, 1e-9], math.pi)
    return axis_rotation(v, math.atan2(s, c))


def unit_directions(per_unit, group):
    """per_unit directions whose 60·per_unit symmetry images spread evenly over the sphere."""
    # A direction in general position: not on a 2-, 3- or 5-fold axis of the group.
    first = np.array([0.31, 0.17, 0.93])
    chosen = [first / np.linalg.norm(first)]
    rng = np.random.default_rng(7)  # fixed candidates: the same capsid every run
    candidates = rng.normal(size=(4000, 3))
    candidates /= np.linalg.norm(candidates, axis=1)[:, None]
    rotations = np.array(group)
    # A candidate near a symmetry axis comes close to its own images (on the axis its copies would
    # coincide), so its own images count as neighbours too.
    own = np.einsum("gij,kj->kgi", rotations[1:], candidates)
    own_nearest = np.einsum("kgi,ki->kg", own, candidates).max(axis=1)
    while len(chosen) < per_unit:
        images = np.einsum("gij,kj->gki", rotations, np.array(chosen)).reshape(-1, 3)
        nearest = np.maximum((candidates @ images.T).max(axis=1), own_nearest)  # cosine to the closest
        chosen.append(candidates[int(np.argmin(nearest))])
    return chosen


def unit_copies(xyz, per_unit, group):
    """The asymmetric unit: per_unit copies of the centred protein as (rotation, direction)."""
    centred = xyz - xyz.mean(axis=0)
    _, vectors = np.linalg.eigh(np.cov(centred.T))
    short_axis = vectors[:, 0]  # eigh sorts ascending: the protein's thinnest direction
    return centred, [(frame_towards(d, short_axis), d) for d in unit_directions(per_unit, group)]


def place(centred, copies, group, radius):
    """Every copy's atoms (list of N×3 arrays), in group order, unit copies innermost."""
    return [(g @ (rot @ centred.T)).T + radius * (g @ d) for g in group for rot, d in copies]


def closest_contact(centred, copies, group, radius, reach):
    """The smallest distance (Å) between an atom of a unit copy and an atom of any other copy."""
    placed = place(centred, copies, group, radius)
    centres = np.array([p.mean(axis=0) for p in placed])
    best = math.inf
    for u in range(len(copies)):
        tree = cKDTree(placed[u])
        for other in range(len(placed)):
            if other == u or np.linalg.norm(centres[other] - centres[u]) > reach:
                continue
            d, _ = tree.query(placed[other], k=1, distance_upper_bound=best)
            best = min(best, float(d.min()))
    return best


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input", help="a PQR file (e.g. data/achbp.pqr)")
    p.add_argument("--per-unit", type=int, default=2, help="copies in the asymmetric unit (T-number-like); 60 times "
                                                          "this many copies in all (default 2)")
    p.add_argument("--min-gap", type=float, default=3.0, help="closest allowed approach of two copies' atoms, Å")
    p.add_argument("-o", "--output", required=True)
    a = p.parse_args(argv)
    if a.per_unit < 1:
        sys.exit("make_capsid: --per-unit must be at least 1")
    names, residues, xyz, q, r = read_pqr(a.input)
    group = icosahedral_group()
    centred, copies = unit_copies(xyz, a.per_unit, group)
    extent = float(np.linalg.norm(centred, axis=1).max())
    reach = 2 * extent + a.min_gap
    # Bisection on the radius: contact grows with it (copies spread over a larger sphere).
    lo, hi = extent, extent * (1 + math.sqrt(60 * a.per_unit))
    while closest_contact(centred, copies, group, hi, reach) < a.min_gap:
        hi *= 1.5
    while hi - lo > 0.5:
        mid = 0.5 * (lo + hi)
        if closest_contact(centred, copies, group, mid, reach) >= a.min_gap:
            hi = mid
        else:
            lo = mid
    radius = hi
    placed = place(centred, copies, group, radius)
    n = len(names)
    total = len(placed) * n
    chains = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    with open(a.output, "w") as out:
        out.write(f"REMARK   1 icosahedral capsid: 60 x {a.per_unit} copies of {a.input} ({n} atoms each), "
                  f"shell radius {radius:.1f} A, closest contact >= {a.min_gap} A\n")
        serial = 0
        for c, atoms in enumerate(placed):
            chain = chains[c % len(chains)]
            for i in range(n):
                serial += 1
                x, y, z = atoms[i]
                out.write(f"ATOM  {serial % 100000:5d} {names[i]:<4s} {residues[i]:>3s} {chain}{(serial // 100) % 10000:4d}    "
                          f"{x:8.3f}{y:8.3f}{z:8.3f} {q[i]:7.4f} {r[i]:6.4f}\n")
        out.write("END\n")
    lo_box, hi_box = np.min([p.min(axis=0) for p in placed], axis=0), np.max([p.max(axis=0) for p in placed], axis=0)
    size = hi_box - lo_box
    print(f"wrote {a.output}: {total} atoms (60 x {a.per_unit} copies of {n}), total charge "
          f"{len(placed) * q.sum():+.3f} e, shell radius {radius:.1f} A, extent "
          f"{size[0]:.0f} x {size[1]:.0f} x {size[2]:.0f} A")


if __name__ == "__main__":
    main(sys.argv[1:])
