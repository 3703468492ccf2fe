#!/usr/bin/env bash
# Session 13 first call: full build, GPU suite (covers 6dee73f's kept_host_count), capsid 3 rounds, 2 traced runs.
set -uo pipefail
R=$OUT/s13a; mkdir -p $R
nvidia-smi > $R/nvidia-smi.txt; date -u > $R/date.txt; nproc > $R/nproc.txt; git log --oneline -1 > $R/commit.txt 2>/dev/null
BUILD_DIR=build-gpu bash scripts/device-check.sh build > $R/build.log 2>&1 || { echo build failed; tail -20 $R/build.log; exit 1; }
python3 benchmarks/make_capsid.py data/achbp.pqr --per-unit 2 -o /tmp/capsid.pqr > $R/make.log 2>&1 &
MK=$!
ESPGRID_REQUIRE_GPU=1 ctest --test-dir build-gpu --output-on-failure -j 8 -LE 'interop|python' --timeout 900 > $R/ctest.log 2>&1
echo "ctest rc $?" | tee -a $R/summary.txt
grep -E "tests passed|tests failed|Total Test time" $R/ctest.log | tee -a $R/summary.txt
wait $MK || { cat $R/make.log; exit 1; }
for i in 1 2 3; do
  out=/tmp/capsid-$i.mrc
  s=$(date +%s%N)
  CUDA_VISIBLE_DEVICES=0 build-gpu/espgrid map /tmp/capsid.pqr --model pb --spacing 1 --padding 10 -o $out --json $R/capsid-$i.json > $R/capsid-$i.log 2>&1
  rc=$?; e=$(date +%s%N)
  echo "capsid $i rc $rc wall_ms $(( (e - s) / 1000000 )) md5 $(md5sum < $out | cut -c1-12)" | tee -a $R/summary.txt
  rm -f $out
done
for i in 1 2; do
ESPGRID_TRACE_PROCESS=1 CUDA_VISIBLE_DEVICES=0 build-gpu/espgrid map /tmp/capsid.pqr --model pb --spacing 1 --padding 10 -o /tmp/t.mrc > $R/trace$i.log 2>&1
rm -f /tmp/t.mrc
done
tar czf $OUT/s13a.tar.gz -C $OUT s13a && rm -rf $R $OUT/device-check*
