#!/usr/bin/env bash
# Hardening checks (docs/reliability.md), run by scripts/test.sh after the main tests.
# One clang build in $HARDENING_BUILD_DIR (default build-hardening) with AddressSanitizer and
# UndefinedBehaviorSanitizer on every target (ESPGRID_SANITIZE=ON, ESPGRID_CUDA=OFF) and the
# libFuzzer targets (ESPGRID_FUZZ=ON: coverage instrumentation on the libraries), then:
#   1. `ctest -L cpu` on that build: every CPU test under the sanitizers;
#   2. every saved regression input (fuzz/regressions/TARGET/) replayed through fuzz_pqr,
#      fuzz_xyz, fuzz_cli, fuzz_map, fuzz_dcd, fuzz_apbs, fuzz_gzip, fuzz_points; then each target
#      fuzzed for $ESPGRID_FUZZ_SECONDS seconds (default 20: eight targets share CI's 30 minutes; fuzz_map, fuzz_dcd, fuzz_apbs, fuzz_gzip and
#      fuzz_points, whose inputs are small and fast, half of it), two targets at a time
#      from the seed corpus (fuzz/seeds/, data/*.pqr|xyz, tests/data/*.pqr|xyz). A crash,
#      sanitizer report, hang (-timeout) or out-of-memory is saved to $ESPGRID_FUZZ_CRASH_DIR
#      and fails the script.
# One build rather than a gcc sanitizer build and a separate clang fuzz build: the libraries
# are compiled once (measured 2026-11-23 on this 2-core machine: 233 s against 425 s + 235 s);
# line tables only (-gline-tables-only) are enough for the sanitizers' stack traces. The added-model
# test and the accuracy suites are left out here (ESPGRID_TEST_ADDED_MODEL, ESPGRID_ACCURACY_SUITES:
# a second core library, and large solves held to references, were a third of this build's time and
# of its tests'); the main build runs them. Nor is the Python module built here (ESPGRID_PYTHON=OFF):
# its tests are not `-L cpu` ones and run in the main build, so its compile was CI time for nothing.
# And it is a unity build (CMAKE_UNITY_BUILD, 16 sources a unit): the sources share their headers'
# parsing, most of each compile. A name defined in two sources' anonymous namespaces then collides
# ("redefinition of ..."): share it from a header, as src/physics/apbs_constants.h does (the main
# build compiles each source alone, so only this build shows it; `cmake -DCMAKE_UNITY_BUILD=ON`
# shows it anywhere).
# Environment: ESPGRID_FUZZ_SECONDS (0 skips fuzzing, the replay still runs),
# ESPGRID_HARDENING_SKIP_ASAN=1 (skips step 1), HARDENING_BUILD_DIR (build-hardening),
# ESPGRID_FUZZ_CRASH_DIR ($HARDENING_BUILD_DIR/crashes). Needs clang 14, compiler-rt and
# libomp: installed here when missing (Debian 12, as root or with sudo).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
FUZZ_SECONDS=${ESPGRID_FUZZ_SECONDS:-20}
FUZZ_DIR=${HARDENING_BUILD_DIR:-build-hardening}
CRASH_DIR=${ESPGRID_FUZZ_CRASH_DIR:-$FUZZ_DIR/crashes}
JOBS=$(nproc)
status=0
start_all=$SECONDS

say() { echo "hardening: $*"; }
fail() { say "FAILED: $*"; status=1; }

# ---- packages: clang with libFuzzer and the sanitizer runtimes, OpenMP for clang ---------------
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
missing=()
for p in clang libclang-rt-14-dev libomp-14-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]}"
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -q &&
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends \
      "${missing[@]}" || { fail "could not install ${missing[*]}"; exit 1; }
fi

# ---- the build ---------------------------------------------------------------------------------------
t0=$SECONDS
say "clang build with ASan+UBSan and the libFuzzer targets in $FUZZ_DIR (ESPGRID_CUDA=OFF)"
mkdir -p "$FUZZ_DIR"
if ! { cmake -S . -B "$FUZZ_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
         -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG" -DESPGRID_CUDA=OFF \
         -DESPGRID_SANITIZE=ON -DESPGRID_FUZZ=ON -DESPGRID_TEST_ADDED_MODEL=OFF -DESPGRID_ACCURACY_SUITES=OFF -DESPGRID_PYTHON=OFF \
         -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 >"$FUZZ_DIR/hardening-configure.log" 2>&1 &&
       cmake --build "$FUZZ_DIR" -j "$JOBS" >"$FUZZ_DIR/hardening-build.log" 2>&1; }; then
  tail -n 40 "$FUZZ_DIR/hardening-configure.log" "$FUZZ_DIR/hardening-build.log" 2>/dev/null
  fail "sanitizer and fuzzer build"
  exit 1
