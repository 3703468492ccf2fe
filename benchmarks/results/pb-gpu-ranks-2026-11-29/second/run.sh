#!/usr/bin/env bash
# issue 33: PB over the ranks' GPUs after the host-planes change: MPI/PB tests (GPU required, mpi_cli verbose),
# 290k and capsid maps on 2 ranks against --devices 0,0 (md5), peaks.
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
PY=$(command -v python3)
R=$OUT/r35; W=/tmp/w; mkdir -p $R $W
( "$PY" scripts/make_lattice_structure.py data/achbp.pqr --atoms 300000 -o $W/achbp18.pqr > /dev/null
  "$PY" benchmarks/make_capsid.py data/achbp.pqr --per-unit 2 -o $W/capsid.pqr > $R/capsid-make.log 2>&1 ) &
mk=$!
t=$SECONDS; OUT= LOG_DIR=$R/build timeout 300 bash scripts/device-check.sh build > $R/build.out 2>&1; echo "build rc $? in $((SECONDS-t)) s"
t=$SECONDS
ESPGRID_REQUIRE_GPU=1 timeout 200 ctest --test-dir build-gpu -R "mpi|Slab|Pipeline|PbMemory" -j4 --output-on-failure > $R/ctest.log 2>&1
echo "ctest rc $? in $((SECONDS-t)) s"; grep -E "tests passed|tests failed" $R/ctest.log
ESPGRID_REQUIRE_GPU=1 timeout 150 ctest --test-dir build-gpu -R "mpi_cli" -V > $R/mpi-cli.log 2>&1; echo "mpi_cli rc $?"
grep -E "ok: pb|skipped|FAIL|relative RMS" $R/mpi-cli.log | sed 's/^[0-9]*: //'
wait $mk
E=./build-gpu/espgrid
for c in achbp18 capsid; do
  a="$W/$c.pqr --model pb --spacing 1 --padding 10"
  /usr/bin/time -v timeout 90 mpirun -np 2 $E map $a --backend cuda -o $W/r-$c.mrc > $R/ranks2-$c.log 2> $R/ranks2-$c.err; echo "$c ranks rc $?"
  /usr/bin/time -v timeout 90 $E map $a --devices 0,0 -o $W/s-$c.mrc > $R/slabs2-$c.log 2> $R/slabs2-$c.err; echo "$c slabs rc $?"
  md5sum $W/r-$c.mrc $W/s-$c.mrc | sed "s|$W/||"
  for f in ranks2-$c slabs2-$c; do
    echo "$f: $(grep -o 'GPU peak [0-9.]* [GM]iB' $R/$f.log) $(grep -o 'device solve [0-9.]* ms' $R/$f.log) $(grep '^time' $R/$f.log | grep -o 'total.*') $(grep -o 'host peak [0-9.]* [GM]iB' $R/$f.log)"
  done
done
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/machine.txt; date -u >> $R/machine.txt
cd $OUT && tar czf r35.tgz r35 && rm -rf r35
