#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: build (no VTK), run the whole test suite with
# ESPGRID_REQUIRE_GPU=1, compute-sanitizer memcheck and racecheck over the GPU tests, and
# espgrid verify / map --backend cuda on the largest bundled molecule. Logs go to $LOG_DIR
# (default benchmarks/results/gpu-check-DATE), named so they can be committed as they are.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
LOG_DIR=${LOG_DIR:-benchmarks/results/gpu-check-$(date -u +%Y-%m-%d)}
BUILD_DIR=${BUILD_DIR:-build-gpu}
mkdir -p "$LOG_DIR"
STEP_LOG_DIR=$LOG_DIR
source "$here/lib/steps.sh"
nvidia-smi > "$LOG_DIR/nvidia-smi.txt" 2>&1
step build cmake -S . -B "$BUILD_DIR" -DESPGRID_VTK=OFF -DCMAKE_BUILD_TYPE=Release && \
  step build cmake --build "$BUILD_DIR" -j "$(nproc)" || { echo "build failed"; exit 1; }
export ESPGRID_REQUIRE_GPU=1
step ctest ctest --test-dir "$BUILD_DIR" --output-on-failure -j 4
# The same gtest binaries run directly: a full log of every GPU test, whatever ctest does.
step gtest-gpu "$BUILD_DIR/tests/test_gpu_kernels"
# Timing checks mean nothing under a sanitizer's slowdown: leave the ceiling test out there.
step memcheck compute-sanitizer --tool memcheck --error-exitcode 99 --leak-check full "$BUILD_DIR/tests/test_gpu_kernels" --gtest_filter=-*RsqrtCeiling*
step racecheck compute-sanitizer --tool racecheck --error-exitcode 99 "$BUILD_DIR/tests/test_gpu_kernels" --gtest_filter=-*RsqrtCeiling*
step synccheck compute-sanitizer --tool synccheck --error-exitcode 99 "$BUILD_DIR/tests/test_gpu_kernels" --gtest_filter='*Random*:*Slab*'
# The potential at points on the GPU (kernels/points.cu): against the double sum, and its
# shared-memory tiles under memcheck and racecheck.
step points-cuda "$BUILD_DIR/tests/test_sample" --gtest_filter='*Cuda*'
step memcheck-points compute-sanitizer --tool memcheck --error-exitcode 99 "$BUILD_DIR/tests/test_sample" --gtest_filter='*Cuda*'
step racecheck-points compute-sanitizer --tool racecheck --error-exitcode 99 "$BUILD_DIR/tests/test_sample" --gtest_filter='*Cuda*'
step verify-actin "$BUILD_DIR/espgrid" verify data/actin_dimer.pqr --kernel all --spacing 1.0
step map-actin-cuda "$BUILD_DIR/espgrid" map data/actin_dimer.pqr --backend cuda -o /tmp/actin-cuda.dx
echo "gpu-check: $( [ $status -eq 0 ] && echo all steps passed || echo SOME STEPS FAILED ); logs in $LOG_DIR"
exit $status