fi
say "built in $((SECONDS - t0)) s"

# ---- 1. the CPU tests under the sanitizers ------------------------------------------------------------
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
if [ "${ESPGRID_HARDENING_SKIP_ASAN:-0}" != 1 ]; then
  t1=$SECONDS
  # One entry more than cores: with one a core, the entries' 405 s took 279 s on 2 cores (cores
  # idle a quarter of the time: entries wait on child programs). Left out here as the accuracy suites
  # are (tests/CMakeLists.txt): four tests whose point is a large sum or solve (three molecules ×
  # three models of MSM against the exact sum; MSM's bound on real molecules; 2^17 atoms at 4,100
  # points; the actin dimer's APBS levels), 91, 27, 27 and 26 s under the sanitizers; the same code
  # runs here in their suites' other tests (fas_levels, the MSM bound's other cases).
  ctest --test-dir "$FUZZ_DIR" -L cpu \
    -E 'MsmKernels.RealMoleculesAreWithinTheDeclaredBoundForEveryModel|SamplePoints.CpuReportsProgressInChunks|FixtureEnergies.AgreeWithApbsLevelByLevel/actin_auto|MsmAccuracy.RealMoleculesAreWithinTheDeclaredBound$' \
    --output-on-failure -j "$((JOBS + 1))" >"$FUZZ_DIR/hardening-ctest.log" 2>&1 ||
    { grep -E -A40 "\*\*\*|Failed|SUMMARY|runtime error" "$FUZZ_DIR/hardening-ctest.log" | head -n 200
      fail "ctest -L cpu under ASan+UBSan (log: $FUZZ_DIR/hardening-ctest.log)"; }
  say "ctest -L cpu under ASan+UBSan: $(grep -E 'tests passed' "$FUZZ_DIR/hardening-ctest.log" | tail -1) in $((SECONDS - t1)) s"
fi

# ---- 2. fuzzing -------------------------------------------------------------------------------------
FUZZ_ABS=$(cd "$FUZZ_DIR" && pwd)
mkdir -p "$CRASH_DIR"
CRASH_DIR=$(cd "$CRASH_DIR" && pwd)  # absolute: fuzz_cli changes directory before reading flags

