#!/usr/bin/env bash
# Session 13, call 3: the solve's preparation queued before the boundary values, the boundary's
# buffers freed in its stream's order. Full build, GPU suite, capsid variants interleaved (traced),
# and the host's write throughput (one write against threads' pwrite and a filled mapping).
set -uo pipefail
R=$OUT/s13c; mkdir -p $R
nvidia-smi > $R/nvidia-smi.txt; date -u > $R/date.txt; nproc > $R/nproc.txt; df -T /tmp > $R/df.txt; mount | grep -E " / | /tmp " > $R/mount.txt
BUILD_DIR=build-gpu bash scripts/device-check.sh build > $R/build.log 2>&1 || { echo build failed; tail -30 $R/build.log; exit 1; }
python3 benchmarks/make_capsid.py data/achbp.pqr --per-unit 2 -o /tmp/capsid.pqr > $R/make.log 2>&1 &
MK=$!
g++ -O2 -std=c++17 -pthread .device/bench_write.cpp -o /tmp/bw
ESPGRID_REQUIRE_GPU=1 ctest --test-dir build-gpu --output-on-failure -j 8 -LE 'interop|python' --timeout 900 > $R/ctest.log 2>&1
echo "ctest rc $?" | tee -a $R/summary.txt
grep -E "tests passed|tests failed|Total Test time" $R/ctest.log | tee -a $R/summary.txt
grep -E "\(Failed\)|\(Timeout\)|\*\*\*" $R/ctest.log | head -20 | tee -a $R/summary.txt
wait $MK || { cat $R/make.log; exit 1; }
declare -A ENVS=([A]="X=1" [B]="ESPGRID_PB_PREPARE_EARLY=0 ESPGRID_BOUNDARY_ORDERED_FREE=0" [C]="ESPGRID_BOUNDARY_ORDERED_FREE=0" [D]="ESPGRID_PB_PREPARE_EARLY=0")
for i in 1 2 3; do
  for v in A B C D; do
    out=/tmp/capsid-$v$i.mrc
    s=$(date +%s%N)
    env ${ENVS[$v]} ESPGRID_TRACE_PROCESS=1 CUDA_VISIBLE_DEVICES=0 build-gpu/espgrid map /tmp/capsid.pqr --model pb --spacing 1 --padding 10 -o $out --json $R/capsid-$v$i.json > $R/capsid-$v$i.log 2>&1
    rc=$?; e=$(date +%s%N)
    echo "capsid $v$i rc $rc wall_ms $(( (e - s) / 1000000 )) md5 $(md5sum < $out | cut -c1-12) $(grep -o 'waiting for the boundary values [0-9.]* ms' $R/capsid-$v$i.log) $(grep -o 'device charges, assembly and hierarchy [0-9.]* ms' $R/capsid-$v$i.log) $(grep -o 'device call (all, with copies) [0-9.]* ms' $R/capsid-$v$i.log)" | tee -a $R/summary.txt
    rm -f $out
  done
done
/tmp/bw /tmp/bw.bin > $R/bench_write.txt 2>&1; tail -7 $R/bench_write.txt
tar czf $OUT/s13c.tar.gz -C $OUT s13c && rm -rf $R $OUT/device-check*
