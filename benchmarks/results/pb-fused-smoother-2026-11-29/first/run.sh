#!/usr/bin/env bash
# Session 14, call 1: the fused smoothing pair (kernels/pb_fused_sweep.cuh). Full build, GPU suite
# (covers e4cc57e's upload_pieces mend too), then fused (as built) against ESPGRID_PB_FUSED_SWEEPS=0
# (two half-sweep launches a pair), interleaved: capsid, 290k, 47k; capsid also to /dev/shm; ncu of the
# smoothing kernels on the 290k map.
set -u
PY=$(command -v python3)
R=$OUT/s14a; W=/tmp/w; mkdir -p $R $W
nvidia-smi > $R/nvidia-smi.txt; date -u > $R/date.txt; nproc > $R/nproc.txt
( "$PY" benchmarks/make_capsid.py data/achbp.pqr --per-unit 2 -o $W/capsid.pqr > $R/capsid-make.log 2>&1
  "$PY" scripts/make_lattice_structure.py data/actin_dimer.pqr --copies 2x2x1 --gap 2 -o $W/actin4.pqr > /dev/null
  "$PY" scripts/make_lattice_structure.py data/achbp.pqr --atoms 300000 -o $W/achbp18.pqr > /dev/null ) &
mk=$!
t=$SECONDS
BUILD_DIR=build-gpu bash scripts/device-check.sh build > $R/build.log 2>&1 || { echo build failed; tail -40 $R/build.log; exit 1; }
echo "build $((SECONDS-t)) s"
t=$SECONDS
ESPGRID_REQUIRE_GPU=1 ctest --test-dir build-gpu --output-on-failure -j 8 -LE 'interop|python' --timeout 900 > $R/ctest.log 2>&1
echo "ctest rc $? in $((SECONDS-t)) s" | tee -a $R/summary.txt
grep -E "tests passed|tests failed|Total Test time" $R/ctest.log | tee -a $R/summary.txt
grep -E "\(Failed\)|\(Timeout\)" $R/ctest.log | head -20 | tee -a $R/summary.txt
grep -h -A12 "TheFusedSmoothingPair" $R/ctest.log | head -30 > $R/fused-test.txt
wait $mk
grid161=$(grep -o "\-\-origin.*" benchmarks/results/pb-process-2026-11-28-sixth/grids.txt)
for rep in 1 2 3; do
  for v in fused halves; do
    sw=""; [ $v = halves ] && sw="ESPGRID_PB_FUSED_SWEEPS=0"
    for case in capsid 290k 47k; do
      case $case in
        capsid) args="$W/capsid.pqr --spacing 1 --padding 10";;
        290k) args="$W/achbp18.pqr --spacing 1 --padding 10";;
        47k) args="$W/actin4.pqr $grid161";;
      esac
      name=$case-$v-$rep
      rm -f $W/p.mrc; sync
      s=$(date +%s%N)
      env $sw ESPGRID_TRACE_PROCESS=1 CUDA_VISIBLE_DEVICES=0 ./build-gpu/espgrid map $args --model pb -o $W/p.mrc --json $R/$name.json > $R/$name.log 2>&1
      rc=$?; e=$(date +%s%N)
      echo "$name: rc $rc, $(( (e-s)/1000000 )) ms; $(grep -oE 'device solve [0-9.]+ [mµ]s' $R/$name.log); $(grep -oE 'device surface [0-9.]+ [mµ]s' $R/$name.log); $(grep -oE '[0-9]+ iterations' $R/$name.log | head -1); md5 $(md5sum < $W/p.mrc | cut -c1-12)" | tee -a $R/summary.txt
    done
  done
done
for rep in 1 2; do  # the capsid's map to memory (tmpfs): the process without the host's disk
  rm -f /dev/shm/p.mrc; s=$(date +%s%N)
  ESPGRID_TRACE_PROCESS=1 CUDA_VISIBLE_DEVICES=0 ./build-gpu/espgrid map $W/capsid.pqr --spacing 1 --padding 10 --model pb -o /dev/shm/p.mrc > $R/capsid-shm-$rep.log 2>&1
  rc=$?; e=$(date +%s%N)
  echo "capsid-shm-$rep: rc $rc, $(( (e-s)/1000000 )) ms; md5 $(md5sum < /dev/shm/p.mrc | cut -c1-12)" | tee -a $R/summary.txt
  rm -f /dev/shm/p.mrc
done
timeout 120 /usr/local/cuda/bin/ncu --kernel-name-base function --kernel-name "regex:symmetric_pair|half_sweep|residual_kernel|prolong_add|restrict_kernel" --launch-count 40 \
  --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,dram__bytes.sum,sm__warps_active.avg.pct_of_peak_sustained_active \
  --csv --page raw ./build-gpu/espgrid map $W/achbp18.pqr --spacing 1 --padding 10 --model pb -o $W/q.mrc > $R/ncu.csv 2> $R/ncu.err
echo "ncu rc $?"
cd $OUT && tar czf s14a.tgz s14a && rm -rf s14a
