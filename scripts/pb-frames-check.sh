#!/usr/bin/env bash
# PB frame rates on a GPU host (issue 37): builds espgrid with the Python module in $BUILD_DIR
# (no VTK), then benchmarks/trajectory_rate.py --model pb on the first 3,341 atoms of the actin
# dimer, the whole dimer (11,754) and four copies (44,016), each at 1 Å, with each phase's time a
# frame (phase_seconds_per_frame). Extra runs: ESPGRID_PB_FRAMES_VARIANTS="NAME=ENV ..." repeats
# every structure with ENV set (e.g. "nograph=ESPGRID_PB_GRAPH=0"), interleaved with the default.
# JSON and logs in $LOG_DIR (default $OUT/pb-frames-check), packed into $OUT.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
LOG_DIR=${LOG_DIR:-${OUT:+$OUT/pb-frames-check}}
LOG_DIR=${LOG_DIR:-benchmarks/results/pb-frames-check-$(date -u +%Y-%m-%d)}
BUILD_DIR=${BUILD_DIR:-build-gpu}
REPEATS=${ESPGRID_PB_FRAMES_REPEATS:-2}
mkdir -p "$LOG_DIR"
STEP_LOG_DIR=$LOG_DIR
source "$here/lib/steps.sh"
PY=$(command -v python3)
nvidia-smi > "$LOG_DIR/machine.txt" 2>&1
hwy=(); [ -d .device/hwy ] && hwy=(-DCMAKE_PREFIX_PATH="$PWD/.device/hwy")
step configure cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DESPGRID_VTK=OFF -DESPGRID_PYTHON=ON \
  -DPython3_EXECUTABLE="$PY" -Dpybind11_DIR="$("$PY" -m pybind11 --cmakedir)" "${hwy[@]}" &&
  step build cmake --build "$BUILD_DIR" -j "$(nproc)" --target espgrid_python || { echo "build failed"; exit 1; }
export PYTHONPATH="$PWD/$BUILD_DIR/python"
variants="default= ${ESPGRID_PB_FRAMES_VARIANTS:-}"
for repeat in $(seq 1 "$REPEATS"); do
  for spec in "3341 120" "11754 60" "44016 30"; do
    set -- $spec
    for v in $variants; do
      name=${v%%=*}; env_setting=${v#*=}
      step "pb-$1-$name-$repeat" env $env_setting "$PY" benchmarks/trajectory_rate.py --model pb --backend cuda \
        --atoms "$1" --frames "$2" --fresh-frames 0 --out "$LOG_DIR/pb-$1-$name-$repeat.json"
    done
  done
done
"$PY" - "$LOG_DIR" <<'EOF' | tee "$LOG_DIR/summary.txt"
import glob, json, os, sys
for path in sorted(glob.glob(os.path.join(sys.argv[1], "pb-*.json"))):
    r = json.load(open(path))
    print(f"{os.path.basename(path)}: {r['frames_per_second']:.1f} frames/s, grid {r['grid']}")
    for name, s in r.get("phase_seconds_per_frame", {}).items():
        print(f"    {1e3 * s:8.3f} ms  {name}")
EOF
if [ -n "${OUT:-}" ]; then
  tar -czf "$OUT/pb-frames-check.tar.gz" -C "$(dirname "$LOG_DIR")" "$(basename "$LOG_DIR")" && rm -rf "$LOG_DIR"
fi
exit $status
