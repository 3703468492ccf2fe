#!/usr/bin/env bash
# On a machine with several NVIDIA GPUs: build (no VTK), run the multi-GPU tests with the GPU
# required (ESPGRID_REQUIRE_GPU=1, and ESPGRID_REQUIRE_MULTI_GPU=1 when there are two or more),
# the other GPU and MPI tests, compute-sanitizer memcheck over the multi-GPU tests, `--devices
# all` and one-GPU-per-rank MPI maps compared with the one-GPU map, and the scaling sweep
# (1, 2, 4, ... GPUs, 100,000 atoms on 512^3 points). Logs, bench-gpus.csv and bench-gpus.json
# go to $OUT_DIR (default benchmarks/results/multi-gpu-DATE). Exit code 1 if any step failed.
# Arguments pick phases (default: all, in this order): build test memcheck bench. Run as two
# commands where one command's time is limited: `... build`, then `... test memcheck bench`.
set -uo pipefail
phases=" ${*:-build test memcheck bench} "
want() { [[ "$phases" == *" $1 "* ]]; }
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
OUT_DIR=${OUT_DIR:-benchmarks/results/multi-gpu-$(date -u +%Y-%m-%d)}
BUILD_DIR=${BUILD_DIR:-build-mgpu}
mkdir -p "$OUT_DIR"
STEP_LOG_DIR=$OUT_DIR
source "$here/lib/steps.sh"
{ nvidia-smi; echo; nvidia-smi topo -m; } > "$OUT_DIR/nvidia-smi.txt" 2>&1
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
echo "multi-gpu-check: $gpus GPU(s); results in $OUT_DIR"
if want build; then
  step build cmake -S . -B "$BUILD_DIR" -DESPGRID_VTK=OFF -DCMAKE_BUILD_TYPE=Release && \
    step build cmake --build "$BUILD_DIR" -j "$(nproc)" || { echo "build failed"; exit 1; }
fi
[ -x "$BUILD_DIR/espgrid" ] || { echo "no $BUILD_DIR/espgrid: run the build phase first"; exit 1; }
espgrid="$BUILD_DIR/espgrid"
export ESPGRID_REQUIRE_GPU=1
[ "$gpus" -ge 2 ] && export ESPGRID_REQUIRE_MULTI_GPU=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

if want test; then
  step test-multi-gpu "$BUILD_DIR/tests/test_multi_gpu"
  step ctest-gpu-mpi ctest --test-dir "$BUILD_DIR" -L 'gpu|mpi' --output-on-failure -j 4

  # Whole maps: every GPU, and one GPU per MPI rank, against one GPU, file for file.
  map_args=(map data/actin_dimer.pqr --spacing 0.8 --kernel cuda-unrolled)
  step map-one-gpu "$espgrid" "${map_args[@]}" --device 0 -o "$OUT_DIR/actin-1gpu.dx"
  step map-all-gpus "$espgrid" "${map_args[@]}" --devices all -o "$OUT_DIR/actin-allgpus.dx"
  step compare-all-gpus cmp "$OUT_DIR/actin-1gpu.dx" "$OUT_DIR/actin-allgpus.dx"
  if command -v mpirun >/dev/null && [ -x "$BUILD_DIR/tests/test_mpi_map" ]; then  # built with MPI
    step map-mpi-ranks mpirun -np "$gpus" --oversubscribe "$espgrid" "${map_args[@]}" -o "$OUT_DIR/actin-mpi.dx"
    step compare-mpi-ranks cmp "$OUT_DIR/actin-1gpu.dx" "$OUT_DIR/actin-mpi.dx"
  else
    echo "== map-mpi-ranks: skipped (no mpirun, or this build has no MPI)"
  fi
  rm -f "$OUT_DIR"/actin-*.dx  # large; the logs keep the summaries
fi

if want memcheck; then
  step memcheck-multi-gpu compute-sanitizer --tool memcheck --error-exitcode 99 --leak-check full \
    "$BUILD_DIR/tests/test_multi_gpu" --gtest_filter='*TwoWorkers*cuda_unrolled*:*FailingWorker*:*AllGpus*cuda_unrolled*'
fi

# The scaling sweep: 1, 2, 4, ... GPUs (all of them last), end to end, CSV + JSON.
if want bench; then
  step bench-gpus "$espgrid" bench --sweep gpus --sweep-only --devices all --kernel cuda-unrolled --require-cuda \
    --repeats 5 --warmup 1 --out "$OUT_DIR"
fi
echo "multi-gpu-check: $( [ $status -eq 0 ] && echo all steps passed || echo SOME STEPS FAILED ); results in $OUT_DIR"
exit $status
