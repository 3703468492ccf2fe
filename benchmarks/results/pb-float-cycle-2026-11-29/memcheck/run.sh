#!/usr/bin/env bash
# Session 15, call 4: main at 26cb620. Build espgrid and the PB test binaries, compute-sanitizer memcheck
# over the float cycle's test (one GPU) and the two-GPU slab test (float planes exchanged between devices),
# then the PB GPU tests.
set -u
R=$OUT/s15d; mkdir -p $R
date -u > $R/date.txt; nvidia-smi -L > $R/gpus.txt
t=$SECONDS
BUILD_DIR=build-gpu bash scripts/device-check.sh build > $R/build.log 2>&1 || { echo build failed; tail -40 $R/build.log; exit 1; }
echo "build $((SECONDS-t)) s"
export ESPGRID_REQUIRE_GPU=1 ESPGRID_REQUIRE_MULTI_GPU=1
t=$SECONDS
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 99 --leak-check full build-gpu/tests/test_pb_scale \
  --gtest_filter='PbPipelineGpu.FloatCycleGivesTheDoubleCyclesMapInLessMemory' > $R/memcheck-float.log 2>&1
echo "memcheck float test rc $? in $((SECONDS-t)) s; $(grep -E 'ERROR SUMMARY' $R/memcheck-float.log | tail -1)"
t=$SECONDS
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 99 build-gpu/tests/test_pb_slabs \
  --gtest_filter='PbSlabsGpu.SlabsOnTwoDevicesGiveTheOneSlabMap' > $R/memcheck-slabs.log 2>&1
echo "memcheck two-GPU slabs rc $? in $((SECONDS-t)) s; $(grep -E 'ERROR SUMMARY' $R/memcheck-slabs.log | tail -1)"
t=$SECONDS
ctest --test-dir build-gpu --output-on-failure -j 8 -R "Pb.*Gpu|PbCli|Streaming|Apbs" --timeout 300 > $R/ctest.log 2>&1
echo "ctest rc $? in $((SECONDS-t)) s"; grep -E "tests passed|tests failed|\(Failed\)|Not Run" $R/ctest.log | head
grep -h "\[ float    \]" $R/memcheck-float.log $R/ctest.log | head -8
cd $OUT && tar czf s15d.tgz s15d && rm -rf s15d
