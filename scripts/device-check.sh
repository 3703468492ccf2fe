#!/usr/bin/env bash
# The device run: on a machine with an NVIDIA GPU, in phases so that each call of the lent device
# stays under its time limit (a warm machine keeps build-gpu/ between calls, so later phases
# skip the build):
#
#   build       CUDA build in build-gpu/ (no VTK, no Python module), Highway from .device/hwy
#               when the machine has no libhwy-dev (carry .device/)
#   gputest     with ESPGRID_REQUIRE_GPU=1, every ctest entry that exercises a GPU (CUDA rows,
#               GPU faults, streaming from GPUs, MSM, precision), and the GPU test binaries'
#               CUDA cases run directly for full logs
#   test        ctest with ESPGRID_REQUIRE_GPU=1: every label but interop/python
#   sanitize    compute-sanitizer memcheck and racecheck over the CUDA families' tests
#   maps        verify every kernel on the actin dimer, maps of each model on the GPU
#   old         build the commit before the architecture change (.device/old-src) and bench it
#   bench       bench variants (the standard input: 100,000 random atoms on 256x256x128, one
#               seed for old and new), per model, the dual-pipe split sweep, the CPU ceiling
#               and cpu-simd with AVX2 and AVX-512
#   sweeps      blocks, coarsening, atoms, grid, speedup sweeps with the final kernels
#   same        every CUDA row and model (and cuda-msm) maps the same structure as the build of
#               .device/old-src (carry it: `git archive COMMIT`): values compared bit for bit
#   model       the added-model test (tests/models/) with its library's CUDA kernels built
#   speed       cuda-unrolled and cuda-dualpipe, Coulomb, distance and Debye (0.15 M: the exponential
#               chain; 1 M: the split path), new and old build in one run
#   shared      the CPU kernels on two cores with one kept busy (taskset -c 0,1), against the
#               old build: benchmarks/shared_core.py
#   python      the Python module built for the interpreter first on the PATH (a venv with
#               PyTorch), imported beside it, its suite with the GPU required
#
# Logs go to $LOG_DIR (default $OUT/device-check or benchmarks/results/device-check-DATE) and
# are packed into $OUT/device-check-PHASES.tar.gz when $OUT is set (the device returns at most
# 8 files). Exit code 1 if any step failed.
set -uo pipefail
phases=" ${*:-build test} "
want() { [[ "$phases" == *" $1 "* ]]; }
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
LOG_DIR=${LOG_DIR:-${OUT:+$OUT/device-check}}
LOG_DIR=${LOG_DIR:-benchmarks/results/device-check-$(date -u +%Y-%m-%d)}
BUILD_DIR=${BUILD_DIR:-build-gpu}
mkdir -p "$LOG_DIR"
STEP_LOG_DIR=$LOG_DIR
source "$here/lib/steps.sh"
JOBS=$(nproc)
SEED=${ESPGRID_BENCH_SEED:-20261122}
{ nvidia-smi; echo; lscpu | head -20; } > "$LOG_DIR/machine.txt" 2>&1
espgrid="$BUILD_DIR/espgrid"
hwy_prefix=()
[ -d .device/hwy ] && hwy_prefix=(-DCMAKE_PREFIX_PATH="$PWD/.device/hwy")

if want build; then
  python_flags=(-DESPGRID_PYTHON=OFF)
  if want python; then
    PY=$(command -v python3)
    python_flags=(-DESPGRID_PYTHON=ON -DPython3_EXECUTABLE="$PY" -Dpybind11_DIR="$("$PY" -m pybind11 --cmakedir)")
  fi
  model_flag=(); want model && model_flag=(-DESPGRID_TEST_MODEL_CUDA=ON)
  step build-configure cmake -S . -B "$BUILD_DIR" -DESPGRID_VTK=OFF "${python_flags[@]}" "${model_flag[@]}" \
    -DCMAKE_BUILD_TYPE=Release "${hwy_prefix[@]}" && step build cmake --build "$BUILD_DIR" -j "$JOBS" ||
    { echo "build failed"; }
