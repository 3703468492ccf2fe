#!/usr/bin/env bash
# Session 15, call 6: ncu of the solve's kernels on the 290k map with the V-cycle in float (the default),
# then in double (ESPGRID_PB_FLOAT_CYCLE=0): duration, DRAM throughput and bytes per kernel. Files go straight
# to $OUT (a call cut at its limit still returns what is there).
set -u
PY=$(command -v python3)
R=$OUT/s15f; W=/tmp/w; mkdir -p $R $W
date -u > $R/date.txt; nvidia-smi -L > $R/gpus.txt
"$PY" scripts/make_lattice_structure.py data/achbp.pqr --atoms 300000 -o $W/achbp18.pqr > /dev/null &
mk=$!
t=$SECONDS
hwy=(); [ -d .device/hwy ] && hwy=(-DCMAKE_PREFIX_PATH="$PWD/.device/hwy")
cmake -S . -B build-gpu -DESPGRID_VTK=OFF -DESPGRID_PYTHON=OFF -DESPGRID_TESTS=OFF -DESPGRID_WEB=OFF -DCMAKE_BUILD_TYPE=Release "${hwy[@]}" > $R/configure.log 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" --target espgrid > $R/build.log 2>&1 || { echo build failed; tail -30 $R/build.log; exit 1; }
echo "build $((SECONDS-t)) s" | tee $R/summary.txt
wait $mk
k="regex:half_sweep|residual_kernel|prolong_add|restrict_kernel|convert_kernel|apply_kernel|update_solution|update_direction|dot_partial|symmetric_sweeps"
m=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes.sum,launch__grid_size
for v in float double; do
  sw=""; [ $v = double ] && sw="ESPGRID_PB_FLOAT_CYCLE=0"
  t=$SECONDS
  env $sw CUDA_VISIBLE_DEVICES=0 timeout 100 /usr/local/cuda/bin/ncu --kernel-name-base function --kernel-name "$k" \
    --launch-skip 0 --launch-count 120 --metrics $m --csv --page raw \
    ./build-gpu/espgrid map $W/achbp18.pqr --spacing 1 --padding 10 --model pb -o $W/q.mrc > $R/ncu-$v.csv 2> $R/ncu-$v.err
  echo "ncu $v rc $? in $((SECONDS-t)) s" | tee -a $R/summary.txt
done
