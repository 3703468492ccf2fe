#!/usr/bin/env bash
# issue 33: the pipeline's assembly before the boundary's values (charges' bins, hierarchy, coarse
# operators queued while the boundary's sums finish) and the host SAS chunks; old = 9357915's pipeline
# (the SAS chunks in both). The GPU suite with the GPU required; the capsid and the 290k map, interleaved.
set -u
PY=$(command -v python3)
R=$OUT/r28; W=/tmp/w; mkdir -p $R $W
( "$PY" benchmarks/make_capsid.py data/achbp.pqr --per-unit 2 -o $W/capsid.pqr > $R/capsid-make.log 2>&1
  "$PY" scripts/make_lattice_structure.py data/achbp.pqr --atoms 300000 -o $W/achbp18.pqr > /dev/null ) &
mk=$!
t=$SECONDS; OUT= LOG_DIR=$R/device-check timeout 300 bash scripts/device-check.sh build test > $R/device-check.out 2>&1
echo "device-check rc $? in $((SECONDS-t)) s"
grep -hE "tests passed|tests failed" $R/device-check/*.log | head
t=$SECONDS
cmake -S .device/old-src -B .device/old-build -DESPGRID_VTK=OFF -DESPGRID_PYTHON=OFF -DCMAKE_BUILD_TYPE=Release \
  -DESPGRID_TESTS=OFF -DCMAKE_PREFIX_PATH=$PWD/.device/hwy > $R/old-build.log 2>&1 &&
  cmake --build .device/old-build -j $(nproc) --target espgrid >> $R/old-build.log 2>&1
echo "old built rc $? in $((SECONDS-t)) s"
wait $mk
for rep in 1 2 3; do
  for which in old new; do
    bin=./build-gpu/espgrid; [ $which = old ] && bin=./.device/old-build/espgrid
    for case in capsid 290k; do
      case $case in
        capsid) args="$W/capsid.pqr --spacing 1 --padding 10";;
        290k) args="$W/achbp18.pqr --spacing 1 --padding 10";;
      esac
      name=$case-$which-$rep
      rm -f $W/p.mrc; sync
      s=$(date +%s%N)
      CUDA_VISIBLE_DEVICES=0 ESPGRID_TRACE_PROCESS=1 $bin map $args --model pb -o $W/p.mrc --json $R/$name.json > $R/$name.log 2>&1
      rc=$?; e=$(date +%s%N)
      echo "$name: rc $rc, $(( (e-s)/1000000 )) ms; $(grep -E '^time' $R/$name.log); md5 $(md5sum < $W/p.mrc | cut -c1-12)" | tee -a $R/summary.txt
      grep -E "^phases" $R/$name.log | tr ',' '\n' | grep -E "wait|assembl|surface|solve|outputs|call" | tr '\n' ';' >> $R/summary.txt; echo >> $R/summary.txt
    done
  done
done
cd $OUT && tar czf r28.tgz r28 && rm -rf r28
