#!/usr/bin/env bash
# PDB2PQR's APBS template on a GPU host with and without the restart with transparent huge pages
# (src/os/huge_pages.h): four actin dimers (47,016 atoms; mg-auto, two levels of 449x449x257),
# `espgrid apbs template.in --backend cuda --json`, one GPU visible, the two settings interleaved.
# Needs a built espgrid ($BUILD_DIR, default build-gpu: scripts/device-check.sh build). Logs and
# JSON go to $OUT (default benchmarks/results/template-pages-DATE).
#
#   OUT=... bash scripts/template-pages-check.sh [REPEATS] ["VARIANT ..."]
#
# Variants (interleaved, default "default off"): default (every switch on), off (no huge-page
# restart), early-off (CUDA's context not made beside the input: ESPGRID_EARLY_CONTEXT=0),
# release-off (the device let go at exit, not beside the files' writing: ESPGRID_EARLY_RELEASE=0),
# both-off (the last two), fresh (as default, the earlier run's .dx removed first: nothing to replace).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
OUT=${OUT:-benchmarks/results/template-pages-$(date -u +%Y-%m-%d)}
BUILD_DIR=${BUILD_DIR:-build-gpu}
repeats=${1:-3}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)  # the runs below start in the template's folder
source "$here/lib/timed_run.sh"
note_device
cat /sys/kernel/mm/transparent_hugepage/enabled > "$OUT/thp.txt" 2>&1
ldd --version 2>&1 | head -1 >> "$OUT/thp.txt"
E=$(cd "$BUILD_DIR" && pwd)/espgrid
work=$(mktemp -d)
python3 scripts/make_lattice_structure.py data/actin_dimer.pqr --copies 2x2x1 --gap 2 -o "$work/actin4.pqr" > /dev/null
python3 - "$work" <<'PY'
import sys
sys.path.insert(0, "benchmarks")
import apbs_frontend_benchmark as b
open(sys.argv[1] + "/template.in", "w").write(b.template(sys.argv[1] + "/actin4.pqr"))
PY
cp "$work/template.in" "$OUT/template.in"
variants=${2:-default off}
for i in $(seq 1 "$repeats"); do
  for pages in $variants; do
    case $pages in  # each variant's switches (the default: everything on)
      off) env_pages=(ESPGRID_HUGE_PAGES=0) ;;
      early-off) env_pages=(ESPGRID_EARLY_CONTEXT=0) ;;
      release-off) env_pages=(ESPGRID_EARLY_RELEASE=0) ;;
      both-off) env_pages=(ESPGRID_EARLY_CONTEXT=0 ESPGRID_EARLY_RELEASE=0) ;;
      fresh) env_pages=(); rm -f "$work"/*.dx ;;  # no earlier output to replace
      *) env_pages=() ;;
    esac
    cd "$work"
    run "tpl-$pages-$i" env CUDA_VISIBLE_DEVICES=0 ESPGRID_TRACE_PROCESS=1 "${env_pages[@]}" \
      "$E" apbs template.in --backend cuda --json "$OUT/tpl-$pages-$i.json"
    cd - > /dev/null
    grep -h "restarted\|Global net" "$OUT/tpl-$pages-$i.log" | sed "s/^/  tpl-$pages-$i: /" | tee -a "$OUT/summary.txt"
  done
done
md5sum "$work"/*.dx > "$OUT/pot-md5.txt" 2>&1
rm -rf "$work"
exit $status