fi
export ESPGRID_REQUIRE_GPU=1

if want gputest; then
  step ctest-gpu ctest --test-dir "$BUILD_DIR" --output-on-failure -j 6 --timeout 600 \
    -R 'cuda|Cuda|Gpu|GPU|Msm|msm|Precision|Streaming|MultiGpu|CudaErrors'
  for t in test_gpu_kernels test_every_variant test_precision test_gpu_msm test_multi_gpu; do
    [ -x "$BUILD_DIR/tests/$t" ] && step "gtest-$t" "$BUILD_DIR/tests/$t" --gtest_filter='*cuda*:*Cuda*:*Gpu*:*GPU*:*Precision*'
  done
fi

if want test; then
  step ctest ctest --test-dir "$BUILD_DIR" --output-on-failure -j 8 -LE 'interop|python' --timeout 900
fi

if want sanitize; then
  # Timing checks mean nothing under a sanitizer's slowdown: the ceiling test is left out.
  filter='*cuda_dualpipe*:*cuda_unrolled*:*cuda_constant*:*cuda_scatter*:-*RsqrtCeiling*'
  step memcheck compute-sanitizer --tool memcheck --error-exitcode 99 --leak-check full \
    "$BUILD_DIR/tests/test_gpu_kernels" --gtest_filter="$filter"
  step racecheck compute-sanitizer --tool racecheck --error-exitcode 99 \
    "$BUILD_DIR/tests/test_gpu_kernels" --gtest_filter='*Random*cuda_dualpipe*:*Random*cuda_unrolled*'
  step memcheck-every-variant compute-sanitizer --tool memcheck --error-exitcode 99 \
    "$BUILD_DIR/tests/test_every_variant" --gtest_filter='*cuda_dualpipe*:*cuda_msm*'
  [ -x "$BUILD_DIR/tests/test_gpu_msm" ] && step memcheck-msm compute-sanitizer --tool memcheck --error-exitcode 99 \
    "$BUILD_DIR/tests/test_gpu_msm" --gtest_filter='-*Faster*'  # MSM-beats-exact is a timing check
fi

if want maps; then
  step verify-actin "$espgrid" verify data/actin_dimer.pqr --kernel all --spacing 1.0
  step verify-actin-debye "$espgrid" verify data/actin_dimer.pqr --kernel all --spacing 1.0 --model debye \
    --dielectric 78.54 --ionic-strength 0.15
  step map-actin-cuda "$espgrid" map data/actin_dimer.pqr --backend cuda -o /tmp/actin-cuda.dx
fi

if want model; then
  step added-model "$BUILD_DIR/tests/test_added_model"
fi

if want python; then
  pytest_path=""
  python3 -c "import pytest" 2>/dev/null || pytest_path="$PWD/.device/pylib:"
  step python-import env PYTHONPATH="$PWD/$BUILD_DIR/python" python3 -X faulthandler -c \
    "import torch, numpy, espgrid; print(espgrid.cuda_available(), [k['name'] for k in espgrid.kernels() if k['runnable']])"
  step python-suite env PYTHONPATH="$pytest_path$PWD/$BUILD_DIR/python" ESPGRID="$PWD/$espgrid" \
    python3 -m pytest -p no:cacheprovider -rs -q python/tests/test_module.py
fi

if want same; then
  if [ -d .device/old-src ]; then
    step old-build-espgrid bash -c "cmake -S .device/old-src -B .device/old-build -DESPGRID_VTK=OFF -DESPGRID_PYTHON=OFF \
      -DCMAKE_BUILD_TYPE=Release -DESPGRID_TESTS=OFF ${hwy_prefix[*]} >/dev/null && cmake --build .device/old-build -j $JOBS --target espgrid"
    step same-maps bash scripts/lib/same_maps.sh .device/old-build/espgrid "$espgrid" "$LOG_DIR/same"
  else
    echo "same: no .device/old-src to compare with"; status=1
  fi
fi

