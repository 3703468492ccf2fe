#!/usr/bin/env bash
# issue 33: --model pb under mpirun with a GPU a rank (a z-slab each, halos through MPI). Build, the MPI and
# PB-slab tests with the GPU required, then maps: ranks against one process's slabs (md5) and one GPU.
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
PY=$(command -v python3)
R=$OUT/r34; W=/tmp/w; mkdir -p $R $W
( "$PY" scripts/make_lattice_structure.py data/achbp.pqr --atoms 300000 -o $W/achbp18.pqr > /dev/null ) &
mk=$!
t=$SECONDS; OUT= LOG_DIR=$R/build timeout 300 bash scripts/device-check.sh build > $R/build.out 2>&1; echo "build rc $? in $((SECONDS-t)) s"
grep -iE "error|mpi" $R/build/*.log | grep -v "^.*warning" | head -5
t=$SECONDS
ESPGRID_REQUIRE_GPU=1 timeout 200 ctest --test-dir build-gpu -R "mpi|Slab|Pipeline" -j4 --output-on-failure > $R/ctest.log 2>&1
echo "ctest rc $? in $((SECONDS-t)) s"; grep -E "tests passed|tests failed|ok: pb|FAIL" $R/ctest.log | head -20
wait $mk
E=./build-gpu/espgrid
for np in 2 4; do
  devs=$(printf '0,%.0s' $(seq $np)); devs=${devs%,}
  a="$W/achbp18.pqr --model pb --spacing 1 --padding 10"
  timeout 60 mpirun -np $np $E map $a --backend cuda -o $W/ranks$np.mrc > $R/ranks$np.log 2>&1; echo "ranks $np rc $?"
  timeout 60 $E map $a --devices $devs -o $W/slabs$np.mrc > $R/slabs$np.log 2>&1; echo "slabs $np rc $?"
  md5sum $W/ranks$np.mrc $W/slabs$np.mrc | sed "s|$W/||"
  grep -E "^kernel|^phases|^ranks|^total|device solve" $R/ranks$np.log | cut -c1-400
done
timeout 60 $E map $W/achbp18.pqr --model pb --spacing 1 --padding 10 -o $W/one.mrc > $R/one.log 2>&1; echo "one rc $?"
grep -E "^kernel|^phases" $R/one.log | cut -c1-300
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/machine.txt; date -u >> $R/machine.txt
cd $OUT && tar czf r34.tgz r34 && rm -rf r34
