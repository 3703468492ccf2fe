#!/usr/bin/python3
"""Writes a small synthetic trajectory to try espgrid-trajectory on (README, Python):

    /usr/bin/python3 python/examples/make_demo_trajectory.py out/fas2-wobble.dcd [--frames 10]

The frames are data/fasciculin2.pqr moved as a rigid body: turned by up to ±6° about a tilted
axis through its centre and shifted by up to ±1 Å, frame by frame along a sine. They are not
molecular dynamics; they exist so that the README's commands run on any machine. Read them
with the PQR as topology (it carries the charges): espgrid-trajectory data/fasciculin2.pqr
out/fas2-wobble.dcd -o out/mean.dx.
"""

import argparse
import os
import warnings

import numpy as np


def rotation(angle_deg, axis):
    a = np.radians(angle_deg)
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(a) * k + (1 - np.cos(a)) * k @ k


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("output", help="trajectory to write (.dcd, .xtc, ... as MDAnalysis writes)")
    p.add_argument("--frames", type=int, default=10)
    p.add_argument("--topology", default=os.path.join(here, "..", "..", "data", "fasciculin2.pqr"))
    args = p.parse_args()
    warnings.filterwarnings("ignore")  # MDAnalysis: no unit cell in a PQR, deprecations
    import MDAnalysis as mda

    universe = mda.Universe(args.topology)
    base = universe.atoms.positions.astype(np.float64)
    centre = base.mean(axis=0)
    with mda.Writer(args.output, len(universe.atoms)) as writer:
        for f in range(args.frames):
            phase = 2 * np.pi * f / args.frames
            turned = (base - centre) @ rotation(6 * np.sin(phase), (1, 2, 3)).T + centre
            universe.atoms.positions = turned + np.array([1.0, -0.5, 0.5]) * np.sin(phase)
            writer.write(universe.atoms)
    print(f"wrote {args.output}: {args.frames} frames of {len(universe.atoms)} atoms")


if __name__ == "__main__":
    main()