if want speed; then
  # Old and new side by side on the standard input, one seed: the refactored kernels' rates.
  # debye-1M: κ·h = 0.165 at 0.5 Å, past the exponential chain: the split path.
  for case in coulomb distance debye debye-1M; do
    m=${case%-1M}; extra=()
    [ $case = debye ] && extra=(--dielectric 78.54 --ionic-strength 0.15)
    [ $case = debye-1M ] && extra=(--dielectric 78.54 --ionic-strength 1.0)
    for build in new old; do
      exe=$espgrid; [ $build = old ] && exe=.device/old-build/espgrid
      [ -x "$exe" ] || continue
      step "speed-$case-$build" "$exe" bench --seed "$SEED" --require-cuda --model $m "${extra[@]}" \
        --kernel cuda-unrolled,cuda-dualpipe --out "$LOG_DIR/speed-$case-$build"
    done
  done
fi

if want shared; then
  old_flag=(); [ -x .device/old-build/espgrid ] && old_flag=(--old .device/old-build/espgrid)
  step shared-core taskset -c 0,1 python3 benchmarks/shared_core.py --espgrid "$espgrid" "${old_flag[@]}" --runs 9 \
    --busy 0,1 --out "$LOG_DIR/shared-core.json"
fi

if want old; then
  if [ -d .device/old-src ]; then
    step old-build bash -c "cmake -S .device/old-src -B .device/old-build -DESPGRID_VTK=OFF -DCMAKE_BUILD_TYPE=Release \
      -DESPGRID_TESTS=OFF >/dev/null && cmake --build .device/old-build -j $JOBS --target espgrid"
    step old-bench-variants .device/old-build/espgrid bench --seed "$SEED" --require-cuda --out "$LOG_DIR/old"
  fi
fi

if want bench; then
  # The exact variants (the old build has the same set but cpu-simd and cuda-dualpipe).
  step bench-variants "$espgrid" bench --seed "$SEED" --require-cuda --out "$LOG_DIR/new" --kernel \
    cpu-naive,cpu-reference,cpu-parallel,cpu-simd,cuda-scatter,cuda-gather,cuda-constant,cuda-coarsened,cuda-unrolled,cuda-dualpipe
  for m in distance debye; do
    extra=(); [ $m = debye ] && extra=(--dielectric 78.54 --ionic-strength 0.15)
    step "bench-$m" "$espgrid" bench --seed "$SEED" --require-cuda --model $m "${extra[@]}" \
      --kernel cpu-parallel,cpu-simd,cuda-unrolled,cuda-dualpipe --out "$LOG_DIR/model-$m"
  done
  step bench-split "$espgrid" bench --seed "$SEED" --require-cuda --sweep split --sweep-only --out "$LOG_DIR/new"
  for m in distance debye; do
    extra=(); [ $m = debye ] && extra=(--dielectric 78.54 --ionic-strength 0.15)
    step "bench-split-$m" "$espgrid" bench --seed "$SEED" --require-cuda --sweep split --sweep-only --model $m \
      "${extra[@]}" --out "$LOG_DIR/model-$m"
  done
  for cap in avx512 avx2; do
    step "bench-cpu-$cap" env ESPGRID_SIMD=$cap "$espgrid" bench --seed "$SEED" --backend cpu \
      --kernel cpu-reference,cpu-parallel,cpu-simd --threads 1 --dims 128,128,16 --atoms 20000 --out "$LOG_DIR/cpu-$cap"
  done
fi

if want sweeps; then
  step sweeps "$espgrid" bench --seed "$SEED" --require-cuda --sweep all --sweep-only --out "$LOG_DIR/new"
fi

if [ -n "${OUT:-}" ]; then
  name=device-check-$(echo $phases | tr ' ' '-')
  tar -czf "$OUT/$name.tar.gz" -C "$(dirname "$LOG_DIR")" "$(basename "$LOG_DIR")" && rm -rf "$LOG_DIR"
fi
echo "device-check ($phases): $( [ $status -eq 0 ] && echo all steps passed || echo SOME STEPS FAILED )"
exit $status
