#!/usr/bin/env bash
# Session 14, call 6: the mend (8a817b9): build, the PB GPU tests, the 290k map's md5.
set -u
R=$OUT/s14f; W=/tmp/w; mkdir -p $R $W; date -u > $R/date.txt
python3 scripts/make_lattice_structure.py data/achbp.pqr --atoms 300000 -o $W/achbp18.pqr > /dev/null &
t=$SECONDS
BUILD_DIR=build-gpu bash scripts/device-check.sh build > $R/build.log 2>&1 || { echo build failed; tail -30 $R/build.log; exit 1; }
echo "build $((SECONDS-t)) s"
ESPGRID_REQUIRE_GPU=1 ctest --test-dir build-gpu --output-on-failure -j 8 -R "Pb.*Gpu|PbCli|Streaming|Apbs" --timeout 300 > $R/ctest.log 2>&1
echo "ctest rc $?"; grep -E "tests passed|tests failed" $R/ctest.log
wait
./build-gpu/espgrid map $W/achbp18.pqr --spacing 1 --padding 10 --model pb -o $W/p.mrc > $R/290k.log 2>&1; echo "290k rc $? md5 $(md5sum < $W/p.mrc | cut -c1-12)"
cd $OUT && tar czf s14f.tgz s14f && rm -rf s14f
