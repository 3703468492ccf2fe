#!/usr/bin/env bash
# issue 33: the SAS carve kernel as before, bounded to 4 blocks an SM (ESPGRID_PB_CARVE=1) or not (0), interleaved 3x
# in shared memory) interleaved 3x on capsid, 290k, 47k: md5 equal, surface times; pipeline tests under variant 1.
set -u
PY=$(command -v python3)
R=$OUT/r39; W=/tmp/w; mkdir -p $R $W
( "$PY" benchmarks/make_capsid.py data/achbp.pqr --per-unit 2 -o $W/capsid.pqr > $R/capsid-make.log 2>&1
  "$PY" scripts/make_lattice_structure.py data/actin_dimer.pqr --copies 2x2x1 --gap 2 -o $W/actin4.pqr > /dev/null
  "$PY" scripts/make_lattice_structure.py data/achbp.pqr --atoms 300000 -o $W/achbp18.pqr > /dev/null ) &
mk=$!
t=$SECONDS; OUT= LOG_DIR=$R/build timeout 330 bash scripts/device-check.sh build > $R/build.out 2>&1; echo "build rc $? in $((SECONDS-t)) s"
wait $mk
grid161=$(grep -o "\-\-origin.*" benchmarks/results/pb-process-2026-11-28-sixth/grids.txt)
for rep in 1 2 3; do
  for v in 0 1; do
    for case in capsid 290k 47k; do
      case $case in
        capsid) args="$W/capsid.pqr --spacing 1 --padding 10";;
        290k) args="$W/achbp18.pqr --spacing 1 --padding 10";;
        47k) args="$W/actin4.pqr $grid161";;
      esac
      log=$R/$case-v$v-$rep.log
      s=$(date +%s%N); ESPGRID_PB_CARVE=$v ./build-gpu/espgrid map $args --model pb -o $W/m.mrc > $log 2>&1; rc=$?; e=$(date +%s%N)
      echo "$case v$v $rep rc $rc wall $(( (e - s) / 1000000 )) ms $(md5sum < $W/m.mrc | cut -c1-12) $(grep -o 'device surface [0-9.]* ms' $log) $(grep -o 'device call (all, with copies) [0-9.]* [m]*s' $log)"
      rm -f $W/m.mrc
    done
  done
done
t=$SECONDS
ESPGRID_PB_CARVE=1 ESPGRID_REQUIRE_GPU=1 timeout 150 ctest --test-dir build-gpu -R "PbPipeline|PbSlab|PbFrames|PbGpu" -j8 > $R/ctest-v2.log 2>&1
echo "ctest (variant 1) rc $? in $((SECONDS-t)) s"; grep -E "tests passed|tests failed" $R/ctest-v2.log; grep -E "\*\*\*Failed|Failed  " $R/ctest-v2.log | head
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/machine.txt; date -u >> $R/machine.txt
cd $OUT && tar czf r39.tgz r39 && rm -rf r39
