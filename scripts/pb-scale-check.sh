#!/usr/bin/env bash
# PB at scale on a GPU host (issue 33), in about 5 minutes once built (8 with a cold build):
#   build   espgrid, test_pb, test_pb_physics, test_pb_scale (no VTK/Python; incremental when
#           $BUILD_DIR exists);
#   test    the PB GPU tests with the GPU required (the device pipeline against the all-on-device
#           path it replaces, node for node; energies; the refusal of a grid beyond the device),
#           and compute-sanitizer memcheck over one pipeline case;
#   time    the 161³ map of four actin dimers (47,016 atoms, docs/pb.md's row) and 18 AChBPs at
#           1 Å (289,620 atoms), each before (ESPGRID_PB_PIPELINE=0: host-prepared inputs) and after
#           (the device pipeline): process wall, host preparation, device phases, solve, GPU peak;
#           the before/after maps compared;
#   capsid  benchmarks/make_capsid.py's 1.93 M-atom capsid at 1 Å, then at the finest spacing whose
#           memory estimate fits GPU 0: points, bytes a point (estimate and measured peak), times;
#   process where a whole process's time goes beyond its reported work: CUDA's start and teardown
#           alone (benchmarks/cuda_startup.cu), `espgrid --version`, the 47k and 290k maps with
#           ESPGRID_TRACE_PROCESS's stamps, CUDA's module loading lazy and eager;
#   mpi     `--devices all` and `mpirun espgrid map --model pb` with 1, 2, 4 ranks: maps compared
#           with one process's where this build solves PB across ranks (hypre), else the refusals
#           checked (clear message, non-zero exit, no file).
# Logs, JSON summaries and summary.txt go to $OUT (default benchmarks/results/pb-scale-DATE).
#
#   bash scripts/pb-scale-check.sh                 # every phase
#   bash scripts/pb-scale-check.sh test time       # some phases (build dir must exist)
#   bash scripts/pb-scale-check.sh build; bash scripts/pb-scale-check.sh test time capsid mpi
#                                                  # two commands where one is limited to ~5 min
# Environment: OUT, BUILD_DIR (build-pb-scale), WORK (/tmp/espgrid-pb-scale), PY (a python3
# with numpy and scipy for the capsid; the first on PATH), MAX_POINTS (2147483647: the largest
# grid tried), CAPSID_PQR (reuse a capsid made before), BUDGET_S (400: no fine capsid tried
# after this many seconds). A dry run without a GPU:
#   PB_BACKEND=cpu SMALL=1 MAX_POINTS=300000 BUILD_DIR=build bash scripts/pb-scale-check.sh test time capsid mpi
# (hypre instead of the GPU; small molecules and grids; the capsid replaced by fasciculin-2).
set -uo pipefail
phases=" ${*:-build test time capsid mpi} "
want() { [[ "$phases" == *" $1 "* ]]; }
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.." || exit 1
OUT=${OUT:-benchmarks/results/pb-scale-$(date -u +%Y-%m-%d)}
BUILD_DIR=${BUILD_DIR:-build-pb-scale}
WORK=${WORK:-/tmp/espgrid-pb-scale}
PY=${PY:-$(command -v python3)}
MAX_POINTS=${MAX_POINTS:-2147483647}
PB_BACKEND=${PB_BACKEND:-cuda}
SMALL=${SMALL:-0}
mkdir -p "$OUT" "$WORK"
OUT=$(cd "$OUT" && pwd)
STEP_LOG_DIR=$OUT
source "$here/lib/steps.sh"
{ nvidia-smi; echo; nvidia-smi topo -m; } > "$OUT/nvidia-smi.txt" 2>&1
{ nproc; uptime; free -g; df -h "$WORK"; } > "$OUT/host.txt" 2>&1
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
echo "pb-scale-check: $gpus GPU(s), phases:$phases; logs in $OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

