#!/usr/bin/env bash
# The main job from nothing: install packages, build, and map the bundled sample molecule
# (fasciculin-2, 906 atoms) to out/fasciculin2.vti (ParaView) and out/fasciculin2.dx (VMD,
# PyMOL, ChimeraX, APBS).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
mkdir -p out
./build/espgrid map data/fasciculin2.pqr -o out/fasciculin2.vti -o out/fasciculin2.dx
echo "done: open out/fasciculin2.vti in ParaView or out/fasciculin2.dx in VMD/PyMOL (see README.md)"
