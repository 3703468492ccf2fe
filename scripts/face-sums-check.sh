#!/usr/bin/env bash
# The boundary's banded sum on a GPU host (issue 33, --boundary-accuracy): builds (scripts/
# device-check.sh's build-gpu/ plus the pb_face_sums benchmark), runs the PB face-sum and pipeline
# GPU tests with the GPU required, then benchmarks/pb_face_sums (exact against banded: times,
# largest difference, terms) on the actin dimer, 18 AChBPs (289,620 atoms) and the 1.93 M-atom
# capsid at 1 Å, and the whole PB processes of scripts/pb-scale-check.sh (`process`, the capsid at
# 1 Å) with the default bound. Logs go to $OUT (default benchmarks/results/face-sums-DATE).
#
#   bash scripts/face-sums-check.sh [build] [test] [bench] [process]   (default: all four)
set -uo pipefail
phases=" ${*:-build test bench process} "
want() { [[ "$phases" == *" $1 "* ]]; }
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-benchmarks/results/face-sums-$(date -u +%Y-%m-%d)}
WORK=${WORK:-/tmp/espgrid-pb-scale}
PY=${PY:-$(command -v python3)}
B=build-gpu
mkdir -p "$OUT" "$WORK"
. scripts/lib/timed_run.sh
note_device
if want build; then
  run build bash scripts/device-check.sh build
  run build-bench cmake --build $B --target pb_face_sums test_pb_scale -j "$(nproc)"
fi
if want test; then
  ESPGRID_REQUIRE_GPU=1 run test-face-sums $B/tests/test_pb_scale --gtest_filter='PbFaceSums*:PbPipelineGpu*'
fi
[ -s "$WORK/achbp18.pqr" ] || "$PY" scripts/make_lattice_structure.py data/achbp.pqr --atoms 300000 -o "$WORK/achbp18.pqr" >/dev/null
[ -s "$WORK/capsid.pqr" ] || run capsid-make "$PY" benchmarks/make_capsid.py data/achbp.pqr --per-unit 2 -o "$WORK/capsid.pqr"
if want bench; then
  run faces-actin $B/pb_face_sums data/actin_dimer.pqr 1 10 cuda 1e-4,1e-5,1e-6 5
  run faces-290k $B/pb_face_sums "$WORK/achbp18.pqr" 1 10 cuda 1e-4,1e-5,1e-6 5
  run faces-capsid $B/pb_face_sums "$WORK/capsid.pqr" 1 10 cuda 1e-4,1e-5 3
fi
if want process; then
  BUILD_DIR=$B OUT=$OUT/pb-scale CAPSID_PQR=$WORK/capsid.pqr BUDGET_S=0 run pb-scale \
    bash scripts/pb-scale-check.sh process capsid
  # The 290k and capsid processes at both settings, one GPU visible, three runs each (wall, JSON).
  for acc in 0 1e-5; do
    for r in 1 2 3; do
      CUDA_VISIBLE_DEVICES=0 run "process-290k-acc$acc-$r" $B/espgrid map "$WORK/achbp18.pqr" -o "$WORK/p.mrc" \
        --model pb --spacing 1 --padding 10 --boundary-accuracy $acc --json "$OUT/process-290k-acc$acc-$r.json"
      CUDA_VISIBLE_DEVICES=0 run "process-capsid-acc$acc-$r" $B/espgrid map "$WORK/capsid.pqr" -o "$WORK/p.mrc" \
        --model pb --spacing 1 --padding 10 --boundary-accuracy $acc --json "$OUT/process-capsid-acc$acc-$r.json"
    done
  done
  rm -f "$WORK/p.mrc"
fi
cat "$OUT"/faces-*.log > "$OUT/faces.txt" 2>/dev/null
exit $status