if want build; then
  step build-configure cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DESPGRID_VTK=OFF -DESPGRID_PYTHON=OFF \
    -DESPGRID_HYPRE=AUTO -DESPGRID_MPI=AUTO || { echo "configure failed"; exit 1; }
  step build cmake --build "$BUILD_DIR" -j "$(nproc)" --target espgrid test_pb test_pb_physics test_pb_scale ||
    { echo "build failed"; exit 1; }
fi
E="$BUILD_DIR/espgrid"
[ -x "$E" ] || { echo "no $E: run the build phase first"; exit 1; }
[ "$gpus" -ge 1 ] && export ESPGRID_REQUIRE_GPU=1  # a GPU case that skips is a failure here

# relative_rms A B [LIMIT]: float maps (.mrc or .dx) compared node for node; exit 1 above LIMIT.
relative_rms() {
  "$PY" - "$@" <<'EOF'
import array, math, struct, sys
def values(path):
    if path.endswith(".mrc"):
        with open(path, "rb") as f:
            head = f.read(1024)
            nx, ny, nz, mode = struct.unpack("<4i", head[:16])
            extended = struct.unpack("<i", head[92:96])[0]
            assert mode == 2, f"{path}: MRC mode {mode}, not float32"
            f.seek(1024 + extended)
            a = array.array("f")
            a.fromfile(f, nx * ny * nz)
            return a
    out, on = [], False
    for line in open(path):
        if line.startswith("object 3"):
            on = True
            continue
        if on:
            if line.startswith(("attribute", "object")):
                break
            out += [float(t) for t in line.split()]
    return out
a, b = values(sys.argv[1]), values(sys.argv[2])
limit = float(sys.argv[3]) if len(sys.argv) > 3 else 1e-6
assert len(a) == len(b) and len(a) > 1000, (len(a), len(b))
try:  # numpy where there is one (19 M nodes take ~20 s in plain Python)
    import numpy as np
    x, y = np.asarray(a, np.float64), np.asarray(b, np.float64)
    bad = int((~np.isfinite(x)).sum() + (~np.isfinite(y)).sum())
    num, den, differ = float(((x - y) ** 2).sum()), float((y * y).sum()), int((x != y).sum())
except ImportError:
    bad = sum(1 for x in a if not math.isfinite(x)) + sum(1 for y in b if not math.isfinite(y))
    num = sum((x - y) ** 2 for x, y in zip(a, b))
    den = sum(y * y for y in b)
    differ = sum(1 for x, y in zip(a, b) if x != y)
rel = math.sqrt(num / den) if den > 0 else float("inf")
print(f"{sys.argv[1]} vs {sys.argv[2]}: relative RMS {rel:.2e} over {len(a)} nodes, {differ} differ, "
      f"{bad} non-finite (limit {limit:g})")
sys.exit(0 if rel <= limit and bad == 0 else 1)
EOF
}

# "$PY" -c "$WALL_OF" FILE COMMAND...: runs COMMAND, prints its process wall (CUDA's start included)
# and writes it, in seconds, to FILE (- for none); exits with its code.
WALL_OF='import subprocess, sys, time
t = time.perf_counter(); rc = subprocess.call(sys.argv[2:])
wall = time.perf_counter() - t
print(f"process wall {wall:.3f} s")
sys.argv[1] == "-" or open(sys.argv[1], "w").write(f"{wall:.4f}\n"); sys.exit(rc)'

# pb_map NAME args...: espgrid map --model pb --backend $PB_BACKEND, logged as NAME, its JSON summary in
# $OUT/NAME.json and the process wall in $OUT/NAME.wall.
pb_map() {
  local name=$1; shift
  step "$name" "$PY" -c "$WALL_OF" "$OUT/$name.wall" "$E" map --model pb --backend "$PB_BACKEND" \
    --json "$OUT/$name.json" "$@"
}

