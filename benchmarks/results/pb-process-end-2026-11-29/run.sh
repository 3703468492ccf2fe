#!/usr/bin/env bash
# Session 14, call 4: how the process ends. A: as built (the device released on a thread beside the
# files, joined before _Exit); B: ESPGRID_EARLY_RELEASE=0 (no release; the kernel's teardown at _Exit);
# C: ESPGRID_EXIT_BESIDE_RELEASE=1 (released beside, not joined: _Exit once the files are flushed).
set -u
PY=$(command -v python3)
R=$OUT/s14d; W=/tmp/w; mkdir -p $R $W
nvidia-smi > $R/nvidia-smi.txt; date -u > $R/date.txt
( "$PY" scripts/make_lattice_structure.py data/actin_dimer.pqr --copies 2x2x1 --gap 2 -o $W/actin4.pqr > /dev/null
  "$PY" scripts/make_lattice_structure.py data/achbp.pqr --atoms 300000 -o $W/achbp18.pqr > /dev/null ) &
mk=$!
t=$SECONDS
cmake -S . -B build-gpu -DESPGRID_VTK=OFF -DESPGRID_PYTHON=OFF -DESPGRID_TESTS=OFF -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=$PWD/.device/hwy > $R/build.log 2>&1 && cmake --build build-gpu -j 16 --target espgrid >> $R/build.log 2>&1 || { echo build failed; tail -30 $R/build.log; exit 1; }
echo "build $((SECONDS-t)) s"
wait $mk
grid161=$(grep -o "\-\-origin.*" benchmarks/results/pb-process-2026-11-28-sixth/grids.txt)
run() {  # name env args...
  local name=$1 sw=$2; shift 2
  rm -f $W/p.mrc /dev/shm/p.mrc; sync
  local s=$(date +%s%N)
  env $sw ESPGRID_TRACE_PROCESS=1 CUDA_VISIBLE_DEVICES=0 ./build-gpu/espgrid map "$@" > $R/$name.log 2>&1
  local rc=$? e=$(date +%s%N)
  echo "$name: rc $rc, $(( (e-s)/1000000 )) ms; $(grep -oE 'verb done, outputs written at [0-9.]+' $R/$name.log)" | tee -a $R/summary.txt
}
declare -A SW=([A]="ESPGRID_NOTHING=1" [B]="ESPGRID_EARLY_RELEASE=0" [C]="ESPGRID_EXIT_BESIDE_RELEASE=1")
for rep in 1 2 3 4 5; do
  for v in A B C; do run 47k-$v$rep "${SW[$v]}" $W/actin4.pqr $grid161 --model pb -o $W/p.mrc; done
done
for rep in 1 2 3; do
  for v in A B C; do run 290k-$v$rep "${SW[$v]}" $W/achbp18.pqr --spacing 1 --padding 10 --model pb -o $W/p.mrc; done
done
cd $OUT && tar czf s14d.tgz s14d && rm -rf s14d
