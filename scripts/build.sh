#!/usr/bin/env bash
# Configures and builds espgrid in build/ (CUDA when nvcc is found, VTK when installed).
# Extra arguments go to cmake's configure step, e.g. -DESPGRID_CUDA=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
# A unity build (16 sources a unit): the sources share their headers' parsing, most of a compile
# (a fresh build on 2 cores ~680 s per source, ~490 s in units; the sanitizer build in
# scripts/hardening.sh is one too). ESPGRID_UNITY=0 compiles each source alone: what shows a missing
# #include that a unit hides (the GPU host's scripts/device-check.sh build and a developer's own
# build do). A name two sources define alike collides in a unit: share it from a header.
if [ "${ESPGRID_UNITY:-1}" = 1 ]; then
  unity=(-DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16)
else
  unity=(-DCMAKE_UNITY_BUILD=OFF)
fi
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release "${unity[@]}" "$@"
cmake --build "$BUILD_DIR" -j "$(nproc)"
