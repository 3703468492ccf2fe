#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: the end-to-end figures — a ~300,000-atom structure
# (data/achbp.pqr copied on a lattice by scripts/make_lattice_structure.py) mapped at 0.5 Å with
# the fastest exact kernel, process wall time against kernel time, writing .mrc (streamed while
# the GPU computes) and .dx (formatted on every core after it). Targets: wall <= 1.2 x kernel for
# .mrc, <= 1.4 x kernel for .dx. Also: `espgrid bench --sweep end-to-end` (every stage of mrc, dx
# and vti), the streaming and writer tests with the GPU required, and a sampled-oracle verify of
# the large structure. Logs go to $OUT_DIR (default benchmarks/results/end-to-end-DATE).
# Arguments pick phases (default: all, in this order): build test map bench. Where one command's
# time is limited, run `... build` first, then `... test map bench`.
#   ATOMS=300000 SPACING=0.5 MAP_DIR=/tmp bash scripts/end-to-end-check.sh
set -uo pipefail
phases=" ${*:-build test map bench} "
want() { [[ "$phases" == *" $1 "* ]]; }
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
OUT_DIR=${OUT_DIR:-benchmarks/results/end-to-end-$(date -u +%Y-%m-%d)}
BUILD_DIR=${BUILD_DIR:-build-e2e}
ATOMS=${ATOMS:-300000}
SPACING=${SPACING:-0.5}
MAP_DIR=${MAP_DIR:-/tmp}  # the maps are GBs: written there, removed after each run
STRUCTURE=${STRUCTURE:-$MAP_DIR/espgrid-lattice-$ATOMS.pqr}
mkdir -p "$OUT_DIR"
STEP_LOG_DIR=$OUT_DIR
source "$here/lib/steps.sh"
nvidia-smi > "$OUT_DIR/nvidia-smi.txt" 2>&1
{ echo "cores: $(nproc)"; grep -m1 'model name' /proc/cpuinfo; free -g | head -2; df -h "$MAP_DIR" | tail -1; } \
  > "$OUT_DIR/host.txt" 2>&1

if want build; then
  step build cmake -S . -B "$BUILD_DIR" -DESPGRID_VTK=OFF -DCMAKE_BUILD_TYPE=Release && \
    step build cmake --build "$BUILD_DIR" -j "$(nproc)" || { echo "build failed"; exit 1; }
fi
[ -x "$BUILD_DIR/espgrid" ] || { echo "no $BUILD_DIR/espgrid: run the build phase first"; exit 1; }
espgrid="$BUILD_DIR/espgrid"
export ESPGRID_REQUIRE_GPU=1

if [ ! -s "$STRUCTURE" ]; then
  python3 scripts/make_lattice_structure.py data/achbp.pqr --atoms "$ATOMS" -o "$STRUCTURE" > "$OUT_DIR/structure.txt" 2>&1 \
    || { echo "could not make $STRUCTURE"; cat "$OUT_DIR/structure.txt"; exit 1; }
fi

if want test; then
  # The CUDA streaming cases (one GPU; two workers on one GPU, planes out of order) and the writers.
  step test-streaming "$BUILD_DIR/tests/test_streaming"
  step test-writers "$BUILD_DIR/tests/test_writers"
  step ctest-gpu ctest --test-dir "$BUILD_DIR" -L gpu --output-on-failure -j 4
  step verify-sampled "$espgrid" verify "$STRUCTURE" --spacing 2 --sample 2000 --seed 1
fi

# One `espgrid map` process per run, timed from outside: the wall time a user waits, against the
# kernel time the run reports. Two runs per format (the first also creates the CUDA context and
# reads the structure cold).
time_map() {  # time_map FORMAT RUN
  local format=$1 run=$2 out="$MAP_DIR/espgrid-e2e.$1" log="$OUT_DIR/map-$1-$2.log"
  local t0 t1
  t0=$(date +%s.%N)
  "$espgrid" map "$STRUCTURE" -o "$out" --spacing "$SPACING" > "$log" 2>&1
  local rc=$?
  t1=$(date +%s.%N)
  local bytes
  bytes=$(stat -c %s "$out" 2>/dev/null || echo 0)
  rm -f "$out"
  awk -v t0="$t0" -v t1="$t1" -v rc="$rc" -v fmt="$format" -v run="$run" -v bytes="$bytes" '
    function secs(v, u) { return index(u, "ms") == 1 ? v / 1000 : (index(u, "s") == 1 ? v : v / 1e6) }
    /^time / {
      for (i = 1; i <= NF; ++i) if ($i == "kernel") { k = secs($(i + 1), $(i + 2)) }
    }
    END {
      wall = t1 - t0
      printf "%-4s run %d: exit %d, file %.2f GB, process wall %.2f s, kernel %.2f s, wall/kernel %.3f\n",
             fmt, run, rc, bytes / 1e9, wall, k, (k > 0 ? wall / k : 0)
    }' "$log" | tee -a "$OUT_DIR/summary.txt"
  [ "$rc" -eq 0 ] || status=1
}

if want map; then
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git rev-parse --short HEAD 2>/dev/null), $STRUCTURE ($ATOMS atoms), spacing $SPACING" \
    >> "$OUT_DIR/summary.txt"
  for run in 1 2; do
    time_map mrc "$run"
    time_map dx "$run"
  done
  echo "targets: wall/kernel <= 1.2 (mrc), <= 1.4 (dx)" | tee -a "$OUT_DIR/summary.txt"
fi

if want bench; then
  step bench-end-to-end "$espgrid" bench "$STRUCTURE" --sweep end-to-end --sweep-only --spacing "$SPACING" \
    --formats mrc,dx,vti --repeats 2 --warmup 0 --scratch "$MAP_DIR" --seed 1 --out "$OUT_DIR"
fi
echo "end-to-end-check: $( [ $status -eq 0 ] && echo all steps passed || echo SOME STEPS FAILED ); results in $OUT_DIR"
exit $status
