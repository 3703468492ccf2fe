# Sourced by the device benchmark scripts (face-sums-check.sh, pb-slabs-check.sh), after they set
# $OUT: run NAME COMMAND... runs the command with its output in $OUT/NAME.log, appends
# "NAME: rc N, T ms" to $OUT/summary.txt (and prints it), and sets status=1 on failure;
# note_device writes the GPUs and the date to $OUT/device.txt.
status=0
run() {
  local name=$1; shift
  local start
  start=$(date +%s%N)
  "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  echo "$name: rc $rc, $((($(date +%s%N) - start) / 1000000)) ms" | tee -a "$OUT/summary.txt"
  [ $rc = 0 ] || status=1
}
note_device() {
  nvidia-smi --query-gpu=name,memory.total --format=csv,noheader > "$OUT/device.txt" 2>&1
  nvidia-smi topo -m >> "$OUT/device.txt" 2>&1
  date -u >> "$OUT/device.txt"
}
