#!/usr/bin/env python3
"""The CPU kernels on a shared machine (issue 20): the README's acetazolamide example (18 atoms,
81³ points) with each CPU kernel, with no extra load and with busy loops on N cores, runs
interleaved so every kernel sees the same machine; median kernel time from espgrid's summary.

    /usr/bin/python3 benchmarks/shared_core.py [--espgrid build/espgrid] [--old OTHER_ESPGRID]
        [--runs 9] [--busy 0,1] [--out benchmarks/results/NAME.json]

--old times a second binary the same way (e.g. a build of the previous commit), side by side.
The target: with one core busy, the default kernel takes at most 2x cpu-reference's time.
"""

import argparse
import json
import multiprocessing
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

EXAMPLE = ["data/acetazolamide.xyz", "--origin", "-16,-6,5", "--dims", "81,81,81", "--spacing", "0.25"]
KERNELS = ["cpu-reference", "cpu-parallel", "cpu-simd"]
UNITS = {"ns": 1e-9, "µs": 1e-6, "ms": 1e-3, "s": 1.0}


def busy_loop(stop):
    while not stop.is_set():
        pass


def kernel_seconds(espgrid, kernel, out):
    r = subprocess.run([espgrid, "map", *EXAMPLE, "--kernel", kernel, "-o", out], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit(f"{espgrid} map --kernel {kernel} failed: {r.stderr}")
    m = re.search(r"kernel ([0-9.]+) (ns|µs|ms|s)", r.stdout)
    return float(m.group(1)) * UNITS[m.group(2)]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--espgrid", default="build/espgrid")
    p.add_argument("--old", help="a second espgrid binary to time side by side")
    p.add_argument("--runs", type=int, default=9)
    p.add_argument("--busy", default="0,1", help="comma list: cores kept busy by other processes")
    p.add_argument("--out")
    a = p.parse_args()
    binaries = {"new": a.espgrid} | ({"old": a.old} if a.old else {})
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "lig.dx")
        for busy in [int(b) for b in a.busy.split(",")]:
            stop = multiprocessing.Event()
            loops = [multiprocessing.Process(target=busy_loop, args=(stop,)) for _ in range(busy)]
            for loop in loops:
                loop.start()
            time.sleep(0.2)
            times = {(b, k): [] for b in binaries for k in KERNELS}
            for _ in range(a.runs):
                for b, exe in binaries.items():
                    for k in KERNELS:
                        times[(b, k)].append(kernel_seconds(exe, k, out))
            stop.set()
            for loop in loops:
                loop.join()
            for (b, k), t in times.items():
                results.append({"binary": b, "kernel": k, "busy_cores": busy, "median_ms": 1e3 * statistics.median(t),
                                "min_ms": 1e3 * min(t), "max_ms": 1e3 * max(t), "runs": len(t)})
    print(f"{'busy':>4} {'binary':>6} {'kernel':>14} {'median ms':>10} {'min':>8} {'max':>8}  x reference")
    for r in results:
        ref = next(q for q in results if q["binary"] == r["binary"] and q["busy_cores"] == r["busy_cores"]
                   and q["kernel"] == "cpu-reference")
        r["x_reference"] = r["median_ms"] / ref["median_ms"]
        print(f"{r['busy_cores']:>4} {r['binary']:>6} {r['kernel']:>14} {r['median_ms']:>10.1f} {r['min_ms']:>8.1f} "
              f"{r['max_ms']:>8.1f}  {r['x_reference']:.2f}")
    if a.out:
        meta = {"date": time.strftime("%Y-%m-%d %H:%M"), "machine": platform.node(), "cores": os.cpu_count(),
                "cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?"),
                "loadavg_before": os.getloadavg(), "binaries": binaries, "example": EXAMPLE}
        with open(a.out, "w") as f:
            json.dump({"meta": meta, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
