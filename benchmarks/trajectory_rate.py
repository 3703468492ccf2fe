#!/usr/bin/env python3
"""Frames per second of espgrid's trajectory average (issues 24 and 37), end to end from positions in
memory: the frames are made beforehand (the first N atoms of a bundled structure, or copies of one
to reach N, each frame rotated by a small random angle and given 0.3 Å of thermal noise), so the
figure is espgrid's per-frame cost: the map through one compute session (FrameAverage, what
espgrid.average_map and espgrid-trajectory run), and the running mean and deviation. Reading the
trajectory file is measured separately (--read-dcd, with MDAnalysis, on a host that has it: the GPU
host has none). Also times a fresh espgrid.compute_map per frame, what a script without the
session pays.

  PYTHONPATH=build/python python3 benchmarks/trajectory_rate.py --atoms 3341 --frames 300 --backend cuda
  PYTHONPATH=build/python python3 benchmarks/trajectory_rate.py --atoms 100000 --accuracy 1e-3 --frames 60
  PYTHONPATH=build/python python3 benchmarks/trajectory_rate.py --model pb --atoms 11754 --frames 60   # PB frames
  PYTHONPATH=build/python python3 benchmarks/trajectory_rate.py --model pb --backend cpu --spacing 2 --frames 5
  PYTHONPATH=build/python python3 benchmarks/trajectory_rate.py --model pb --atoms 44016 --devices 0,1   # 2 GPUs
  mpirun -np 2 python3 benchmarks/trajectory_rate.py --model pb --atoms 11754 --frames 1000 --mpi   # 2 ranks

--mpi (under mpirun, mpi4py): the frames shared out as espgrid-trajectory shares them
(espgrid.frames: each rank a contiguous block, on its host's GPU in turn, its own accumulators), the
ranks' exact sums merged on rank 0; the rate is all frames over the wall from a barrier before the
first to a barrier after the last (the merge timed apart). Rank 0 prints and writes the JSON.

--model pb takes the structure's radii (its PQR's radius column).

Prints one JSON object (and writes it to --out): frames/s, seconds per frame by stage, the grid.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def read_pqr(path):
    xyz, q, r = [], [], []
    for line in open(path):
        if line.startswith(("ATOM", "HETATM")):
            t = line.split()
            xyz.append([float(t[-5]), float(t[-4]), float(t[-3])])
            q.append(float(t[-2]))
            r.append(float(t[-1]))
    return np.array(xyz), np.array(q), np.array(r)


def structure(path, atoms):
    """The first `atoms` atoms of `path`, or copies of it side by side (5 Å apart) to reach them:
    positions, charges and radii."""
    xyz, q, r = read_pqr(path)
    if atoms <= len(q):
        return xyz[:atoms], q[:atoms], r[:atoms]
    extent = xyz.max(axis=0) - xyz.min(axis=0) + 5.0
    copies = -(-atoms // len(q))
    side = int(np.ceil(copies ** (1 / 3)))
    parts = []
    for c in range(copies):
        shift = extent * np.array([c % side, (c // side) % side, c // (side * side)])
        parts.append(xyz + shift)
    return np.concatenate(parts)[:atoms], np.tile(q, copies)[:atoms], np.tile(r, copies)[:atoms]


def phase_totals(engines):
    """{phase: seconds} summed over the engines' frames so far."""
    totals = {}
    for e in engines:
        for name, seconds in e.phase_seconds.items():
            totals[name] = totals.get(name, 0.0) + seconds
    return totals


def frames_of(xyz, count, seed):
    """`count` frames: a small random rotation about the centre and 0.3 Å of Gaussian noise each."""
    rng = np.random.default_rng(seed)
    centre = xyz.mean(axis=0)
    out = np.empty((count,) + xyz.shape)
    for f in range(count):
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        angle = rng.normal(scale=0.02)  # radians
        k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
        rotation = np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k
        out[f] = (xyz - centre) @ rotation.T + centre + rng.normal(scale=0.3, size=xyz.shape)
    return out


def make_engines(jobs, per_job, q, radii, args, source):
    """`per_job` frame accumulators for each job (a device's options), as average_map makes them."""
    from espgrid import _espgrid
    return [_espgrid.FrameAverage(job, job.explicit_grid, q, args.std, source,
                                  radii if args.model == "pb" else None) for job in jobs for _ in range(per_job)]


