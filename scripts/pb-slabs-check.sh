#!/usr/bin/env bash
# A PB grid split over GPUs (issue 33, `espgrid map --model pb --devices ...`) on a GPU host: builds
# (scripts/device-check.sh's build-gpu/ and test_pb_slabs), runs the slab tests and the pipeline's
# GPU tests with the GPU required (and two GPUs required where the host has two), then whole
# processes on one GPU, two slabs on one GPU and one slab on each of two GPUs ($RUNS runs each, 3 by default,
# --json) for 18 AChBPs (289,620 atoms) and the 1.93 M-atom capsid at 1 Å, and the capsid at 0.5 Å
# (~2·10⁹ points, more than one 80 GB GPU holds) on two. Logs go to $OUT (default
# benchmarks/results/pb-slabs-DATE).
#
#   bash scripts/pb-slabs-check.sh [build] [test] [process] [big]   (default: all four)
set -uo pipefail
phases=" ${*:-build test process big} "
want() { [[ "$phases" == *" $1 "* ]]; }
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-benchmarks/results/pb-slabs-$(date -u +%Y-%m-%d)}
WORK=${WORK:-/tmp/espgrid-pb-slabs}
PY=${PY:-$(command -v python3)}
B=build-gpu
mkdir -p "$OUT" "$WORK"
. scripts/lib/timed_run.sh
note_device
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
if want build; then
  run build bash scripts/device-check.sh build
  run build-tests cmake --build $B --target test_pb_slabs test_pb_scale -j "$(nproc)"
fi
if want test; then
  multi=0; [ "$gpus" -ge 2 ] && multi=1
  ESPGRID_REQUIRE_GPU=1 ESPGRID_REQUIRE_MULTI_GPU=$multi run test-slabs $B/tests/test_pb_slabs
  ESPGRID_REQUIRE_GPU=1 run test-pipeline $B/tests/test_pb_scale --gtest_filter='PbPipelineGpu*:PbFaceSums*'
fi
[ -s "$WORK/achbp18.pqr" ] || "$PY" scripts/make_lattice_structure.py data/achbp.pqr --atoms 300000 -o "$WORK/achbp18.pqr" >/dev/null
[ -s "$WORK/capsid.pqr" ] || run capsid-make "$PY" benchmarks/make_capsid.py data/achbp.pqr --per-unit 2 -o "$WORK/capsid.pqr"
map() {  # map NAME STRUCTURE SPACING DEVICE-OPTIONS...
  local name=$1 structure=$2 spacing=$3; shift 3
  run "$name" $B/espgrid map "$structure" -o "$WORK/p.mrc" --model pb --spacing "$spacing" --padding 10 \
    --json "$OUT/$name.json" "$@"
}
if want process; then
  for r in $(seq 1 "${RUNS:-3}"); do
    for s in 290k capsid; do
      f="$WORK/achbp18.pqr"; [ $s = capsid ] && f="$WORK/capsid.pqr"
      map "$s-one-$r" "$f" 1 --device 0
      map "$s-two-slabs-one-gpu-$r" "$f" 1 --devices 0,0
      [ "$gpus" -ge 2 ] && map "$s-two-gpus-$r" "$f" 1 --devices 0,1
    done
  done
fi
if want big && [ "$gpus" -ge 2 ]; then
  map capsid-half-one "$WORK/capsid.pqr" 0.5 --device 0   # expected: refused, it does not fit one GPU
  map capsid-half-two "$WORK/capsid.pqr" 0.5 --devices 0,1
fi
rm -f "$WORK/p.mrc"
exit $status
