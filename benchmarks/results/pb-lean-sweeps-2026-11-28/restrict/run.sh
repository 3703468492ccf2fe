#!/usr/bin/env bash
# issue 33: the restriction with its x weights once a coarse node and on a 3-D grid. The GPU suite with the GPU
# required; old (ddab0d1) against new (capsid, 290k, 47k interleaved, same md5 expected); ncu table of the new build.
set -u
PY=$(command -v python3)
R=$OUT/r32; W=/tmp/w; mkdir -p $R $W
( "$PY" benchmarks/make_capsid.py data/achbp.pqr --per-unit 2 -o $W/capsid.pqr > $R/capsid-make.log 2>&1
  "$PY" scripts/make_lattice_structure.py data/actin_dimer.pqr --copies 2x2x1 --gap 2 -o $W/actin4.pqr > /dev/null
  "$PY" scripts/make_lattice_structure.py data/achbp.pqr --atoms 300000 -o $W/achbp18.pqr > /dev/null ) &
mk=$!
( cmake -S .device/old-src -B .device/old-build -DESPGRID_VTK=OFF -DESPGRID_PYTHON=OFF -DCMAKE_BUILD_TYPE=Release \
  -DESPGRID_TESTS=OFF -DCMAKE_PREFIX_PATH=$PWD/.device/hwy > $R/old-build.log 2>&1 &&
  nice cmake --build .device/old-build -j 4 --target espgrid >> $R/old-build.log 2>&1; echo "old build rc $?" >> $R/old-build.log ) &
old=$!
t=$SECONDS; OUT= LOG_DIR=$R/device-check timeout 330 bash scripts/device-check.sh build test > $R/device-check.out 2>&1
echo "device-check rc $? in $((SECONDS-t)) s"
grep -hE "tests passed|tests failed" $R/device-check/*.log | head
grep -hE "\*\*\*Failed|Failed  " $R/device-check/ctest.log | head
wait $old; tail -1 $R/old-build.log
wait $mk
grid161=$(grep -o "\-\-origin.*" benchmarks/results/pb-process-2026-11-28-sixth/grids.txt)
for rep in 1 2 3; do
  for which in old new; do
    bin=./build-gpu/espgrid; [ $which = old ] && bin=./.device/old-build/espgrid
    for case in capsid 290k 47k; do
      case $case in
        capsid) args="$W/capsid.pqr --spacing 1 --padding 10";;
        290k) args="$W/achbp18.pqr --spacing 1 --padding 10";;
        47k) args="$W/actin4.pqr $grid161";;
      esac
      name=$case-$which-$rep
      rm -f $W/p.mrc; sync
      s=$(date +%s%N)
      CUDA_VISIBLE_DEVICES=0 $bin map $args --model pb -o $W/p.mrc --json $R/$name.json > $R/$name.log 2>&1
      rc=$?; e=$(date +%s%N)
      echo "$name: rc $rc, $(( (e-s)/1000000 )) ms; $(grep -oE 'device solve [0-9.]+ [mµ]s' $R/$name.log); $(grep -oE '[0-9]+ iterations' $R/$name.log); md5 $(md5sum < $W/p.mrc | cut -c1-12)" | tee -a $R/summary.txt
    done
  done
done
timeout 150 /usr/local/cuda/bin/ncu --kernel-name-base function --kernel-name "regex:half_sweep|residual_kernel|apply_kernel|dot_partial|update_|restrict_kernel|prolong_add" \
  --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,dram__bytes.sum \
  --csv --page raw ./build-gpu/espgrid map $W/achbp18.pqr --spacing 1 --padding 10 --model pb -o $W/q.mrc > $R/ncu.csv 2> $R/ncu.err
echo "ncu rc $?"
cd $OUT && tar czf r32.tgz r32 && rm -rf r32
