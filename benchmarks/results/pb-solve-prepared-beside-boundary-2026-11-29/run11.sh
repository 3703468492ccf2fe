#!/usr/bin/env bash
# Which of the driver's settings lets the boundary's work run beside the surface: hardware queues
# (CUDA_DEVICE_MAX_CONNECTIONS) and eager module loading, by environment, interleaved, traced.
set -uo pipefail
R=$OUT/s13b; mkdir -p $R
date -u > $R/date.txt
cmake -S . -B build-gpu -DESPGRID_VTK=OFF -DESPGRID_PYTHON=OFF -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.device/hwy" > $R/configure.log 2>&1 && cmake --build build-gpu -j "$(nproc)" --target espgrid > $R/build.log 2>&1 || { echo build failed; tail -20 $R/build.log; exit 1; }
python3 benchmarks/make_capsid.py data/achbp.pqr --per-unit 2 -o /tmp/capsid.pqr > $R/make.log 2>&1 || { cat $R/make.log; exit 1; }
declare -A ENVS=([A]="X=1" [B]="CUDA_DEVICE_MAX_CONNECTIONS=32" [C]="CUDA_MODULE_LOADING=EAGER" [D]="CUDA_DEVICE_MAX_CONNECTIONS=32 CUDA_MODULE_LOADING=EAGER" [E]="CUDA_DEVICE_MAX_CONNECTIONS=1")
for i in 1 2 3; do
  for v in A B C D E; do
    out=/tmp/capsid-$v$i.mrc
    s=$(date +%s%N)
    env ${ENVS[$v]} ESPGRID_TRACE_PROCESS=1 CUDA_VISIBLE_DEVICES=0 build-gpu/espgrid map /tmp/capsid.pqr --model pb --spacing 1 --padding 10 -o $out --json $R/capsid-$v$i.json > $R/capsid-$v$i.log 2>&1
    rc=$?; e=$(date +%s%N)
    echo "capsid $v$i rc $rc wall_ms $(( (e - s) / 1000000 )) md5 $(md5sum < $out | cut -c1-12) $(grep -o 'waiting for the boundary values [0-9.]* ms' $R/capsid-$v$i.log) $(grep -o 'device surface [0-9.]* ms' $R/capsid-$v$i.log)" | tee -a $R/summary.txt
    rm -f $out
  done
done
tar czf $OUT/s13b.tar.gz -C $OUT s13b && rm -rf $R
