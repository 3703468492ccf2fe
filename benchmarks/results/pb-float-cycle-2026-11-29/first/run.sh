#!/usr/bin/env bash
# Session 15, call 2: the V-cycle in float (float-cycle branch). Full build, the GPU suite (two GPUs
# required where there are two), then float (as built) against ESPGRID_PB_FLOAT_CYCLE=0, interleaved,
# 3 rounds: capsid, 290k, 47k on one GPU; then the capsid on two GPUs (float) twice.
set -u
PY=$(command -v python3)
R=$OUT/s15b; W=/tmp/w; mkdir -p $R $W
nvidia-smi > $R/nvidia-smi.txt; date -u > $R/date.txt; nproc > $R/nproc.txt
gpus=$(nvidia-smi -L | wc -l)
( "$PY" benchmarks/make_capsid.py data/achbp.pqr --per-unit 2 -o $W/capsid.pqr > $R/capsid-make.log 2>&1
  "$PY" scripts/make_lattice_structure.py data/actin_dimer.pqr --copies 2x2x1 --gap 2 -o $W/actin4.pqr > /dev/null
  "$PY" scripts/make_lattice_structure.py data/achbp.pqr --atoms 300000 -o $W/achbp18.pqr > /dev/null ) &
mk=$!
t=$SECONDS
BUILD_DIR=build-gpu bash scripts/device-check.sh build > $R/build.log 2>&1 || { echo build failed; tail -40 $R/build.log; exit 1; }
echo "build $((SECONDS-t)) s"
t=$SECONDS
multi=0; [ "$gpus" -ge 2 ] && multi=1
ESPGRID_REQUIRE_GPU=1 ESPGRID_REQUIRE_MULTI_GPU=$multi ctest --test-dir build-gpu --output-on-failure -j 8 -LE 'interop|python' --timeout 900 > $R/ctest.log 2>&1
echo "ctest rc $? in $((SECONDS-t)) s" | tee -a $R/summary.txt
grep -E "tests passed|tests failed|Total Test time" $R/ctest.log | tee -a $R/summary.txt
grep -E "\(Failed\)|\(Timeout\)" $R/ctest.log | head -20 | tee -a $R/summary.txt
grep -h "\[ float    \]\|\[ slabs    \]" $R/ctest.log | head -20 | tee -a $R/summary.txt
grep -h -B3 -A25 "FloatCycleGivesTheDoubleCyclesMapInLessMemory" $R/ctest.log | grep -E "Failure|Expected|Which is|error|peak|B against" | head -20 | tee -a $R/summary.txt
wait $mk
grid161=$(grep -o "\-\-origin.*" benchmarks/results/pb-process-2026-11-28-sixth/grids.txt)
for rep in 1 2 3; do
  for v in float double; do
    sw=""; [ $v = double ] && sw="ESPGRID_PB_FLOAT_CYCLE=0"
    for case in capsid 290k 47k; do
      case $case in
        capsid) args="$W/capsid.pqr --spacing 1 --padding 10";;
        290k) args="$W/achbp18.pqr --spacing 1 --padding 10";;
        47k) args="$W/actin4.pqr $grid161";;
      esac
      name=$case-$v-$rep
      rm -f $W/p.mrc; sync
      s=$(date +%s%N)
      env $sw CUDA_VISIBLE_DEVICES=0 ./build-gpu/espgrid map $args --model pb -o $W/p.mrc --json $R/$name.json > $R/$name.log 2>&1
      rc=$?; e=$(date +%s%N)
      echo "$name: rc $rc, $(( (e-s)/1000000 )) ms; $(grep -oE 'device solve [0-9.]+ [mµ]s' $R/$name.log); $(grep -oE 'device call \(all, with copies\) [0-9.]+ [mµ]?s' $R/$name.log); $(grep -oE '[0-9]+ iterations, relative residual [0-9.e+-]+' $R/$name.log | head -1); $(grep -oE 'GPU peak [0-9.]+ [GM]iB' $R/$name.log); md5 $(md5sum < $W/p.mrc | cut -c1-12)" | tee -a $R/summary.txt
    done
  done
done
if [ "$gpus" -ge 2 ]; then
  for rep in 1 2; do
    for v in float double; do
      sw=""; [ $v = double ] && sw="ESPGRID_PB_FLOAT_CYCLE=0"
      name=capsid-two-gpus-$v-$rep
      s=$(date +%s%N)
      env $sw ./build-gpu/espgrid map $W/capsid.pqr --spacing 1 --padding 10 --model pb --devices 0,1 -o $W/p.mrc --json $R/$name.json > $R/$name.log 2>&1
      rc=$?; e=$(date +%s%N)
      echo "$name: rc $rc, $(( (e-s)/1000000 )) ms; $(grep -oE 'device solve [0-9.]+ [mµ]s' $R/$name.log); $(grep -oE 'device call \(all, with copies\) [0-9.]+ [mµ]?s' $R/$name.log); $(grep -oE '[0-9]+ iterations, relative residual [0-9.e+-]+' $R/$name.log | head -1); md5 $(md5sum < $W/p.mrc | cut -c1-12)" | tee -a $R/summary.txt
    done
  done
fi
rm -f $W/p.mrc
cd $OUT && tar czf s15b.tgz s15b && rm -rf s15b