# seeds: a fresh folder per target (libFuzzer reads them; the corpus it grows is kept apart)
seed_dir() {  # seed_dir TARGET: prints the folder
  local target=$1 dir="$FUZZ_ABS/seeds-$1"
  rm -rf "$dir"
  mkdir -p "$dir"
  cp "$ROOT"/fuzz/seeds/"$target"/* "$dir"/
  case $target in
    pqr | xyz) cp "$ROOT"/data/*.pqr "$ROOT"/data/*.xyz "$ROOT"/tests/data/*.pqr "$ROOT"/tests/data/*.xyz "$dir"/ ;;
    apbs)  # APBS's own examples where Debian's apbs-data is installed (72 inputs; names made unique)
      if [ -d /usr/share/apbs/examples ]; then
        find /usr/share/apbs/examples -name '*.in' | while read -r f; do
          cp "$f" "$dir/$(echo "${f#/usr/share/apbs/examples/}" | tr / _)"
        done
      fi ;;
    points) cp "$ROOT"/data/*-points.csv "$dir"/ ;;
  esac
  echo "$dir"
}

# max_len: inputs are cut to this size; the real molecules (up to 1 MB) become prefixes.
declare -A MAX_LEN=([pqr]=16384 [xyz]=16384 [cli]=1024 [map]=16384 [dcd]=16384 [apbs]=8192 [gzip]=16384 [points]=16384)
# Seconds of fuzzing per target: the small, fast targets get half (their inputs are a few KiB
# and run at thousands per second; CI's 30 minutes are shared by every step).
declare -A FUZZ_SHARE=([pqr]=1 [xyz]=1 [cli]=1 [map]=2 [dcd]=2 [apbs]=2 [gzip]=2 [points]=2)
# fuzz_cli works in a temporary folder under $TMPDIR: keep those inside the build folder.
export TMPDIR="$FUZZ_ABS/tmp"
rm -rf "$TMPDIR"
mkdir -p "$TMPDIR"
# One target: its regression inputs replayed, then fuzzed. Run as a background job, it records a
# failure in $FUZZ_ABS/failed-TARGET (a job's variables do not reach this shell).
fuzz_target() {
  local target=$1 exe regressions corpus seeds log before after rc runs cov seconds
  fuzz_failed() { say "FAILED: $*"; touch "$FUZZ_ABS/failed-$target"; }
  exe="$FUZZ_ABS/fuzz/fuzz_$target"
  [ -x "$exe" ] || { say "fuzz_$target: not built here (fuzz_gzip needs zlib), skipped"; return 0; }
  # Replay every saved regression input once (they are crashes that were fixed).
  regressions=("$ROOT"/fuzz/regressions/"$target"/*)
  if [ -e "${regressions[0]}" ]; then
    if "$exe" -runs=1 "${regressions[@]}" >"$FUZZ_ABS/replay-$target.log" 2>&1; then
      say "fuzz_$target: ${#regressions[@]} regression inputs replayed, all pass"
    else
      tail -n 30 "$FUZZ_ABS/replay-$target.log"
      fuzz_failed "fuzz_$target: a regression input fails again (log: $FUZZ_DIR/replay-$target.log)"
    fi
  fi
  [ "$FUZZ_SECONDS" -gt 0 ] || return 0
  corpus="$FUZZ_ABS/corpus-$target"
  mkdir -p "$corpus"
  seeds=$(seed_dir "$target")
  log="$FUZZ_ABS/fuzz-$target.log"
  before=$(ls "$CRASH_DIR" | grep -c "^$target-")
  seconds=$((FUZZ_SECONDS / FUZZ_SHARE[$target] > 0 ? FUZZ_SECONDS / FUZZ_SHARE[$target] : 1))
  # One time limit, 20 s an input (a hang): libFuzzer's own "slow unit" report (10 s by default)
  # would make an input 10-20 s slow under ASan and coverage on a loaded CI machine a failure too.
  "$exe" -max_total_time="$seconds" -timeout=20 -report_slow_units=20 -rss_limit_mb=2560 -max_len="${MAX_LEN[$target]}" \
    -dict="$ROOT/fuzz/$target.dict" -artifact_prefix="$CRASH_DIR/$target-" -print_final_stats=1 \
    "$corpus" "$seeds" >"$log" 2>&1
  rc=$?
  runs=$(grep -E '^Done [0-9]+ runs in' "$log" | tail -1)
  cov=$(grep -E '#[0-9]+[[:space:]]+DONE' "$log" | tail -1 | sed -E 's/^#[0-9]+[[:space:]]+DONE[[:space:]]+//')
  after=$(ls "$CRASH_DIR" | grep -c "^$target-")
  if [ $rc -ne 0 ] || [ "$after" -gt "$before" ]; then
    grep -E 'ERROR|finding|SUMMARY|runtime error|uncaught|Test unit written' "$log" | head -n 20
    fuzz_failed "fuzz_$target (exit $rc): inputs saved in $CRASH_DIR; reproduce with $exe FILE; log $FUZZ_DIR/fuzz-$target.log"
  else
    say "fuzz_$target: ${runs:-no summary} ($cov); no findings"
  fi
}

# Two targets at a time on two cores (each fuzzer is one process): the same seconds of fuzzing
# each, in half the time.
rm -f "$FUZZ_ABS"/failed-*
running=0
for target in pqr xyz cli map dcd apbs gzip points; do
  fuzz_target "$target" &
  running=$((running + 1))
  if [ "$running" -ge "$JOBS" ]; then
    wait -n
    running=$((running - 1))
  fi
done
wait
for failed in "$FUZZ_ABS"/failed-*; do
  [ -e "$failed" ] && status=1
done

rm -rf "$FUZZ_ABS/tmp"
say "done in $((SECONDS - start_all)) s: $([ $status = 0 ] && echo all checks passed || echo SOME CHECKS FAILED)"
exit $status
