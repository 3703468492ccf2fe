#!/usr/bin/env bash
# End-to-end `mpirun -np N espgrid map` on the CPU backend (ctest label mpi):
#   - the .dx (and .vti when built with VTK) equal the one-process files byte for byte (the DX
#     values round-trip float32, so that is bit-identical maps), for cpu-parallel and
#     cpu-reference, also with fewer planes than ranks;
#   - rank 0 prints the summary once, with one line per rank;
#   - ESPGRID_TEST_FAIL_RANK=1 makes the run fail: non-zero exit, a message naming rank 1,
#     and no output file (not even a temporary one).
# usage: test_mpi_cli.sh ESPGRID SOURCE_DIR MPIEXEC NP VTI(0|1) [mpiexec flags...]
set -u
espgrid=$1 source=$2 mpiexec=$3 np=$4 vti=$5
shift 5
mpi_flags=("$@")
if [ "$(id -u)" = 0 ]; then  # OpenMPI refuses root without both
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/espgrid-mpi-cli.XXXXXX")
trap 'rm -rf "$dir"' EXIT
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
run_mpi() { "$mpiexec" -np "$np" "${mpi_flags[@]}" "$espgrid" "$@"; }

check_case() {  # name, then espgrid map arguments (without -o)
  local name=$1
  shift
  local outs_one=(-o "$dir/$name-one.dx") outs_many=(-o "$dir/$name-many.dx")
  if [ "$vti" = 1 ]; then
    outs_one+=(-o "$dir/$name-one.vti")
    outs_many+=(-o "$dir/$name-many.vti")
  fi
  if ! "$espgrid" map "$@" "${outs_one[@]}" >"$dir/$name-one.log" 2>&1; then
    fail "$name: one process failed"; cat "$dir/$name-one.log" >&2; return
  fi
  if ! run_mpi map "$@" "${outs_many[@]}" >"$dir/$name-many.log" 2>"$dir/$name-many.err"; then
    fail "$name: mpirun -np $np failed"; cat "$dir/$name-many.log" "$dir/$name-many.err" >&2; return
  fi
  cmp -s "$dir/$name-one.dx" "$dir/$name-many.dx" || fail "$name: the .dx of $np ranks differs from one process"
  if [ "$vti" = 1 ]; then
    cmp -s "$dir/$name-one.vti" "$dir/$name-many.vti" || fail "$name: the .vti of $np ranks differs from one process"
  fi
  local summaries ranks
  summaries=$(grep -c '^kernel ' "$dir/$name-many.log")
  ranks=$(grep -c '^rank ' "$dir/$name-many.log")
  [ "$summaries" = 1 ] || fail "$name: $summaries summaries printed (want 1)"
  [ "$ranks" = "$np" ] || fail "$name: $ranks rank lines (want $np)"
  grep -q "^ranks      $np MPI ranks" "$dir/$name-many.log" || fail "$name: no 'ranks' line"
  echo "ok: $name ($np ranks)"
}

mol="$source/data/fasciculin2.pqr"
check_case parallel "$mol" --spacing 1.3 --backend cpu --kernel cpu-parallel --threads 1
check_case reference "$mol" --spacing 2.1 --kernel cpu-reference --units kcal/mol/e
# Two planes: with 3 ranks one rank has none.
check_case thin "$mol" --origin -20,-15,0 --dims 21,17,2 --spacing 1.5 --backend cpu

# A failing rank fails the run, says which, and writes nothing.
ESPGRID_TEST_FAIL_RANK=1 run_mpi map "$mol" --spacing 2 --backend cpu -o "$dir/fail.dx" \
  >"$dir/fail.log" 2>"$dir/fail.err"
code=$?
[ $code != 0 ] || fail "a failing rank: exit code 0"
grep -q "espgrid: error: rank 1 of $np failed while computing its planes: injected failure" "$dir/fail.err" ||
  { fail "a failing rank: no message naming rank 1"; cat "$dir/fail.err" >&2; }
[ "$(grep -c 'espgrid: error:' "$dir/fail.err")" = 1 ] || fail "a failing rank: the error is not printed exactly once"
leftovers=$(find "$dir" -name 'fail*' ! -name fail.log ! -name fail.err)
[ -z "$leftovers" ] || fail "a failing rank left output behind: $leftovers"
[ $code != 0 ] && echo "ok: failing rank (exit $code, no output)"

# The same error on every rank (a missing input) is reported once.
run_mpi map "$dir/missing.pqr" -o "$dir/missing.dx" >"$dir/missing.log" 2>"$dir/missing.err"
code=$?
[ $code != 0 ] || fail "missing input: exit code 0"
[ "$(grep -c 'espgrid: error: cannot open' "$dir/missing.err")" = 1 ] ||
  { fail "missing input: the error is not printed exactly once"; cat "$dir/missing.err" >&2; }
[ ! -e "$dir/missing.dx" ] || fail "missing input: output written"

if [ $failures != 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "all MPI command-line checks passed ($np ranks)"
