#!/usr/bin/env bash
# EXPERIMENT: cuda-dualpipe's tile 8 x 2 (as built) against 8 x 4 (ESPGRID_DUALPIPE_ROWS=4), both with
# __launch_bounds__(256, 1); split sweeps of Coulomb and distance, Debye variants, alternating.
set -uo pipefail
LOG_DIR=$1; mkdir -p "$LOG_DIR"; STEP_LOG_DIR=$LOG_DIR
source scripts/lib/steps.sh
SEED=20261122
step configure2 cmake -S . -B build-r2 -DESPGRID_VTK=OFF -DESPGRID_PYTHON=OFF -DESPGRID_TESTS=OFF -DCMAKE_BUILD_TYPE=Release
step configure4 cmake -S . -B build-r4 -DESPGRID_VTK=OFF -DESPGRID_PYTHON=OFF -DESPGRID_TESTS=OFF -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS=-DESPGRID_DUALPIPE_ROWS=4 -DCMAKE_CUDA_FLAGS=-DESPGRID_DUALPIPE_ROWS=4
step build2 cmake --build build-r2 -j 8 --target espgrid &
step build4 cmake --build build-r4 -j 8 --target espgrid &
wait
for exe in build-r2 build-r4; do
  cuobjdump --dump-resource-usage $exe/espgrid 2>/dev/null | grep -A1 "tile_kernel" | grep -E "Function|REG" | paste - - |
    sed -E 's/.*Function ([^ :]+).*REG:([0-9]+).*/\2 \1/' | grep TileFrame > "$LOG_DIR/registers-$exe.txt"
done
for round in 1 2; do
  for exe in build-r2 build-r4; do
    step "coulomb-split-$exe-r$round" $exe/espgrid bench --seed $SEED --require-cuda --sweep split --sweep-only --model coulomb
  done
done
for exe in build-r2 build-r4; do
  step "distance-split-$exe" $exe/espgrid bench --seed $SEED --require-cuda --sweep split --sweep-only --model distance
  step "debye-$exe" $exe/espgrid bench --seed $SEED --require-cuda --kernel cuda-dualpipe --model debye --dielectric 78.54 --ionic-strength 0.15
  step "map-$exe" $exe/espgrid verify data/actin_dimer.pqr --kernel cuda-dualpipe --spacing 0.7
done
exit $status