if want test; then
  step test-pb-scale "$BUILD_DIR/tests/test_pb_scale"
  step test-pb-gpu "$BUILD_DIR/tests/test_pb" --gtest_filter='*Gpu*'
  step test-pb-physics-gpu "$BUILD_DIR/tests/test_pb_physics" --gtest_filter='*Gpu*'
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  step memcheck-pipeline timeout 150 "$sanitizer" --tool memcheck --error-exitcode 99 \
    "$BUILD_DIR/tests/test_pb_scale" --gtest_filter='PbPipelineGpu.EnergyAndPotentialAreTheHostsAndThePeakIsMeasured'
fi

# The structures of `time` and `process` (copies of bundled proteins: scripts/make_lattice_structure.py,
# stdlib only) and docs/pb.md's 161³ grid over the 47k-atom one, in $grid161.
make_structures() {
  if [ "$SMALL" = 1 ]; then
    cp data/fasciculin2.pqr "$WORK/actin4.pqr"; cp data/achbp.pqr "$WORK/achbp18.pqr"; cells=32; big_spacing=2
  else
    "$PY" scripts/make_lattice_structure.py data/actin_dimer.pqr --copies 2x2x1 --gap 2 -o "$WORK/actin4.pqr" >/dev/null
    "$PY" scripts/make_lattice_structure.py data/achbp.pqr --atoms 300000 -o "$WORK/achbp18.pqr" >/dev/null
    cells=160; big_spacing=1
  fi
  # docs/pb.md's 161³ grid over the 47k-atom structure: 10 Å beyond its atoms along its longest axis.
  grid161=$("$PY" - "$WORK/actin4.pqr" "$cells" <<'EOF'
import sys
cells = int(sys.argv[2])
lo, hi = [1e9] * 3, [-1e9] * 3
for line in open(sys.argv[1]):
    if line.startswith(("ATOM", "HETATM")):
        v = [float(t) for t in line.split()[-5:-2]]
        lo = [min(a, b) for a, b in zip(lo, v)]
        hi = [max(a, b) for a, b in zip(hi, v)]
h = (max(b - a for a, b in zip(lo, hi)) + 20) / cells
origin = [(a + b) / 2 - cells / 2 * h for a, b in zip(lo, hi)]
n = cells + 1
print(f"--origin {origin[0]:.4f},{origin[1]:.4f},{origin[2]:.4f} --dims {n},{n},{n} --spacing {h:.5f}")
EOF
)
  echo "161^3 grid: $grid161" > "$OUT/grids.txt"
}

if want time; then
  make_structures
  # Three runs a path (the first pays CUDA's start; the summary takes the median of the last two).
  for run in 1 2 3; do
    ESPGRID_PB_PIPELINE=0 pb_map "47k-before-$run" "$WORK/actin4.pqr" -o "$WORK/47k-before.mrc" $grid161
    pb_map "47k-after-$run" "$WORK/actin4.pqr" -o "$WORK/47k-after.mrc" $grid161
  done
  # The same surface, charges and solver arithmetic: equal to float rounding (the test holds 1e-12 in double).
  step 47k-compare relative_rms "$WORK/47k-after.mrc" "$WORK/47k-before.mrc" 1e-6
  for run in 1 2; do
    ESPGRID_PB_PIPELINE=0 pb_map "290k-before-$run" "$WORK/achbp18.pqr" -o "$WORK/290k-before.mrc" --spacing $big_spacing --padding 10
    pb_map "290k-after-$run" "$WORK/achbp18.pqr" -o "$WORK/290k-after.mrc" --spacing $big_spacing --padding 10
  done
  step 290k-compare relative_rms "$WORK/290k-after.mrc" "$WORK/290k-before.mrc" 1e-6
  rm -f "$WORK"/47k-*.mrc "$WORK"/290k-*.mrc
fi