def warm_up(engines, frame):
    """Each engine's first frame: its buffers and the device's first use, kept out of the rate."""
    for e in engines:
        e.add_frame(frame, "frame 0")
        e.finish()


def device_jobs(devices, parsed, grid, options):
    """The parsed options for each device (None: the default device, `parsed` itself)."""
    import espgrid
    return [parsed if d is None else espgrid.map_options(**espgrid._with_grid(grid, dict(options, device=d)))
            for d in devices]


def emit(result, out):
    text = json.dumps(result, indent=2)
    print(text)
    if out:
        with open(out, "w") as f:
            f.write(text + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--structure", default=os.path.join(ROOT, "data", "actin_dimer.pqr"))
    ap.add_argument("--atoms", type=int, default=3341, help="3,341: MDAnalysis' adk test system's size")
    ap.add_argument("--frames", type=int, default=300)
    ap.add_argument("--spacing", type=float, default=1.0)
    ap.add_argument("--padding", type=float, default=10.0)
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--kernel", default=None)
    ap.add_argument("--model", default="coulomb")
    ap.add_argument("--accuracy", type=float, default=None)
    ap.add_argument("--std", action="store_true", help="also the standard deviation")
    ap.add_argument("--fresh-frames", type=int, default=20, help="frames timed with a fresh compute_map each")
    ap.add_argument("--engines", type=int, default=None,
                    help="accumulators on each device, frames dealt round-robin: N frames in flight (default: "
                         "espgrid.frames.frames_in_flight on a GPU, as average_map runs, 1 on the CPU)")
    ap.add_argument("--devices", default=None,
                    help="GPUs to deal frames to round-robin, --engines accumulators each (e.g. 0,1: what "
                         "--devices all does in espgrid-trajectory); the sums merged at the end")
    ap.add_argument("--mpi", action="store_true", help="share the frames over MPI ranks (run under mpirun)")
    ap.add_argument("--seed", type=int, default=24)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    import espgrid
    from espgrid import _espgrid
    from espgrid.frames import frames_in_flight

    xyz, q, radii = structure(args.structure, args.atoms)
    frames = frames_of(xyz, args.frames + 1, args.seed)  # frame 0 warms up: the device's first use
    options = {"backend": args.backend, "model": args.model}
    if args.kernel:
        options["kernel"] = args.kernel
    if args.accuracy:
        options["accuracy"] = args.accuracy
    if args.model == "debye":
        options.update(dielectric=78.54, ionic_strength=0.15)
    box = np.array([frames.reshape(-1, 3).min(axis=0), frames.reshape(-1, 3).max(axis=0)])
    grid = espgrid.grid_around(box, spacing=args.spacing, padding=args.padding)
    parsed = espgrid.map_options(**espgrid._with_grid(grid, dict(options)))
    if args.engines is None:  # as average_map deals them
        args.engines = frames_in_flight(parsed) if args.backend == "cuda" else 1
    source = _espgrid.describe_source(f"{args.atoms} atoms, synthetic frames", _espgrid.structure_from_arrays(xyz, q))

    if args.mpi:
        return over_ranks(args, frames, q, radii, options, grid, parsed, source)
    t = time.perf_counter()
    devices = [int(d) for d in args.devices.split(",")] if args.devices else [None]
    engines = make_engines(device_jobs(devices, parsed, grid, options), args.engines, q, radii, args, source)
    engine = engines[0]
    setup = time.perf_counter() - t
    t = time.perf_counter()
    warm_up(engines, frames[0])
    first = time.perf_counter() - t
    k0 = sum(e.kernel_seconds for e in engines)
    x0 = sum(e.transfer_seconds for e in engines)
    phases0 = phase_totals(engines)
    # The frames are queued (add_frame returns while the frame is computed, as espgrid.average_map
    # reads the next one meanwhile) and finish() waits for the last: the rate is frames over that.
    queued = []
    t0 = time.perf_counter()
    for f in range(1, args.frames + 1):
        t = time.perf_counter()
        engines[f % len(engines)].add_frame(frames[f], f"frame {f}")
        queued.append(time.perf_counter() - t)
    for e in engines:
        e.finish()
    total = time.perf_counter() - t0
    per_frame = queued
    for e in engines[1:]:
        engine.merge(e.limbs, e.frames)
    mean_map = engine.mean()
    assert np.isfinite(np.asarray(mean_map.values)).all() and engine.frames == args.frames + len(engines)

    fresh = []
    for f in range(1, min(args.fresh_frames, args.frames) + 1):
        t = time.perf_counter()
        espgrid.compute_map(_espgrid.structure_from_arrays(frames[f], q, radii if args.model == "pb" else None),
                            **espgrid._with_grid(grid, dict(options)))
        fresh.append(time.perf_counter() - t)

    dims = [int(d) for d in parsed.explicit_grid.dims]
    result = {
        "atoms": args.atoms, "frames": args.frames, "grid": dims, "points": int(np.prod(dims)),
        "spacing_A": args.spacing, "options": options, "kernel": engine.kernel,
        "frames_per_second": args.frames / total,
        "seconds_per_frame": total / args.frames,
        "add_frame_wait_seconds": {"median": float(np.median(per_frame)), "max": float(max(per_frame))},
        "sums": "device" if engine.sums_on_device else "host",
        "engines": args.engines, "devices": args.devices or "the default",
        "kernel_seconds_per_frame": (sum(e.kernel_seconds for e in engines) - k0) / args.frames,
        "transfer_seconds_per_frame": (sum(e.transfer_seconds for e in engines) - x0) / args.frames,
        # PB and MSM: each phase's seconds a frame (summed over the engines, so with two frames in
        # flight a phase's figure is its time a frame, not the wall it adds).
        "phase_seconds_per_frame": {name: (seconds - phases0.get(name, 0.0)) / args.frames
                                    for name, seconds in phase_totals(engines).items()},
        "setup_seconds": setup, "first_frame_seconds": first,
        "fresh_compute_map_seconds_per_frame_median": float(np.median(fresh)) if fresh else None,
        "atom_evaluations_per_second_in_kernel": (args.atoms * float(np.prod(dims)) /
                                                  max((sum(e.kernel_seconds for e in engines) - k0) / args.frames,
                                                      1e-12)),
    }
    emit(result, args.out)


def over_ranks(args, frames, q, radii, options, grid, parsed, source):
    """--mpi: this rank's block of frames 1..N on its GPU (espgrid.frames.rank_device), the rate
    over every rank's frames, the sums merged on rank 0 (espgrid.frames.Ranks.merge_sums)."""
    from espgrid import frames as shared
    ranks = shared.world()
    if ranks.comm is None:
        sys.exit("trajectory_rate: --mpi needs several ranks (mpirun -np N, with mpi4py)")
    devices = shared.rank_device(ranks, {}, [int(d) for d in args.devices.split(",")] if args.devices else None)
    engines = make_engines(device_jobs(devices or [None], parsed, grid, options), args.engines, q, radii, args, source)
    warm_up(engines, frames[0])
    mine = ranks.block(range(1, args.frames + 1))
    ranks.comm.Barrier()
    t0 = time.perf_counter()
    for i, f in enumerate(mine):
        engines[i % len(engines)].add_frame(frames[f], f"frame {f}")
    for e in engines:
        e.finish()
    for e in engines[1:]:
        engines[0].merge(e.limbs, e.frames)
    busy = time.perf_counter() - t0
    ranks.comm.Barrier()
    total = time.perf_counter() - t0
    t1 = time.perf_counter()
    ranks.merge_sums(engines[0])
    merge = time.perf_counter() - t1
    busy_all = ranks.comm.gather(busy, root=0)
    if not ranks.root:
        return 0
    assert engines[0].frames == args.frames + ranks.size * len(engines)
    assert np.isfinite(np.asarray(engines[0].mean().values)).all()
    dims = [int(d) for d in parsed.explicit_grid.dims]
    result = {"atoms": args.atoms, "frames": args.frames, "grid": dims, "points": int(np.prod(dims)),
              "spacing_A": args.spacing, "options": options, "kernel": engines[0].kernel, "ranks": ranks.size,
              "devices_of_rank_0": devices, "engines_per_rank": len(engines),
              "frames_per_second": args.frames / total, "seconds": total,
              "rank_busy_seconds": busy_all, "merge_seconds": merge}
    emit(result, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
