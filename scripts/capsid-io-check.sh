#!/usr/bin/env bash
# The capsid's whole process on one GPU with the PQR read in ranges on or off (ESPGRID_PQR_RANGES),
# interleaved:
# `espgrid map capsid.pqr --model pb --spacing 1 --padding 10 -o p.mrc --json`, traced
# (ESPGRID_TRACE_PROCESS). Builds the capsid (benchmarks/make_capsid.py) in $WORK when missing.
# Needs a built espgrid ($BUILD_DIR, default build-gpu: scripts/device-check.sh build).
#
#   OUT=... WORK=/tmp/w bash scripts/capsid-io-check.sh [REPEATS]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
OUT=${OUT:-benchmarks/results/capsid-io-$(date -u +%Y-%m-%d)}
WORK=${WORK:-/tmp/espgrid-capsid}
BUILD_DIR=${BUILD_DIR:-build-gpu}
repeats=${1:-3}
mkdir -p "$OUT" "$WORK"
{ nvidia-smi -L; date -u; uname -r; nproc; df -T "$WORK"; } > "$OUT/device.txt" 2>&1
[ -s "$WORK/capsid.pqr" ] ||
  python3 benchmarks/make_capsid.py data/achbp.pqr --per-unit 2 -o "$WORK/capsid.pqr" > "$OUT/capsid-make.log" 2>&1 ||
  { echo "capsid-io-check: make_capsid.py failed (see $OUT/capsid-make.log)"; exit 1; }
for rep in $(seq 1 "$repeats"); do
  for v in ESPGRID_PQR_RANGES=0 ESPGRID_PQR_RANGES=1; do
    name=ranges${v: -1}-$rep
    rm -f "$WORK/p.mrc"; sync
    start=$(date +%s%N)
    env $v CUDA_VISIBLE_DEVICES=0 ESPGRID_TRACE_PROCESS=1 "./$BUILD_DIR/espgrid" map "$WORK/capsid.pqr" --model pb \
      --spacing 1 --padding 10 -o "$WORK/p.mrc" --json "$OUT/$name.json" > "$OUT/$name.log" 2>&1
    rc=$?
    end=$(date +%s%N)
    echo "$name ($v): rc $rc, $(( (end - start) / 1000000 )) ms; $(grep -E '^time' "$OUT/$name.log")" |
      tee -a "$OUT/summary.txt"
    echo "$name $(md5sum < "$WORK/p.mrc")" >> "$OUT/p-md5.txt"
  done
done
