#!/usr/bin/env bash
# issue 33: the lean solver's kernels on the 290k 1 A map: every launch's duration, DRAM share and grid size
set -u
PY=$(command -v python3)
R=$OUT/r30; W=/tmp/w; mkdir -p $R $W
[ -f $W/achbp18.pqr ] || "$PY" scripts/make_lattice_structure.py data/achbp.pqr --atoms 300000 -o $W/achbp18.pqr > /dev/null &
mk=$!
[ -x build-gpu/espgrid ] || { t=$SECONDS; OUT= LOG_DIR=$R/build timeout 200 bash scripts/device-check.sh build > $R/build.out 2>&1; echo "build rc $? in $((SECONDS-t)) s"; }
wait $mk
NCU=/usr/local/cuda/bin/ncu
timeout 400 $NCU --kernel-name-base function --kernel-name "regex:half_sweep|residual_kernel|apply_kernel|dot_partial|dot_final|update_|restrict_kernel|prolong_add|solve_in_one|coarsest" \
  --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,dram__bytes.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed \
  --csv --page raw ./build-gpu/espgrid map $W/achbp18.pqr --spacing 1 --padding 10 --model pb -o $W/q.mrc > $R/ncu.csv 2> $R/ncu.err
echo "ncu rc $?"
head -c 2000 $R/ncu.err
cd $OUT && tar czf r30.tgz r30 && rm -rf r30