# Where a whole process's time goes beyond the work it reports (issue 33's 0.3 s and 0.7 s):
# CUDA's own start and teardown without espgrid (benchmarks/cuda_startup.cu), a process that
# starts no CUDA (--version), and the two maps with ESPGRID_TRACE_PROCESS's stamps
# (src/core/process_trace.h), with CUDA's module loading lazy and eager.
if want process; then
  make_structures
  nvcc_bin=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  step cuda-startup-build "$nvcc_bin" -O2 -o "$WORK/cuda_startup" benchmarks/cuda_startup.cu -lcuda &&
    for run in 1 2 3; do
      step "cuda-startup-$run" "$PY" -c "$WALL_OF" - "$WORK/cuda_startup"
      step "cuda-startup-quick-exit-$run" "$PY" -c "$WALL_OF" - "$WORK/cuda_startup" --quick-exit
      CUDA_VISIBLE_DEVICES=0 step "cuda-startup-one-gpu-$run" "$PY" -c "$WALL_OF" - "$WORK/cuda_startup"
    done
  for run in 1 2 3; do step "version-$run" "$PY" -c "$WALL_OF" - "$E" --version; done
  for loading in LAZY EAGER; do
    for run in 1 2 3; do
      CUDA_MODULE_LOADING=$loading ESPGRID_TRACE_PROCESS=1 pb_map "process-47k-$loading-$run" "$WORK/actin4.pqr" \
        -o "$WORK/47k-process.mrc" $grid161
    done
  done
  for run in 1 2; do
    ESPGRID_TRACE_PROCESS=1 pb_map "process-290k-$run" "$WORK/achbp18.pqr" -o "$WORK/290k-process.mrc" \
      --spacing $big_spacing --padding 10
  done
  rm -f "$WORK"/47k-process.mrc "$WORK"/290k-process.mrc
fi

if want capsid; then
  capsid=${CAPSID_PQR:-$WORK/capsid.pqr}
  [ "$SMALL" = 1 ] && capsid=data/fasciculin2.pqr
  if [ ! -s "$capsid" ]; then
    if [ ! -f benchmarks/make_capsid.py ]; then
      echo "== capsid: skipped (no benchmarks/make_capsid.py in this tree)"
    elif ! "$PY" -c 'import numpy, scipy.spatial' 2>/dev/null; then
      echo "== capsid: skipped ($PY has no numpy/scipy: set PY)"
    else
      step capsid-make "$PY" benchmarks/make_capsid.py data/achbp.pqr --per-unit 2 -o "$capsid"
    fi
  fi
  if [ -s "$capsid" ]; then
    pb_map capsid-1A "$capsid" -o "$WORK/capsid.mrc" --spacing 1 --padding 10
    rm -f "$WORK/capsid.mrc"
    # The finest spacing whose estimate fits GPU 0 (92 % of its total, less what is in use now):
    # the 1 Å run's dims and bytes a point scaled; the program checks the estimate again and
    # refuses before allocating, so a refusal only costs the reading of the input.
    free_mib=$(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits -i 0 2>/dev/null | head -1)
    [ "$PB_BACKEND" = cpu ] && free_mib=$(awk '/MemAvailable/ {print int($2 / 1024)}' /proc/meminfo)
    spacing=$("$PY" - "$OUT/capsid-1A.log" "$OUT/capsid-1A.json" "${free_mib:-0}" "$MAX_POINTS" <<'EOF'
import json, re, sys
log, summary, free_mib, max_points = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
# The GPU's share where there is one (it comes first), else the host's (a CPU dry run).
bpp = float(re.search(r"the PB solve needs about .*?\((\d+) B a point", open(log).read()).group(1))
dims = json.load(open(summary))["grid"]["dims"]
extent = [d - 1 for d in dims]  # Å at 1 Å spacing
budget = min(0.92 * free_mib * 2**20 / bpp, max_points)
def points(h):
    p = 1.0
    for e in extent:
        p *= int(e / h + 0.999999) + 1
    return p
lo, hi = 0.2, 1.0  # points(h) falls as h grows
for _ in range(60):
    mid = (lo + hi) / 2
    lo, hi = (lo, mid) if points(mid) <= budget else (mid, hi)
print(f"{hi:.3f}")
EOF
)
    echo "capsid: GPU 0 has ${free_mib:-?} MiB free; finest spacing tried first: ${spacing:-none}" >> "$OUT/grids.txt"
    before_tries=$status
    for try in 1 2 3; do
      [ -n "$spacing" ] || break
      if [ $SECONDS -gt "${BUDGET_S:-400}" ]; then  # a fine capsid takes ~1 min: keep the whole within ~8
        echo "== capsid-finest: skipped after $SECONDS s (BUDGET_S=${BUDGET_S:-400}); run the capsid phase alone"
        break
      fi
      if pb_map "capsid-finest-$try" "$capsid" -o "$WORK/capsid-fine.mrc" --spacing "$spacing" --padding 10; then
        break
      fi
      grep -q "needs about" "$OUT/capsid-finest-$try.log" || break  # failed for another reason: see its log
      spacing=$("$PY" -c "print(f'{$spacing * 1.05:.3f}')")
      status=$before_tries  # a refusal by the estimate is the check working; the next try decides
    done
    rm -f "$WORK/capsid-fine.mrc"
  fi
