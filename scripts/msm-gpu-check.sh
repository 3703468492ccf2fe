#!/usr/bin/env bash
# On a machine with an NVIDIA GPU (one H100 or H200 is enough): build (no VTK), run cuda-msm's
# tests with the GPU required (phase by phase against cpu-msm, the parameterized suites' cuda_msm
# cases, the GPU fault tests), compute-sanitizer memcheck and racecheck over the MSM phases,
# `espgrid verify` on the actin dimer, the 300k-atom lattice map (scripts/make_lattice_structure.py,
# as /tmp/big300k.pqr was made) through the CLI, and the two MSM sweeps (up to 1.6 M atoms) with
# their plot. Logs, CSV, JSON and PNG go to $OUT_DIR (default
# benchmarks/results/msm-gpu-DATE). Exit code 1 if any step failed.
# Arguments pick phases (default: all, in this order): build test sanitize maps bench. Where one
# command's time is limited (10 minutes), run `... build test`, then `... sanitize maps bench`.
# The phase `models` (not in the default) maps the 289,620-atom lattice and 1,609,000 atoms with
# each pair model MSM splits (coulomb, debye at 0.15 M, distance) to .mrc, checks each against the
# double oracle at 20,000 sampled points, and times the exact Debye map beside them.
# BUILD_TARGETS (e.g. "espgrid test_gpu_msm") limits the build to those targets.
set -uo pipefail
phases=" ${*:-build test sanitize maps bench} "
want() { [[ "$phases" == *" $1 "* ]]; }
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
OUT_DIR=${OUT_DIR:-benchmarks/results/msm-gpu-$(date -u +%Y-%m-%d)}
BUILD_DIR=${BUILD_DIR:-build-gpu}
mkdir -p "$OUT_DIR"
STEP_LOG_DIR=$OUT_DIR
source "$here/lib/steps.sh"
nvidia-smi > "$OUT_DIR/nvidia-smi.txt" 2>&1
if want build; then
  step build cmake -S . -B "$BUILD_DIR" -DESPGRID_VTK=OFF -DCMAKE_BUILD_TYPE=Release && \
    step build cmake --build "$BUILD_DIR" -j "$(nproc)" ${BUILD_TARGETS:+--target $BUILD_TARGETS} ||
    { echo "build failed"; exit 1; }
fi
[ -x "$BUILD_DIR/espgrid" ] || { echo "no $BUILD_DIR/espgrid: run the build phase first"; exit 1; }
espgrid="$BUILD_DIR/espgrid"
export ESPGRID_REQUIRE_GPU=1
if want test; then
  step gtest-gpu-msm "$BUILD_DIR/tests/test_gpu_msm"
  step gtest-msm-cpu "$BUILD_DIR/tests/test_msm"
  step gtest-every-variant "$BUILD_DIR/tests/test_every_variant" --gtest_filter='*msm*'
  step gtest-gpu-kernels "$BUILD_DIR/tests/test_gpu_kernels" --gtest_filter='*cuda_msm*:GpuDevice.*'
  step gtest-gpu-faults "$BUILD_DIR/tests/test_hardening" --gtest_filter='GpuFaults.*'
fi
if want sanitize; then
  # The phase tests cover every kernel of kernels/msm.cu; racecheck watches the short range's
  # shared-memory tiles and row table.
  step memcheck compute-sanitizer --tool memcheck --error-exitcode 99 "$BUILD_DIR/tests/test_gpu_msm" \
    --gtest_filter='*EveryGridPhase*:*MapParts*:*Slabs*:*PhasesAreTimed*'
  step racecheck compute-sanitizer --tool racecheck --error-exitcode 99 "$BUILD_DIR/tests/test_gpu_msm" \
    --gtest_filter='*MapParts*:*Slabs*'
  step synccheck compute-sanitizer --tool synccheck --error-exitcode 99 "$BUILD_DIR/tests/test_gpu_msm" \
    --gtest_filter='*Slabs*'
fi
if want maps; then
  step verify-actin "$espgrid" verify data/actin_dimer.pqr --kernel cuda-msm,cuda-unrolled --spacing 0.5 --accuracy 1e-4
  # End to end through the CLI (the DX text of 168 M points takes most of the wall time; the
  # kernel line is what compares with the targets; bench-msm times 1.6 M atoms without writing).
  python3 scripts/make_lattice_structure.py data/achbp.pqr --copies 3x3x2 -o /tmp/achbp-3x3x2.pqr > /dev/null
  step map-achbp-3x3x2 "$espgrid" map /tmp/achbp-3x3x2.pqr -o /tmp/achbp-3x3x2.dx --spacing 0.5 --accuracy 1e-3
  rm -f /tmp/achbp-3x3x2.dx
fi
if want models; then
  big=/tmp/achbp-3x3x2.pqr huge=/tmp/achbp-5x5x4.pqr
  python3 scripts/make_lattice_structure.py data/achbp.pqr --copies 3x3x2 -o $big > /dev/null
  python3 scripts/make_lattice_structure.py data/achbp.pqr --copies 5x5x4 -o $huge > /dev/null
  for m in coulomb debye distance; do
    case $m in
      coulomb) physics=(--model coulomb) ;;
      debye) physics=(--model debye --dielectric 78.54 --ionic-strength 0.15) ;;
      distance) physics=(--model distance --dielectric 4) ;;
    esac
    step "map-msm-$m-290k" "$espgrid" map $big -o /tmp/msm.mrc --spacing 0.5 --accuracy 1e-3 "${physics[@]}"
    step "verify-msm-$m-290k" "$espgrid" verify $big --kernel cuda-msm --spacing 0.5 --accuracy 1e-3 "${physics[@]}" \
      --sample 20000 --seed 7
    step "map-msm-$m-1.6M" "$espgrid" map $huge -o /tmp/msm.mrc --spacing 0.5 --accuracy 1e-3 "${physics[@]}"
  done
  step map-msm-debye-290k-1e-4 "$espgrid" map $big -o /tmp/msm.mrc --spacing 0.5 --accuracy 1e-4 --model debye \
    --dielectric 78.54 --ionic-strength 0.15
  step map-exact-debye-290k "$espgrid" map $big -o /tmp/msm.mrc --spacing 0.5 --kernel cuda-dualpipe --model debye \
    --dielectric 78.54 --ionic-strength 0.15
  rm -f /tmp/msm.mrc
fi
if want bench; then
  step bench-msm "$espgrid" bench --sweep msm --sweep-only --require-cuda --seed 1 --out "$OUT_DIR"
  step bench-msm-accuracy "$espgrid" bench --sweep msm-accuracy --sweep-only --require-cuda --spacing 0.5 --seed 1 \
    --out "$OUT_DIR"
  step plot python3 benchmarks/plot_bench.py "$OUT_DIR"
fi
echo "msm-gpu-check: $( [ $status -eq 0 ] && echo all steps passed || echo SOME STEPS FAILED ); logs in $OUT_DIR"
exit $status
