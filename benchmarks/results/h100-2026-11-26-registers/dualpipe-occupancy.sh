#!/usr/bin/env bash
# Issue 24's Coulomb stretch, the register lever (benchmarks/NOTES.md, "cuda-dualpipe: registers,
# not occupancy"): cuda-dualpipe's tile kernel under __launch_bounds__(256) alone (ptxas keeps
# 64–80 registers a thread) against __launch_bounds__(256, B), chosen by
# ESPGRID_DUALPIPE_MIN_BLOCKS=B: 0 = the bound alone, 1 (or 2) = up to 128 registers (ptxas takes
# 84–95), 3 = at most 85, 4 = at most 64. The standard bench input, rounds alternating; then the
# maps of each setting compared bit for bit, and the dual-pipe GPU tests under each.
# Usage: bash scripts/dualpipe-occupancy.sh [OUT_DIR]
set -uo pipefail
cd "$(dirname "$0")/.."
LOG_DIR=${1:-${OUT:-/tmp}/occupancy}
mkdir -p "$LOG_DIR"
STEP_LOG_DIR=$LOG_DIR
source scripts/lib/steps.sh
SEED=20261122
{ nvidia-smi; nvcc --version; } > "$LOG_DIR/machine.txt" 2>&1
step configure cmake -S . -B build-gpu -DESPGRID_VTK=OFF -DESPGRID_PYTHON=OFF -DCMAKE_BUILD_TYPE=Release &&
  step build cmake --build build-gpu -j "$(nproc)" --target espgrid test_gpu_kernels || exit 1
cuobjdump --dump-resource-usage build-gpu/espgrid 2>/dev/null | grep -A1 "tile_kernel" |
  grep -E "Function|REG" | paste - - | sed -E 's/.*Function ([^ :]+).*REG:([0-9]+).*/\2 \1/' |
  grep TileFrame > "$LOG_DIR/registers.txt"
BLOCKS=${BLOCKS:-0 1}
for round in 1 2; do
  for blocks in $BLOCKS; do
    step "coulomb-split-b$blocks-r$round" env ESPGRID_DUALPIPE_MIN_BLOCKS=$blocks build-gpu/espgrid bench \
      --seed $SEED --require-cuda --sweep split --sweep-only --model coulomb
    for model in coulomb debye distance; do
      step "$model-b$blocks-r$round" env ESPGRID_DUALPIPE_MIN_BLOCKS=$blocks build-gpu/espgrid bench \
        --seed $SEED --require-cuda --kernel cuda-unrolled,cuda-dualpipe --model $model
    done
  done
done
for blocks in $BLOCKS; do
  step "distance-split-b$blocks" env ESPGRID_DUALPIPE_MIN_BLOCKS=$blocks build-gpu/espgrid bench \
    --seed $SEED --require-cuda --sweep split --sweep-only --model distance
  for model in coulomb debye distance; do
    physics=(--model $model); [ $model = debye ] && physics+=(--ionic-strength 0.15 --dielectric 78.54)
    env ESPGRID_DUALPIPE_MIN_BLOCKS=$blocks build-gpu/espgrid map data/achbp.pqr --kernel cuda-dualpipe \
      "${physics[@]}" --spacing 0.5 -o /tmp/map-$model-b$blocks.mrc > /dev/null 2>&1
    (cd /tmp && md5sum map-$model-b$blocks.mrc) >> "$LOG_DIR/maps-md5.txt"
  done
  step "gputest-b$blocks" env ESPGRID_REQUIRE_GPU=1 ESPGRID_DUALPIPE_MIN_BLOCKS=$blocks \
    build-gpu/tests/test_gpu_kernels --gtest_filter='*dualpipe*:GpuLaunchShapes.*'
done
exit $status
