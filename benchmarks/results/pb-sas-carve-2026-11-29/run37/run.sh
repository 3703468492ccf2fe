#!/usr/bin/env bash
# issue 33: the SAS carve with the warp carving each open point's probe spheres together (and one counter
# add a warp). Old (188049a) against new interleaved 3x on capsid, 290k, 47k: md5 equal, surface times; then
# the PB/APBS/frame tests with the GPU required.
set -u
PY=$(command -v python3)
R=$OUT/r37; W=/tmp/w; mkdir -p $R $W
( "$PY" benchmarks/make_capsid.py data/achbp.pqr --per-unit 2 -o $W/capsid.pqr > $R/capsid-make.log 2>&1
  "$PY" scripts/make_lattice_structure.py data/actin_dimer.pqr --copies 2x2x1 --gap 2 -o $W/actin4.pqr > /dev/null
  "$PY" scripts/make_lattice_structure.py data/achbp.pqr --atoms 300000 -o $W/achbp18.pqr > /dev/null ) &
mk=$!
( cmake -S .device/old-src -B .device/old-build -DESPGRID_VTK=OFF -DESPGRID_PYTHON=OFF -DCMAKE_BUILD_TYPE=Release \
  -DESPGRID_TESTS=OFF -DCMAKE_PREFIX_PATH=$PWD/.device/hwy > $R/old-build.log 2>&1 &&
  nice cmake --build .device/old-build -j 6 --target espgrid >> $R/old-build.log 2>&1; echo "old build rc $?" >> $R/old-build.log ) &
old=$!
t=$SECONDS; OUT= LOG_DIR=$R/build timeout 330 bash scripts/device-check.sh build > $R/build.out 2>&1; echo "build rc $? in $((SECONDS-t)) s"
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
      log=$R/$case-$which-$rep.log
      s=$(date +%s%N); $bin map $args --model pb -o $W/m.mrc > $log 2>&1; rc=$?; e=$(date +%s%N)
      echo "$case $which $rep rc $rc wall $(( (e - s) / 1000000 )) ms $(md5sum < $W/m.mrc | cut -c1-12) $(grep -o 'device surface [0-9.]* ms' $log) $(grep -o 'device call (all, with copies) [0-9.]* [m]*s' $log)"
      rm -f $W/m.mrc
    done
  done
done
t=$SECONDS
ESPGRID_REQUIRE_GPU=1 timeout 200 ctest --test-dir build-gpu -R "Pb|Apbs|Frame|mpi" -j8 > $R/ctest.log 2>&1
echo "ctest rc $? in $((SECONDS-t)) s"; grep -E "tests passed|tests failed" $R/ctest.log; grep -E "\*\*\*Failed|Failed  " $R/ctest.log | head
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/machine.txt; date -u >> $R/machine.txt
cd $OUT && tar czf r37.tgz r37 && rm -rf r37
