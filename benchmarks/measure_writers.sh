#!/usr/bin/env bash
# The writers' figures of issue 13 on this machine (no GPU needed), for a 27 M-point map of the
# 18-atom acetazolamide (data/acetazolamide.xyz at 0.155 Å with 20 Å padding: 285 x 312 x 306):
#   1. .dx: the old binary (before the parallel writer; OLD=path) against this build, runs
#      interleaved, each as a whole `espgrid map` process; write = process wall - kernel time.
#      The two files must be byte-identical.
#   2. .mrc and uncompressed .vti written from the finished map (--no-stream), and streamed while
#      the map is computed (the default), against `cp` of an .mrc of the same size.
#   3. .vti compressors: write time and size (LZMA only with LZMA=1: about a minute).
# Results: $OUT_DIR/summary.txt (default benchmarks/results/writers-HOST-DATE).
#   OLD=/tmp/baseline/espgrid-old BUILD_DIR=build RUNS=5 bash benchmarks/measure_writers.sh
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
BUILD_DIR=${BUILD_DIR:-build}
OLD=${OLD:-}
RUNS=${RUNS:-5}
SCRATCH=${SCRATCH:-$(mktemp -d /tmp/espgrid-writers.XXXXXX)}
OUT_DIR=${OUT_DIR:-benchmarks/results/writers-$(hostname -s)-$(date -u +%Y-%m-%d)}
mkdir -p "$OUT_DIR" "$SCRATCH"
espgrid="$BUILD_DIR/espgrid"
map_args=(data/acetazolamide.xyz --spacing 0.155 --padding 20)
summary="$OUT_DIR/summary.txt"
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
seconds_of() {  # "1.234 s" / "567.89 ms" / "12.3 µs" after WORD on espgrid's time line
  awk -v word="$1" '/^time / { for (i = 1; i <= NF; ++i) if ($i == word) { v = $(i + 1); u = $(i + 2);
    print (index(u, "ms") == 1 ? v / 1000 : (index(u, "s") == 1 ? v : v / 1e6)) } }'
}
{
  echo "# espgrid writers, $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git rev-parse --short HEAD), $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
  echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# map: ${map_args[*]} (27,209,520 points)"
} | tee "$summary"

# 1. DX, old against new.
if [ -n "$OLD" ]; then
  : > "$SCRATCH/dx-old.txt"; : > "$SCRATCH/dx-new.txt"; : > "$SCRATCH/dx-new-write.txt"
  for run in $(seq "$RUNS"); do
    for which in old new; do
      bin=$espgrid; [ "$which" = old ] && bin=$OLD
      t0=$(date +%s.%N)
      "$bin" map "${map_args[@]}" -o "$SCRATCH/$which.dx" > "$SCRATCH/$which.log" 2>&1 || { echo "$which failed"; cat "$SCRATCH/$which.log"; exit 1; }
      t1=$(date +%s.%N)
      if [ "$which" = old ]; then  # old: "time       1.611 s kernel, 1.611 s with transfers"
        kernel=$(awk '/^time / { v = $2; u = $3; print (u == "ms" ? v / 1000 : v) }' "$SCRATCH/old.log")
      else
        kernel=$(seconds_of kernel < "$SCRATCH/new.log")
        seconds_of write < "$SCRATCH/new.log" >> "$SCRATCH/dx-new-write.txt"
      fi
      echo "$t1 - $t0 - $kernel" | bc -l >> "$SCRATCH/dx-$which.txt"
    done
    cmp -s "$SCRATCH/old.dx" "$SCRATCH/new.dx" || { echo "run $run: the old and new .dx differ" | tee -a "$summary"; exit 1; }
  done
  old_write=$(median < "$SCRATCH/dx-old.txt"); new_write=$(median < "$SCRATCH/dx-new.txt")
  {
    echo "dx: process wall - kernel, median of $RUNS interleaved runs: old $old_write s, new $new_write s" \
         "(its own write timer: $(median < "$SCRATCH/dx-new-write.txt") s); $(echo "$old_write / $new_write" | bc -l | cut -c1-5)x faster;" \
         "files byte-identical ($(stat -c %s "$SCRATCH/new.dx") bytes)"
    echo "   old: $(tr '\n' ' ' < "$SCRATCH/dx-old.txt")"
    echo "   new: $(tr '\n' ' ' < "$SCRATCH/dx-new.txt")"
  } | tee -a "$summary"
  rm -f "$SCRATCH/old.dx" "$SCRATCH/new.dx"
fi

# 2. MRC and uncompressed VTI against cp.
for mode in no-stream stream; do
  extra=(); [ "$mode" = no-stream ] && extra=(--no-stream)
  "$espgrid" bench "${map_args[@]}" --kernel cpu-parallel --sweep end-to-end --sweep-only --formats mrc,vti \
    --repeats "$RUNS" --warmup 1 --seed 1 --scratch "$SCRATCH" "${extra[@]}" --out "$SCRATCH/$mode" \
    > "$SCRATCH/bench-$mode.log" 2>&1 || { echo "bench failed"; cat "$SCRATCH/bench-$mode.log"; exit 1; }
  cp "$SCRATCH/$mode/bench-end-to-end.csv" "$OUT_DIR/bench-end-to-end-$mode.csv"
done
"$espgrid" map "${map_args[@]}" -o "$SCRATCH/source.mrc" > /dev/null
: > "$SCRATCH/cp.txt"
for run in $(seq "$RUNS"); do
  t0=$(date +%s.%N); cp "$SCRATCH/source.mrc" "$SCRATCH/copy.mrc"; t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l >> "$SCRATCH/cp.txt"; rm -f "$SCRATCH/copy.mrc"
done
cp_s=$(median < "$SCRATCH/cp.txt")
python3 - "$cp_s" "$(stat -c %s "$SCRATCH/source.mrc")" "$OUT_DIR/bench-end-to-end-no-stream.csv" \
  "$OUT_DIR/bench-end-to-end-stream.csv" <<'PY' | tee -a "$summary"
import csv, sys
cp, size = float(sys.argv[1]), int(sys.argv[2])
for path, mode in ((sys.argv[3], "written after the computation"), (sys.argv[4], "streamed (the default)")):
    for row in csv.DictReader(open(path)):
        after, during = float(row["write_ms"]) / 1e3, float(row["streamed_ms"]) / 1e3
        print(f"{row['format']}, {mode}: {after:.3f} s writing after the kernel, {during:.3f} s during it; "
              f"cp of {size} bytes {cp:.3f} s: after the kernel {after / cp:.2f}x cp, in all {(after + during) / cp:.2f}x cp; "
              f"wall/kernel {float(row['wall_over_kernel']):.2f}")
PY
echo "   cp: $(tr '\n' ' ' < "$SCRATCH/cp.txt")" | tee -a "$summary"
rm -f "$SCRATCH/source.mrc"

# 3. VTI compressors.
compressors="none lz4 zlib"; [ "${LZMA:-0}" = 1 ] && compressors="$compressors lzma"
for c in $compressors; do
  if "$espgrid" map "${map_args[@]}" -o "$SCRATCH/c.vti" --compression "$c" --no-stream > "$SCRATCH/c.log" 2>&1; then
    echo "vti --compression $c: write $(seconds_of write < "$SCRATCH/c.log") s, $(stat -c %s "$SCRATCH/c.vti") bytes" | tee -a "$summary"
  else
    echo "vti --compression $c: $(tail -1 "$SCRATCH/c.log")" | tee -a "$summary"
  fi
  rm -f "$SCRATCH/c.vti"
done
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$summary"
rm -rf "$SCRATCH"
