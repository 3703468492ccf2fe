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

# --model pb: one solve over the ranks (issue 33). Relative RMS of two .dx maps' values, and
# whether it is below a bound (the script's exit status).
cat >"$dir/compare.py" <<'PY'
import math, sys
def values(path):
    out, on = [], False
    for line in open(path):
        if line.startswith("object 3"):
            on = True
            continue
        if on:
            if line.startswith(("attribute", "object")):
                break
            out += [float(t) for t in line.split()]
    return out
a, b = values(sys.argv[1]), values(sys.argv[2])
assert len(a) == len(b) and len(a) > 1000, (len(a), len(b))
rel = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)) / sum(y * y for y in a))
print(f"{sys.argv[3]}: relative RMS {rel:.2e} between the maps over {len(a)} nodes")
sys.exit(0 if rel < float(sys.argv[4]) else 1)
PY
# hypre over the ranks' CPUs (--backend cpu; also auto where a rank has no GPU): the map equals
# one process's to the solver's tolerance: both stop at relative residual 1e-10, which the
# system's conditioning (~1e4 at this spacing and dielectric jump) turns into at most ~1e-6 in
# the solution; the .dx holds float32 (6e-8). hypre's iterates depend on how the planes are
# split, so not bit for bit.
pb_args=(--model pb --spacing 1.1 --pb-tolerance 1e-10)
# One process on hypre too (--pb-solver hypre; its default there is espgrid's CPU multigrid): the
# same solver split over ranks or not.
if "$espgrid" map "$mol" "${pb_args[@]}" --pb-solver hypre -o "$dir/pb-one.dx" >"$dir/pb-one.log" 2>&1; then
  if run_mpi map "$mol" "${pb_args[@]}" --backend cpu -o "$dir/pb-many.dx" >"$dir/pb-many.log" 2>"$dir/pb-many.err"; then
    /usr/bin/python3 "$dir/compare.py" "$dir/pb-one.dx" "$dir/pb-many.dx" "pb, hypre on $np ranks" 1e-6 ||
      fail "pb: the map of $np ranks differs from one process's"
    grep -q "^ranks      $np MPI ranks: one PB solve by hypre" "$dir/pb-many.log" || fail "pb: no 'ranks' line"
    grep -q "$np MPI ranks (hypre" "$dir/pb-many.log" || fail "pb: the summary does not say hypre ran on $np ranks"
    [ "$(grep -c '^kernel ' "$dir/pb-many.log")" = 1 ] || fail "pb: not exactly one summary"
    echo "ok: pb ($np ranks)"
    # Each rank builds the coefficient maps of its planes only, unless energy components need them
    # whole afterwards: hypre gets the same rows either way, so the same map byte for byte.
    if run_mpi map "$mol" "${pb_args[@]}" --backend cpu --pb-energy comps -o "$dir/pb-whole.dx" >"$dir/pb-whole.log" 2>&1; then
      cmp -s "$dir/pb-many.dx" "$dir/pb-whole.dx" ||
        fail "pb: the ranks' shares of the coefficient maps give another map than the whole maps"
      echo "ok: pb, the ranks' shares of the maps give the whole maps' map ($np ranks)"
    else
      fail "pb --pb-energy comps: mpirun -np $np failed"
      cat "$dir/pb-whole.log" >&2
    fi
  else
    fail "pb: mpirun -np $np failed"
    cat "$dir/pb-many.log" "$dir/pb-many.err" >&2
  fi
else
  echo "skipped: pb on hypre (this build solves PB on the CPU only with hypre: $(tail -1 "$dir/pb-one.log"))"
fi

