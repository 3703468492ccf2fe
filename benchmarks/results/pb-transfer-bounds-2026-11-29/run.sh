#!/usr/bin/env bash
# Session 14, call 5: restrict_kernel bounded to 4 blocks an SM, prolong_add_kernel to 8. Full build and
# GPU suite of the change; capsid and 290k whole processes against HEAD (b4490e9) interleaved.
set -u
PY=$(command -v python3)
R=$OUT/s14e; W=/tmp/w; mkdir -p $R $W
nvidia-smi > $R/nvidia-smi.txt; date -u > $R/date.txt
( "$PY" benchmarks/make_capsid.py data/achbp.pqr --per-unit 2 -o $W/capsid.pqr > $R/capsid-make.log 2>&1
  "$PY" scripts/make_lattice_structure.py data/achbp.pqr --atoms 300000 -o $W/achbp18.pqr > /dev/null ) &
mk=$!
( cmake -S .device/old-src -B .device/old-build -DESPGRID_VTK=OFF -DESPGRID_PYTHON=OFF -DESPGRID_WEB=OFF -DCMAKE_BUILD_TYPE=Release \
  -DESPGRID_TESTS=OFF -DCMAKE_PREFIX_PATH=$PWD/.device/hwy > $R/old-build.log 2>&1 &&
  nice cmake --build .device/old-build -j 6 --target espgrid >> $R/old-build.log 2>&1; echo "old build rc $?" >> $R/old-build.log ) &
old=$!
t=$SECONDS
BUILD_DIR=build-gpu bash scripts/device-check.sh build > $R/build.log 2>&1 || { echo build failed; tail -40 $R/build.log; exit 1; }
echo "build $((SECONDS-t)) s"
t=$SECONDS
ESPGRID_REQUIRE_GPU=1 ctest --test-dir build-gpu --output-on-failure -j 8 -LE 'interop|python' --timeout 900 > $R/ctest.log 2>&1
echo "ctest rc $? in $((SECONDS-t)) s" | tee -a $R/summary.txt
grep -E "tests passed|tests failed|Total Test time" $R/ctest.log | tee -a $R/summary.txt
grep -E "\(Failed\)|\(Timeout\)" $R/ctest.log | head -20 | tee -a $R/summary.txt
wait $old; tail -1 $R/old-build.log
wait $mk
for rep in 1 2 3; do
  for v in new old; do
    bin=./build-gpu/espgrid; [ $v = old ] && bin=./.device/old-build/espgrid
    for case in capsid 290k; do
      case $case in
        capsid) args="$W/capsid.pqr --spacing 1 --padding 10";;
        290k) args="$W/achbp18.pqr --spacing 1 --padding 10";;
      esac
      name=$case-$v-$rep
      rm -f $W/p.mrc; sync
      s=$(date +%s%N)
      ESPGRID_TRACE_PROCESS=1 CUDA_VISIBLE_DEVICES=0 $bin map $args --model pb -o $W/p.mrc > $R/$name.log 2>&1
      rc=$?; e=$(date +%s%N)
      echo "$name: rc $rc, $(( (e-s)/1000000 )) ms; $(grep -oE 'device solve [0-9.]+ [mµ]s' $R/$name.log); $(grep -oE '[0-9]+ iterations' $R/$name.log | head -1); md5 $(md5sum < $W/p.mrc | cut -c1-12)" | tee -a $R/summary.txt
    done
  done
done
cd $OUT && tar czf s14e.tgz s14e && rm -rf s14e
