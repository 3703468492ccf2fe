#!/usr/bin/env bash
# Session 15, call 1 (2 x H200): main at 67ea9a5. Full build, the whole GPU suite with one GPU and two
# required, then scripts/pb-slabs-check.sh (slab tests, 290k and capsid on one GPU / two slabs on one /
# two GPUs, 3 runs each, and the capsid at 0.5 A on one and on two).
set -u
R=$OUT/s15a; mkdir -p $R
nvidia-smi > $R/nvidia-smi.txt; nvidia-smi topo -m >> $R/nvidia-smi.txt 2>&1; date -u > $R/date.txt; nproc > $R/nproc.txt
t=$SECONDS
BUILD_DIR=build-gpu bash scripts/device-check.sh build > $R/build.log 2>&1 || { echo build failed; tail -40 $R/build.log; exit 1; }
echo "build $((SECONDS-t)) s"
t=$SECONDS
ESPGRID_REQUIRE_GPU=1 ESPGRID_REQUIRE_MULTI_GPU=1 ctest --test-dir build-gpu --output-on-failure -j 8 -LE 'interop|python' --timeout 900 > $R/ctest.log 2>&1
echo "ctest rc $? in $((SECONDS-t)) s" | tee -a $R/summary.txt
grep -E "tests passed|tests failed|Total Test time" $R/ctest.log | tee -a $R/summary.txt
grep -E "\(Failed\)|\(Timeout\)" $R/ctest.log | head -20 | tee -a $R/summary.txt
t=$SECONDS
OUT=$R/slabs RUNS=3 bash scripts/pb-slabs-check.sh test process big > $R/slabs.log 2>&1
echo "slabs rc $? in $((SECONDS-t)) s"
cat $R/slabs/summary.txt
for f in $R/slabs/*.log; do n=$(basename $f .log); echo "$n: $(grep -oE 'device solve [0-9.]+ [mµ]s' $f); $(grep -oE 'device call \(all, with copies\) [0-9.]+ [mµ]?s' $f); $(grep -oE 'total [0-9.]+ [mµ]?s' $f)"; done 2>/dev/null | grep -v "^build\|^test" 
cd $OUT && tar czf s15a.tgz s15a && rm -rf s15a