# The ranks' GPUs (--backend cuda): a z-slab a rank, one CG over them. Its cycle is node for node
# the one of one process's slabs on one GPU (--devices 0,0,...) and its sums are added in the same
# order, so the same map byte for byte; against one GPU's map, the solver's tolerance as above.
slab_devices=$(printf '0,%.0s' $(seq "$np")); slab_devices=${slab_devices%,}
if "$espgrid" map "$mol" "${pb_args[@]}" --backend cuda -o "$dir/pb-gpu-one.dx" >"$dir/pb-gpu-one.log" 2>&1; then
  "$espgrid" map "$mol" "${pb_args[@]}" --backend cuda --devices "$slab_devices" -o "$dir/pb-gpu-slabs.dx" \
    >"$dir/pb-gpu-slabs.log" 2>&1 || { fail "pb: --devices $slab_devices failed"; cat "$dir/pb-gpu-slabs.log" >&2; }
  if run_mpi map "$mol" "${pb_args[@]}" --backend cuda -o "$dir/pb-gpu-many.dx" >"$dir/pb-gpu-many.log" 2>"$dir/pb-gpu-many.err"; then
    # The source line names no device: the files compare whole.
    cmp -s "$dir/pb-gpu-slabs.dx" "$dir/pb-gpu-many.dx" ||
      fail "pb: the ranks' GPUs give another map than one process's $np slabs"
    /usr/bin/python3 "$dir/compare.py" "$dir/pb-gpu-one.dx" "$dir/pb-gpu-many.dx" "pb, $np ranks' GPUs against one GPU" 1e-6 ||
      fail "pb: the ranks' GPUs differ from one GPU's map"
    grep -q "^ranks      $np MPI ranks: one PB solve over their GPUs" "$dir/pb-gpu-many.log" || fail "pb gpu: no 'ranks' line"
    grep -q "$np MPI ranks, a slab each" "$dir/pb-gpu-many.log" || fail "pb gpu: the summary does not name the ranks' slabs"
    [ "$(grep -c '^kernel ' "$dir/pb-gpu-many.log")" = 1 ] || fail "pb gpu: not exactly one summary"
    echo "ok: pb on the GPUs of $np ranks"
    # A rank that fails before the solve votes so: no rank waits for it (the timeout would say so),
    # rank 0 names it, the exit is non-zero and nothing is written.
    ESPGRID_TEST_FAIL_RANK=1 timeout 120 "$mpiexec" -np "$np" "${mpi_flags[@]}" "$espgrid" map "$mol" "${pb_args[@]}" \
      --backend cuda -o "$dir/pb-gpu-fail.dx" >"$dir/pb-gpu-fail.log" 2>"$dir/pb-gpu-fail.err"
    code=$?
    [ $code != 0 ] && [ $code != 124 ] || fail "pb gpu, rank 1 failing: exit code $code (124: a rank waited)"
    grep -q "rank 1 of $np failed" "$dir/pb-gpu-fail.err" ||
      { fail "pb gpu, rank 1 failing: the error does not name it"; cat "$dir/pb-gpu-fail.err" >&2; }
    [ ! -e "$dir/pb-gpu-fail.dx" ] || fail "pb gpu, rank 1 failing: output written"
    echo "ok: pb on the GPUs of $np ranks, one failing (exit $code, no output)"
  else
    fail "pb --backend cuda: mpirun -np $np failed"
    cat "$dir/pb-gpu-many.log" "$dir/pb-gpu-many.err" >&2
  fi
elif [ "${ESPGRID_REQUIRE_GPU:-0}" = 1 ]; then
  fail "pb --backend cuda: one process failed and ESPGRID_REQUIRE_GPU=1"
  cat "$dir/pb-gpu-one.log" >&2
else
  # No GPU: --backend cuda under mpirun fails on every rank, says why, and writes nothing.
  run_mpi map "$mol" --model pb --backend cuda -o "$dir/pb-gpu.dx" >"$dir/pb-gpu.log" 2>"$dir/pb-gpu.err"
  code=$?
  [ $code != 0 ] || fail "pb --backend cuda under mpirun without a GPU: exit code 0"
  grep -q -- "--backend cuda" "$dir/pb-gpu.err" || { fail "pb --backend cuda: no message"; cat "$dir/pb-gpu.err" >&2; }
  [ ! -e "$dir/pb-gpu.dx" ] || fail "pb --backend cuda: output written"
  echo "skipped: pb on the ranks' GPUs (no GPU: $(tail -1 "$dir/pb-gpu-one.log"))"
fi

if [ $failures != 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "all MPI command-line checks passed ($np ranks)"
