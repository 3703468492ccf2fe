#!/usr/bin/env bash
# Configures and builds espgrid in build/ (CUDA when nvcc is found, VTK when installed).
# Extra arguments go to cmake's configure step, e.g. -DESPGRID_CUDA=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$BUILD_DIR" -j "$(nproc)"
