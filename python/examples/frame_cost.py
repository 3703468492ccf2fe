#!/usr/bin/python3
"""What one trajectory frame costs: espgrid.FrameAverage on fasciculin-2 moved rigidly over 10
frames, kernel time against set-up and copies, per frame (the case for keeping atoms and
buffers on the GPU between frames; docs/python.md, Trajectories). Needs no MDAnalysis.

    PYTHONPATH=build/python /usr/bin/python3 python/examples/frame_cost.py [--backend cuda] [--spacing 0.5]
"""

import argparse
import os
import time

import numpy as np

import espgrid
from espgrid import _espgrid

here = os.path.dirname(os.path.abspath(__file__))
p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
p.add_argument("--backend", default="auto")
p.add_argument("--kernel")
p.add_argument("--spacing", type=float, default=0.5)
p.add_argument("--frames", type=int, default=10)
args = p.parse_args()

s = espgrid.read_structure(os.path.join(here, "..", "..", "data", "fasciculin2.pqr"))
step = np.array([0.7, -0.4, 0.3])
grid = espgrid.grid_around(np.vstack([s.positions, s.positions + step * (args.frames - 1)]), spacing=args.spacing)
options = espgrid.map_options(backend=args.backend, kernel=args.kernel, origin=grid.origin, dims=grid.dims,
                              spacing=grid.spacing)
average = _espgrid.FrameAverage(options, grid, s.charges, True, "frame_cost.py")
began = time.perf_counter()
for f in range(args.frames):
    average.add_frame(s.positions + step * f)
wall = time.perf_counter() - began
print(f"{average.kernel}, grid {grid.dims} = {grid.point_count:,} points, {len(s)} atoms, {args.frames} frames:")
print(f"  per frame: wall {wall / args.frames * 1e3:.1f} ms, kernel {average.kernel_seconds / args.frames * 1e3:.1f} ms, "
      f"set-up and copies {average.transfer_seconds / args.frames * 1e3:.1f} ms, "
      f"accumulation and Python {(wall - average.kernel_seconds - average.transfer_seconds) / args.frames * 1e3:.1f} ms")
