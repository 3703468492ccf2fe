#!/usr/bin/env bash
# Prints the md5 of maps of every bundled structure (pair models, MSM, PB; .dx, .mrc, .vti),
# one line each, so a refactoring can show that it changed no map: run it before and after and
# diff the two outputs. Usage: scripts/map-fingerprints.sh [ESPGRID_BINARY] > fingerprints.txt
set -euo pipefail
cd "$(dirname "$0")/.."
espgrid=${1:-./build/espgrid}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run() {  # NAME ARGS...: map, then the md5 of every file it wrote, the headers' dates removed
  local name=$1; shift
  "$espgrid" map "$@" -o "$work/$name.dx" -o "$work/$name.mrc" -o "$work/$name.vti" >/dev/null
  for f in "$work/$name".{dx,mrc,vti}; do
    # .dx and .vti carry no clock; .mrc's labels hold the date: hash its data block only
    case $f in
      *.mrc) printf '%s  %s\n' "$(tail -c +1025 "$f" | md5sum | cut -d' ' -f1)" "$(basename "$f")" ;;
      *) printf '%s  %s\n' "$(grep -av -e '^# .*[0-9]\{4\}-[0-9][0-9]-[0-9][0-9]' "$f" | md5sum | cut -d' ' -f1)" "$(basename "$f")" ;;
    esac
  done
}
for s in fasciculin2 boxb_rna_pdb2pqr3 npep_boxb_complex; do
  for m in coulomb debye distance; do run "$s-$m" data/$s.pqr --model $m --spacing 1 --backend cpu; done
  run "$s-msm" data/$s.pqr --kernel cpu-msm --spacing 0.8
  run "$s-pb" data/$s.pqr --model pb --spacing 1 --backend cpu
done
run acetazolamide data/acetazolamide.xyz --spacing 0.5 --backend cpu
run actin-debye data/actin_dimer.pqr --model debye --spacing 1.5 --backend cpu
run achbp-msm data/achbp.pqr --kernel cpu-msm --spacing 1.5