fi

if want mpi; then
  mol=data/actin_dimer.pqr
  args=(--model pb --spacing 0.9 --pb-tolerance 1e-10)
  [ "$SMALL" = 1 ] && mol=data/fasciculin2.pqr && args=(--model pb --spacing 1.1 --pb-tolerance 1e-10)
  # --devices with several GPUs: refused (a PB grid is not split over GPUs yet), never one GPU silently.
  if [ "$gpus" -ge 2 ]; then
    "$E" map "$mol" "${args[@]}" --backend cuda --devices all -o "$WORK/devices-all.dx" >"$OUT/devices-all.log" 2>&1
    code=$?
    if [ $code != 0 ] && grep -q "solves on one GPU" "$OUT/devices-all.log" && [ ! -e "$WORK/devices-all.dx" ]; then
      echo "== devices-all: refused as expected (exit $code): $(tail -1 "$OUT/devices-all.log")"
    else
      echo "== devices-all: NOT refused as expected (exit $code); see devices-all.log"; status=1
    fi
  fi
  if ! command -v mpirun >/dev/null || ! ldd "$E" | grep libmpi >/dev/null; then  # not grep -q: ldd's SIGPIPE fails the pipe
    echo "== mpi: skipped (no mpirun, or $E was built without MPI)"
  else
    if [ "$gpus" -ge 1 ]; then step mpi-one-gpu "$E" map "$mol" "${args[@]}" --backend cuda -o "$WORK/pb-gpu.dx"; fi
    if "$E" map "$mol" "${args[@]}" --backend cpu -o "$WORK/pb-cpu.dx" >"$OUT/mpi-hypre-probe.log" 2>&1; then
      for np in 1 2 4; do
        step "mpi-np$np" mpirun -np $np --oversubscribe "$E" map "$mol" "${args[@]}" -o "$WORK/pb-mpi$np.dx" || continue
        # Both stop at relative residual 1e-10; the conditioning (~1e4) leaves ≲1e-6 in the solution.
        step "mpi-np$np-vs-one-process" relative_rms "$WORK/pb-mpi$np.dx" "$WORK/pb-cpu.dx" 1e-6
        [ -s "$WORK/pb-gpu.dx" ] && step "mpi-np$np-vs-one-gpu" relative_rms "$WORK/pb-mpi$np.dx" "$WORK/pb-gpu.dx" 1e-5
      done
    else
      echo "== mpi: no PB across ranks in this build: $(tail -1 "$OUT/mpi-hypre-probe.log")"
      echo "   (mpirun --model pb solves with hypre over the ranks; this host's build has none): checking the refusals"
      for backend in cuda auto; do
        mpirun -np 2 --oversubscribe "$E" map "$mol" "${args[@]}" --backend $backend -o "$WORK/pb-refused.dx" \
          >"$OUT/mpi-refused-$backend.log" 2>&1
        code=$?
        if [ $code != 0 ] && [ "$(grep -c 'espgrid: error' "$OUT/mpi-refused-$backend.log")" = 1 ] &&
          [ ! -e "$WORK/pb-refused.dx" ]; then
          echo "== mpi-refused-$backend: exit $code, one error: $(grep 'espgrid: error' "$OUT/mpi-refused-$backend.log")"
        else
          echo "== mpi-refused-$backend: NOT refused cleanly (exit $code); see mpi-refused-$backend.log"; status=1
        fi
      done
    fi
    rm -f "$WORK"/pb-*.dx
  fi
