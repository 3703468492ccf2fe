#!/usr/bin/env bash
# Installs packages (with the ParaView, PyMOL and APBS clients the interop tests use), builds,
# and runs every test. GPU tests skip with a reason where no GPU is usable;
# ESPGRID_REQUIRE_GPU=1 makes that a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --interop
bash scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "$(nproc)"
