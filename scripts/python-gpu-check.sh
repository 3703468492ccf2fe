#!/usr/bin/env bash
# The Python module on a GPU host as users have one: the interpreter first on the PATH
# (a venv with PyTorch, numpy and pip's pybind11), the host's own compiler. Builds espgrid with
# the module in $BUILD_DIR (no VTK), then:
#   import       `import espgrid` beside PyTorch, in both orders, under -X faulthandler
#   exports      what the module exports and links (nm -D, ldd)
#   noexports    the same module relinked without python/src/exports.map, imported beside
#                PyTorch: shows whether that file is what makes the import work here
#   pytest       python/tests/test_module.py with ESPGRID_REQUIRE_GPU=1: every CUDA row's map
#                from Python equals the program's byte for byte, the frame average on the GPU
#   gpu-ctest    the C++ GPU suite (label gpu) with ESPGRID_REQUIRE_GPU=1
# Carry .device/ (Highway in .device/hwy, Debian's pure-Python pytest in .device/pylib for hosts
# whose venv has none). Logs in $LOG_DIR (default $OUT/python-gpu-check), packed into $OUT.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
LOG_DIR=${LOG_DIR:-${OUT:+$OUT/python-gpu-check}}
LOG_DIR=${LOG_DIR:-benchmarks/results/python-gpu-check-$(date -u +%Y-%m-%d)}
BUILD_DIR=${BUILD_DIR:-build-gpu}
mkdir -p "$LOG_DIR"
STEP_LOG_DIR=$LOG_DIR
source "$here/lib/steps.sh"
PY=$(command -v python3)
{ nvidia-smi; echo; "$PY" -c "import sys, numpy, torch; print(sys.version); print('numpy', numpy.__version__, 'torch', torch.__version__)";
  "$PY" -m pybind11 --version; ${CXX:-c++} --version | head -1; } > "$LOG_DIR/machine.txt" 2>&1
hwy=(); [ -d .device/hwy ] && hwy=(-DCMAKE_PREFIX_PATH="$PWD/.device/hwy")
step configure cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DESPGRID_VTK=OFF -DESPGRID_PYTHON=ON \
  -DPython3_EXECUTABLE="$PY" -Dpybind11_DIR="$("$PY" -m pybind11 --cmakedir)" "${hwy[@]}" &&
  step build cmake --build "$BUILD_DIR" -j "$(nproc)" || { echo "build failed"; exit 1; }
module=$(ls "$BUILD_DIR"/python/espgrid/_espgrid*.so)
export PYTHONPATH="$PWD/$BUILD_DIR/python"
step import-torch-first "$PY" -X faulthandler -c "import torch, numpy, espgrid; print(espgrid.__version__, espgrid.cuda_available(), [k['name'] for k in espgrid.kernels() if k['runnable']])"
step import-espgrid-first "$PY" -X faulthandler -c "import espgrid, torch; print(espgrid.compute_map('data/fasciculin2.pqr', spacing=2.0, backend='cuda').kernel)"
step exports bash -c "nm -D --defined-only '$module'; echo; ldd '$module'"
# The module linked as before the export map: the same link line without the version script.
link=$(cat "$BUILD_DIR/python/CMakeFiles/espgrid_python.dir/link.txt")
mkdir -p "$BUILD_DIR/noexports/espgrid"
cp "$BUILD_DIR"/python/espgrid/*.py "$BUILD_DIR/noexports/espgrid/"
step noexports-link bash -c "cd '$BUILD_DIR/python' && $(echo "$link" | sed -E 's/-Wl,--version-script=[^ ]+//; s#-o espgrid/#-o ../noexports/espgrid/#')"
kept=$status  # a diagnostic: its crash is the expected outcome where the export map matters
step noexports-import env PYTHONPATH="$PWD/$BUILD_DIR/noexports" "$PY" -X faulthandler -c "import torch, numpy, espgrid; print('imported')"
status=$kept
pytest_path=""
"$PY" -c "import pytest" 2>/dev/null || pytest_path="$PWD/.device/pylib:"
export ESPGRID_REQUIRE_GPU=1 ESPGRID="$PWD/$BUILD_DIR/espgrid"
step pytest env PYTHONPATH="$pytest_path$PYTHONPATH" "$PY" -m pytest -p no:cacheprovider -rs -v python/tests/test_module.py
step gpu-ctest ctest --test-dir "$BUILD_DIR" -L gpu --output-on-failure -j 4 --timeout 300
if [ -n "${OUT:-}" ]; then
  tar -czf "$OUT/python-gpu-check.tar.gz" -C "$(dirname "$LOG_DIR")" "$(basename "$LOG_DIR")" && rm -rf "$LOG_DIR"
fi
echo "python-gpu-check: $( [ $status -eq 0 ] && echo all steps passed || echo SOME STEPS FAILED )"
exit $status