fi

# The table: every pb_map run from its JSON summary and process wall.
"$PY" - "$OUT" > "$OUT/summary.txt" <<'EOF'
import glob, json, os, re, statistics, sys
out = sys.argv[1]
rows = {}
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    name = os.path.basename(path)[:-5]
    try:
        j = json.load(open(path))
    except ValueError:
        continue
    t = j.get("timing", {})
    ph = t.get("phases", {})
    method = t.get("method") or ""
    host = ph.get("host preparation (tables, hierarchy shape, map memory)", ph.get("host inputs (beside the direct sums)"))
    peak = re.search(r"GPU peak ([\d.]+) (\w+)", method)
    unit = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}
    peak_b = float(peak.group(1)) * unit[peak.group(2)] if peak else None
    est = re.search(r"estimated about .*?\((\d+) B a point", method)  # the GPU's share first, else the host's
    its = re.search(r"(\d+) iterations", method)
    dims = j.get("grid", {}).get("dims", [0, 0, 0])
    points = dims[0] * dims[1] * dims[2]
    wall_path = os.path.join(out, name + ".wall")
    wall = float(open(wall_path).read()) if os.path.exists(wall_path) else None
    rows[name] = dict(points=points, wall=wall, kernel=t.get("kernel_seconds"), host=host,
                      solve=ph.get("device solve", ph.get("solve")), call=ph.get("device call (all, with copies)"),
                      boundary=ph.get("boundary"), its=its.group(1) if its else "?",
                      est=est.group(1) if est else "?", peak=peak_b)
def ms(v):
    return "-" if v is None else f"{v * 1e3:9.1f}"
print(f"{'run':24} {'points':>13} {'wall ms':>9} {'kernel':>9} {'host prep':>9} {'boundary':>9} "
      f"{'dev call':>9} {'solve':>9} {'its':>4} {'est B/pt':>8} {'peak B/pt':>9}")
for name, r in rows.items():
    per = f"{r['peak'] / r['points']:9.1f}" if r["peak"] and r["points"] else "        -"
    print(f"{name:24} {r['points']:13,d} {ms(r['wall'])} {ms(r['kernel'])} {ms(r['host'])} {ms(r['boundary'])} "
          f"{ms(r['call'])} {ms(r['solve'])} {r['its']:>4} {r['est']:>8} {per}")
print("\nmedians of the warm runs (runs 2..; ms): wall, kernel, host prep, solve")
for group in sorted({re.sub(r"-\d+$", "", n) for n in rows if re.search(r"-\d+$", n)}):
    warm = [r for n, r in rows.items() if re.fullmatch(re.escape(group) + r"-\d+", n) and not n.endswith("-1")]
    if not warm:
        continue
    med = lambda k: statistics.median([r[k] for r in warm if r[k] is not None] or [float("nan")]) * 1e3
    print(f"  {group:20} wall {med('wall'):8.1f}  kernel {med('kernel'):8.1f}  host prep {med('host'):8.1f}  "
          f"solve {med('solve'):8.1f}  ({len(warm)} runs)")
EOF
cat "$OUT/summary.txt"
echo "pb-scale-check: $( [ $status -eq 0 ] && echo all steps passed || echo SOME STEPS FAILED ); logs in $OUT"
exit $status
