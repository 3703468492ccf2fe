#!/bin/bash
# alternating old/new, 3 rounds, cpu-simd vs cpu-reference ratio
for dims in 17,33,16 33,33,16 24,24,16 16,64,16 32,32,16 40,40,16 9,64,16 48,48,16 64,64,16 128,128,16 97,61,8; do
  for round in 1 2 3; do
    for b in base new; do
      out=$(/tmp/espgrid-$b bench --kernel cpu-reference,cpu-simd --threads 1 --atoms 20000 --seed 5 --dims $dims 2>&1)
      ref=$(echo "$out" | awk '$1=="cpu-reference"{print $9}')
      simd=$(echo "$out" | awk '$1=="cpu-simd"{print $9}')
      echo "$dims $b $round $ref $simd"
    done
  done
done
