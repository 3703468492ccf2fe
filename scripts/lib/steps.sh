# Sourced by the device scripts (gpu-check.sh, multi-gpu-check.sh).
# step NAME command...: runs the command, logs it with date, commit and device to
# $STEP_LOG_DIR/NAME.log, prints the exit code and last lines, and sets status=1 on failure.
status=0
step() {
  local name=$1; shift
  echo "== $name: $*"
  { echo "# $name"; echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)";
    echo "# commit: ${ESPGRID_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}";
    echo "# device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)";
    echo "# command: $*"; echo; } > "$STEP_LOG_DIR/$name.log"
  local start=$SECONDS
  "$@" >> "$STEP_LOG_DIR/$name.log" 2>&1
  local rc=$?
  echo "# exit code $rc after $((SECONDS - start)) s" >> "$STEP_LOG_DIR/$name.log"
  echo "   exit $rc ($((SECONDS - start)) s); last lines:"; tail -n 4 "$STEP_LOG_DIR/$name.log" | sed 's/^/   | /'
  [ $rc -eq 0 ] || status=1
  return $rc
}
