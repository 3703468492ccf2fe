#!/usr/bin/env bash
# The nonlinear PB equation on a GPU against the linear one (docs/pb.md "The nonlinear equation"):
# the same maps with --pb-equation npbe and lpbe on the CUDA multigrid, alternated, each run's
# process wall and the summary's solve line, into $LOG_DIR. Needs an espgrid built with CUDA.
#
#   LOG_DIR=out bash scripts/pb-npbe-gpu-times.sh build-gpu/espgrid
set -uo pipefail
E=${1:?usage: pb-npbe-gpu-times.sh ESPGRID}
LOG_DIR=${LOG_DIR:-benchmarks/results/npbe-gpu-$(date -u +%Y-%m-%d)}
mkdir -p "$LOG_DIR"
out="$LOG_DIR/npbe-gpu-times.txt"
: > "$out"
for case in "data/boxb_rna_pdb2pqr3.pqr --ionic-strength 0.5 --spacing 0.5" \
            "data/actin_dimer.pqr --ionic-strength 0.15 --spacing 0.5"; do
  for repeat in 1 2 3; do
    for equation in lpbe npbe; do
      # shellcheck disable=SC2086
      start=$(date +%s%N)
      "$E" map $case --model pb --backend cuda --pb-equation "$equation" -o /tmp/npbe-gpu.mrc > /tmp/npbe-gpu.txt 2>&1
      rc=$?
      end=$(date +%s%N)
      wall_ms=$(((end - start) / 1000000))
      echo "$case | $equation | run $repeat | exit $rc | process ${wall_ms} ms | $(grep -E '^method' /tmp/npbe-gpu.txt | cut -c1-400)" >> "$out"
      grep -E "^(grid|phases|energy|time)" /tmp/npbe-gpu.txt | sed 's/^/    /' >> "$out"
    done
  done
done
cat "$out"
