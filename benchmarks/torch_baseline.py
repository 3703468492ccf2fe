#!/usr/bin/env python3
"""espgrid against "a quick PyTorch script": the same Coulomb map of a real structure computed
the way a PyTorch user would write it, timed with CUDA events, checked against espgrid's map.

Two PyTorch versions, both float32 on the GPU, points in chunks so that a chunk's
points x atoms matrix stays under --chunk-elements:
  cdist      phi = (q / torch.cdist(points, atoms)).sum(1): the one-liner. cdist switches to
             a matrix-multiply form (|p|^2 + |a|^2 - 2 p.a) for large inputs, which loses
             digits when the coordinates are large next to the distances.
  broadcast  dx, dy, dz by broadcasting, q * rsqrt(dx^2 + dy^2 + dz^2 + a^2), summed: what a
             careful user writes.
espgrid's figure is `espgrid map --backend cuda` on the same grid (its kernel time, and the
process wall time); its map is the reference for the error, since espgrid's default kernel is
checked against a double-precision oracle (README, Accuracy).

  /usr/bin/python3 benchmarks/torch_baseline.py data/actin_dimer.pqr --espgrid build/espgrid \\
      --spacing 0.5 --out benchmarks/results/...

Prints a table and writes torch-baseline.json to --out.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

SOFTENING = 1e-4  # Å, espgrid's close-contact softening (README, Grid, physics and units)
K_KT = 560.459    # kT·Å/e² at 298.15 K: espgrid's default unit (coulomb model, dielectric 1)


def read_atoms(espgrid, path):
    out = subprocess.run([espgrid, "atoms", path], check=True, capture_output=True, text=True).stdout
    rows = [l.split()[:4] for l in out.splitlines() if l.strip() and not l.startswith("#")]
    a = np.array(rows, dtype=np.float64)
    return a[:, :3], a[:, 3]


def read_mrc(path):
    with open(path, "rb") as f:
        header = f.read(1024)
        nx, ny, nz = np.frombuffer(header[:12], dtype="<i4")
        ext = int(np.frombuffer(header[92:96], dtype="<i4")[0])
        f.seek(1024 + ext)
        data = np.frombuffer(f.read(), dtype="<f4")
    return data.reshape(nz, ny, nx)  # x fastest


def run_espgrid(args, origin, dims, workdir):
    out = os.path.join(workdir, "espgrid.mrc")
    cmd = [args.espgrid, "map", args.structure, "-o", out, "--backend", "cuda",
           "--origin", ",".join(repr(float(v)) for v in origin), "--dims", ",".join(str(d) for d in dims),
           "--spacing", repr(args.spacing)]
    best = None
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if r.returncode != 0:
            sys.exit(f"torch_baseline: {' '.join(cmd)} failed:\n{r.stderr}")
        m = re.search(r"kernel (\S+) (\S+),", r.stdout)
        kernel = float(m.group(1)) * {"s": 1.0, "ms": 1e-3, "µs": 1e-6}[m.group(2)]
        if best is None or kernel < best[0]:
            best = (kernel, wall, r.stdout)
    return read_mrc(out), best


def torch_map(torch, kind, atoms, q, origin, dims, h, chunk_elements, device):
    nx, ny, nz = dims
    a = torch.tensor(atoms - origin, dtype=torch.float32, device=device)  # positions relative to the origin
    qq = torch.tensor(q * K_KT, dtype=torch.float32, device=device)
    xs = torch.arange(nx, device=device, dtype=torch.float32) * h
    ys = torch.arange(ny, device=device, dtype=torch.float32) * h
    out = torch.empty(nz, ny, nx, dtype=torch.float32, device=device)
    rows_per_chunk = max(1, chunk_elements // (nx * len(q)))
    for k in range(nz):
        z = torch.full((1,), k * h, device=device)
        for j0 in range(0, ny, rows_per_chunk):
            yy, xx = torch.meshgrid(ys[j0:j0 + rows_per_chunk], xs, indexing="ij")
            pts = torch.stack([xx.reshape(-1), yy.reshape(-1), z.expand(xx.numel())], 1)
            if kind == "cdist":
                phi = (qq / torch.cdist(pts, a)).sum(1)
            else:
                d = pts[:, None, :] - a[None, :, :]
                phi = (qq * torch.rsqrt((d * d).sum(2) + SOFTENING ** 2)).sum(1)
            out[k, j0:j0 + rows_per_chunk] = phi.reshape(-1, nx)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("structure")
    p.add_argument("--espgrid", default=os.path.join(os.path.dirname(__file__), "..", "build", "espgrid"))
    p.add_argument("--spacing", type=float, default=0.5)
    p.add_argument("--padding", type=float, default=10.0)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--chunk-elements", type=int, default=1 << 27)
    p.add_argument("--out", default=".")
    args = p.parse_args()
    import torch
    if not torch.cuda.is_available():
        sys.exit("torch_baseline: PyTorch sees no CUDA device")
    atoms, q = read_atoms(args.espgrid, args.structure)
    lo, hi = atoms.min(0) - args.padding, atoms.max(0) + args.padding
    dims = [int(np.floor((hi[d] - lo[d]) / args.spacing)) + 1 for d in range(3)]
    origin = lo
    evaluations = float(np.prod(dims)) * len(q)
    results = []
    with tempfile.TemporaryDirectory() as work:
        ref, (kernel_s, wall_s, summary) = run_espgrid(args, origin, dims, work)
    scale = np.sqrt(np.mean(ref.astype(np.float64) ** 2))
    results.append({"method": "espgrid map --backend cuda", "seconds": kernel_s, "wall_seconds": wall_s,
                    "evaluations_per_second": evaluations / kernel_s, "relative_rms_vs_espgrid": 0.0})
    device = torch.device("cuda")
    for kind in ("cdist", "broadcast"):
        times = []
        for run in range(args.repeats + 1):
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            start.record()
            m = torch_map(torch, kind, atoms, q, origin, dims, args.spacing, args.chunk_elements, device)
            stop.record()
            torch.cuda.synchronize()
            if run > 0:  # the first run is the warm-up
                times.append((start.elapsed_time(stop) / 1e3, time.perf_counter() - t0))
        times.sort()
        gpu_s, wall = times[len(times) // 2]
        diff = m.cpu().numpy().astype(np.float64) - ref
        results.append({"method": f"PyTorch {torch.__version__} {kind}", "seconds": gpu_s, "wall_seconds": wall,
                        "evaluations_per_second": evaluations / gpu_s,
                        "relative_rms_vs_espgrid": float(np.sqrt(np.mean(diff ** 2)) / scale),
                        "max_abs_diff_kT_e": float(np.abs(diff).max())})
    name = os.path.basename(args.structure)
    print(f"{name}: {len(q)} atoms, grid {dims[0]}x{dims[1]}x{dims[2]} at {args.spacing} Å "
          f"({evaluations:.3e} evaluations), {torch.cuda.get_device_name(0)}")
    print(f"{'METHOD':34s} {'GPU s':>9s} {'WALL s':>9s} {'EVALS/s':>10s} {'REL RMS':>9s}")
    for r in results:
        print(f"{r['method']:34s} {r['seconds']:9.4f} {r['wall_seconds']:9.3f} {r['evaluations_per_second']:10.3e} "
              f"{r['relative_rms_vs_espgrid']:9.2e}")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "torch-baseline.json"), "w") as f:
        json.dump({"structure": name, "atoms": len(q), "dims": dims, "spacing": args.spacing,
                   "device": torch.cuda.get_device_name(0), "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
