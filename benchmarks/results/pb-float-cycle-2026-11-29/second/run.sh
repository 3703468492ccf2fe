#!/usr/bin/env bash
# Session 15, call 3: the float cycle after its fixes. Full build, the GPU suite (two GPUs required),
# then the capsid and 290k maps float against ESPGRID_PB_FLOAT_CYCLE=0 compared value by value, and the
# capsid's whole process on one and on two GPUs (the contexts now made side by side), 3 runs each.
set -u
PY=$(command -v python3)
R=$OUT/s15c; W=/tmp/w; mkdir -p $R $W
nvidia-smi > $R/nvidia-smi.txt; date -u > $R/date.txt
gpus=$(nvidia-smi -L | wc -l)
( "$PY" benchmarks/make_capsid.py data/achbp.pqr --per-unit 2 -o $W/capsid.pqr > $R/capsid-make.log 2>&1
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
grep -h -A6 "Failure" $R/ctest.log | head -40 | tee -a $R/summary.txt
wait $mk
for case in 290k capsid; do
  f=$W/achbp18.pqr; [ $case = capsid ] && f=$W/capsid.pqr
  CUDA_VISIBLE_DEVICES=0 ./build-gpu/espgrid map $f --spacing 1 --padding 10 --model pb -o $W/$case-float.mrc > $R/$case-float.log 2>&1
  ESPGRID_PB_FLOAT_CYCLE=0 CUDA_VISIBLE_DEVICES=0 ./build-gpu/espgrid map $f --spacing 1 --padding 10 --model pb -o $W/$case-double.mrc > $R/$case-double.log 2>&1
  "$PY" - $W/$case-float.mrc $W/$case-double.mrc <<'PYEOF' | tee -a $R/summary.txt
import sys, numpy as np
a = np.fromfile(sys.argv[1], dtype=np.float32, offset=1024).astype(np.float64)
b = np.fromfile(sys.argv[2], dtype=np.float32, offset=1024).astype(np.float64)
d = a - b
print(f"{sys.argv[1].split('/')[-1]} vs double cycle: {a.size} values, {np.count_nonzero(d)} differ "
      f"({100*np.count_nonzero(d)/a.size:.4f}%), max |diff| {np.abs(d).max():.3e} kT/e, "
      f"relative RMS {np.sqrt((d*d).sum()/(b*b).sum()):.3e}, max |phi| {np.abs(b).max():.1f}")
PYEOF
  rm -f $W/$case-float.mrc $W/$case-double.mrc
done
for rep in 1 2 3; do
  for devs in 0 0,1; do
    [ $devs = 0,1 ] && [ "$gpus" -lt 2 ] && continue
    name=capsid-devices-${devs/,/-}-$rep
    rm -f $W/p.mrc; sync
    s=$(date +%s%N)
    ./build-gpu/espgrid map $W/capsid.pqr --spacing 1 --padding 10 --model pb --devices $devs -o $W/p.mrc --json $R/$name.json > $R/$name.log 2>&1
    rc=$?; e=$(date +%s%N)
    echo "$name: rc $rc, wall $(( (e-s)/1000000 )) ms; $(grep -oE 'memory check \([^)]*\) [0-9.]+ [mµ]s' $R/$name.log); $(grep -oE 'device solve [0-9.]+ [mµ]s' $R/$name.log); $(grep -oE 'device call \(all, with copies\) [0-9.]+ [mµ]?s' $R/$name.log); $(grep -oE 'total [0-9.]+ [mµ]?s' $R/$name.log); md5 $(md5sum < $W/p.mrc | cut -c1-12)" | tee -a $R/summary.txt
  done
done
rm -f $W/p.mrc
cd $OUT && tar czf s15c.tgz s15c && rm -rf s15c
