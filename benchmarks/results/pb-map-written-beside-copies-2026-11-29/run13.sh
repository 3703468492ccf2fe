#!/usr/bin/env bash
# Session 13, call 6: the PB map's file written beside the device's copies back. Full build, GPU suite,
# the capsid streamed (as is) against --no-stream (written after), interleaved, traced.
set -uo pipefail
R=$OUT/s13e; mkdir -p $R
nvidia-smi > $R/nvidia-smi.txt; date -u > $R/date.txt; nproc > $R/nproc.txt
BUILD_DIR=build-gpu bash scripts/device-check.sh build > $R/build.log 2>&1 || { echo build failed; tail -30 $R/build.log; exit 1; }
python3 benchmarks/make_capsid.py data/achbp.pqr --per-unit 2 -o /tmp/capsid.pqr > $R/make.log 2>&1 &
MK=$!
ESPGRID_REQUIRE_GPU=1 ctest --test-dir build-gpu --output-on-failure -j 8 -LE 'interop|python' --timeout 900 > $R/ctest.log 2>&1
echo "ctest rc $?" | tee -a $R/summary.txt
grep -E "tests passed|tests failed|Total Test time" $R/ctest.log | tee -a $R/summary.txt
grep -E "\(Failed\)|\(Timeout\)" $R/ctest.log | head -20 | tee -a $R/summary.txt
wait $MK || { cat $R/make.log; exit 1; }
declare -A ARGS=([A]="" [B]="--no-stream")
for i in 1 2 3; do
  for v in A B; do
    out=/tmp/capsid-$v$i.mrc
    s=$(date +%s%N)
    ESPGRID_TRACE_PROCESS=1 CUDA_VISIBLE_DEVICES=0 build-gpu/espgrid map /tmp/capsid.pqr --model pb --spacing 1 --padding 10 -o $out ${ARGS[$v]} --json $R/capsid-$v$i.json > $R/capsid-$v$i.log 2>&1
    rc=$?; e=$(date +%s%N)
    echo "capsid $v$i rc $rc wall_ms $(( (e - s) / 1000000 )) md5 $(md5sum < $out | cut -c1-12) $(grep -o 'device call (all, with copies) [0-9.]* ms' $R/capsid-$v$i.log) $(grep -o 'write [0-9.]* [mµ]*s' $R/capsid-$v$i.log | head -1)" | tee -a $R/summary.txt
    rm -f $out
  done
done
tar czf $OUT/s13e.tar.gz -C $OUT s13e && rm -rf $R $OUT/device-check*
