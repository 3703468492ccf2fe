#!/usr/bin/env bash
# The main job from nothing: install packages, build, install espgrid (cmake --install: the
# program, espgrid-trajectory and espgrid-render in /usr/local/bin, the Python module where
# /usr/bin/python3 finds it), and map the bundled sample molecule (fasciculin-2, 906 atoms) to
# out/fasciculin2.vti (ParaView) and out/fasciculin2.dx (VMD, PyMOL, ChimeraX, APBS), then draw
# it: out/fasciculin2-{slices,iso,surface}.png, and out/fasciculin2.html to open in a browser.
# ESPGRID_PREFIX=DIR installs elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
prefix=${ESPGRID_PREFIX:-/usr/local}
cmake --install "${BUILD_DIR:-build}" --prefix "$prefix"
export PATH="$prefix/bin:$PATH"
hash -r
mkdir -p out
# Debye-Hückel screening at 0.15 M: the model measured closest to Poisson-Boltzmann (README,
# Pair models); its values are on the scale of APBS maps.
espgrid map data/fasciculin2.pqr --model debye --dielectric 78.54 --ionic-strength 0.15 \
  -o out/fasciculin2.vti -o out/fasciculin2.dx
# The Poisson-Boltzmann map beside it (docs/pb.md): APBS's customary settings, solved by hypre
# on the CPU (or espgrid's multigrid on a GPU).
espgrid map data/fasciculin2.pqr --model pb -o out/fasciculin2-pb.vti -o out/fasciculin2-pb.dx
# Pictures next to the map: out/fasciculin2-{slices,iso,surface}.png (docs/viz.md). VTK renders
# off screen; with no X display the renderer runs itself under xvfb-run. Colours on APBS's
# customary ±5 kT/e, isosurfaces at ±1 kT/e.
espgrid-render out/fasciculin2.vti --structure data/fasciculin2.pqr --out out/fasciculin2 --limit 5 --levels -1,1
espgrid-render out/fasciculin2-pb.vti --structure data/fasciculin2.pqr --out out/fasciculin2-pb --kinds surface --limit 5
# The same surface to turn around in any browser: one self-contained page (docs/viz.md,
# "Interactive view"). It needs the 3Dmol.js the build bundles with npm; where npm could not
# reach its registry, espgrid view says so and the rest of the quickstart stands.
if ! espgrid view data/fasciculin2.pqr out/fasciculin2.dx -o out/fasciculin2.html; then
  echo "quickstart: no out/fasciculin2.html (see the error above); the maps and pictures are made" >&2
fi
echo "installed: $(command -v espgrid), espgrid-trajectory, espgrid-render; Python: import espgrid"
echo "done: open out/fasciculin2.vti in ParaView or out/fasciculin2.dx in VMD/PyMOL (see README.md);"
echo "      pictures: out/fasciculin2-slices.png, out/fasciculin2-iso.png, out/fasciculin2-surface.png,"
echo "      and the Poisson-Boltzmann map's surface: out/fasciculin2-pb-surface.png"
echo "      in a browser: out/fasciculin2.html"
