#!/usr/bin/env bash
# Session 15, call 5: a one-GPU PB map on a two-GPU host with both GPUs visible against CUDA_VISIBLE_DEVICES=0,
# traced (ESPGRID_TRACE_PROCESS=1), interleaved, 3 rounds: the capsid and the 47k map. First memcheck over the
# two-GPU slab test after 59c5a9c (peer access enabled once a process).
set -u
PY=$(command -v python3)
R=$OUT/s15e; W=/tmp/w; mkdir -p $R $W
date -u > $R/date.txt; nvidia-smi -L > $R/gpus.txt
( "$PY" benchmarks/make_capsid.py data/achbp.pqr --per-unit 2 -o $W/capsid.pqr > /dev/null 2>&1
  "$PY" scripts/make_lattice_structure.py data/actin_dimer.pqr --copies 2x2x1 --gap 2 -o $W/actin4.pqr > /dev/null ) &
mk=$!
t=$SECONDS
hwy=(); [ -d .device/hwy ] && hwy=(-DCMAKE_PREFIX_PATH="$PWD/.device/hwy")
cmake -S . -B build-gpu -DESPGRID_VTK=OFF -DESPGRID_PYTHON=OFF -DESPGRID_WEB=OFF -DCMAKE_BUILD_TYPE=Release "${hwy[@]}" > $R/configure.log 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" --target espgrid test_pb_slabs > $R/build.log 2>&1 || { echo build failed; tail -30 $R/build.log; exit 1; }
echo "build $((SECONDS-t)) s"
ESPGRID_REQUIRE_GPU=1 ESPGRID_REQUIRE_MULTI_GPU=1 timeout 120 compute-sanitizer --tool memcheck --error-exitcode 99 \
  build-gpu/tests/test_pb_slabs --gtest_filter='PbSlabsGpu.*' > $R/memcheck-slabs.log 2>&1
echo "memcheck PbSlabsGpu.* rc $?; $(grep -E 'ERROR SUMMARY' $R/memcheck-slabs.log | tail -1); $(grep -E '^\[  (PASSED|FAILED)' $R/memcheck-slabs.log | tr '\n' ' ')"
wait $mk
grid161=$(grep -o "\-\-origin.*" benchmarks/results/pb-process-2026-11-28-sixth/grids.txt)
for rep in 1 2 3; do
  for vis in both one; do
    for case in capsid 47k; do
      args="$W/capsid.pqr --spacing 1 --padding 10"; [ $case = 47k ] && args="$W/actin4.pqr $grid161"
      name=$case-$vis-$rep; rm -f $W/p.mrc; sync
      env_vis=""; [ $vis = one ] && env_vis="CUDA_VISIBLE_DEVICES=0"
      s=$(date +%s%N)
      env $env_vis ESPGRID_TRACE_PROCESS=1 ./build-gpu/espgrid map $args --model pb -o $W/p.mrc > $R/$name.log 2>&1
      rc=$?; e=$(date +%s%N)
      echo "$name: rc $rc, wall $(( (e-s)/1000000 )) ms; $(grep -oE 'total [0-9.]+ [mµ]?s' $R/$name.log); $(grep -E 'process:' $R/$name.log | tail -1 | cut -c1-120)" | tee -a $R/summary.txt
    done
  done
done
rm -f $W/p.mrc
cd $OUT && tar czf s15e.tgz s15e && rm -rf s15e
