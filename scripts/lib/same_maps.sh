#!/usr/bin/env bash
# same_maps.sh OLD_ESPGRID NEW_ESPGRID DIR: every CUDA row of NEW (and each model it computes)
# maps data/achbp.pqr at 1 Å with both binaries; the maps' values (the .dx data lines, headers
# aside) must be identical bit for bit. cuda-scatter adds with atomics in a varying order: its
# maps are compared with the oracle by the GPU suite instead. Exit 1 on any difference.
set -uo pipefail
old=$1 new=$2 dir=$3
mkdir -p "$dir"
status=0
models=(coulomb "distance --dielectric 4" "debye --dielectric 78.54 --ionic-strength 0.15")
for kernel in $("$new" kernels | awk '$2 == "cuda" {print $1}'); do
  [ "$kernel" = cuda-scatter ] && continue
  for m in "${models[@]}"; do
    name=$kernel-${m%% *}
    if ! "$new" map data/achbp.pqr --spacing 1.0 --kernel "$kernel" --model $m -o "$dir/$name-new.dx" > "$dir/$name-new.log" 2>&1; then
      grep -q "does not compute" "$dir/$name-new.log" && continue  # a model the row does not compute
      echo "$name: the new build failed"; cat "$dir/$name-new.log"; status=1; continue
    fi
    "$old" map data/achbp.pqr --spacing 1.0 --kernel "$kernel" --model $m -o "$dir/$name-old.dx" > "$dir/$name-old.log" 2>&1 ||
      { echo "$name: the old build failed"; status=1; continue; }
    if cmp -s <(grep -v '^#' "$dir/$name-old.dx") <(grep -v '^#' "$dir/$name-new.dx"); then
      echo "$name: identical ($(grep -E '^kernel ' "$dir/$name-new.log" | head -1))"
    else
      echo "$name: VALUES DIFFER"; status=1
    fi
    rm -f "$dir/$name-old.dx" "$dir/$name-new.dx"
  done
done
exit $status
