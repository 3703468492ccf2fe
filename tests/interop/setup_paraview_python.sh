#!/usr/bin/env bash
# Make ParaView's Python usable next to python3-vtk9 on Debian 12, for tests/interop/test_paraview.py.
#
# Debian 12 ships pvpython and ParaView's Python modules in python3-paraview, which conflicts with
# python3-vtk9 (both install /usr/lib/python3/dist-packages/vtkmodules): `apt-get install
# python3-paraview` REMOVES python3-vtk9 and libvtk9-dev, which espgrid's build and
# viz/render_potential.py need. Instead, this script unpacks the python3-paraview .deb (same version
# as the installed paraview package) into a private directory without installing it; the test then
# runs `pvbatch` (package paraview) with PYTHONPATH pointing there.
#
#   bash tests/interop/setup_paraview_python.sh [DEST]     # DEST defaults to /opt/paraview-python
set -euo pipefail
dest=${1:-/opt/paraview-python}

if ! command -v pvbatch >/dev/null; then
  echo "pvbatch not found: install ParaView first (apt-get install paraview)" >&2
  exit 1
fi
want=$(dpkg-query -W -f '${Version}' paraview)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

deb=""
for f in /var/cache/apt/archives/python3-paraview_*.deb; do
  [ -e "$f" ] || continue
  if [ "$(dpkg-deb -f "$f" Version)" = "$want" ]; then deb=$f; fi
done
if [ -z "$deb" ]; then
  (cd "$tmp" && apt-get download "python3-paraview=$want")
  deb=$(ls "$tmp"/python3-paraview_*.deb)
fi

if [ -e "$dest" ] && [ ! -e "$dest/.espgrid-unpacked" ]; then
  echo "$dest exists and was not made by this script; choose another DEST" >&2
  exit 1
fi
rm -rf "$dest"
mkdir -p "$dest"
dpkg-deb -x "$deb" "$dest"
echo "$deb" > "$dest/.espgrid-unpacked"

pp="$dest/usr/lib/python3/dist-packages"
PYTHONPATH="$pp" pvbatch <(echo 'from paraview import servermanager as s; print(s.vtkSMProxyManager.GetParaViewSourceVersion())')
echo "unpacked $(basename "$deb") into $dest"
if [ "$dest" != /opt/paraview-python ]; then
  echo "run the test with ESPGRID_PARAVIEW_PYTHONPATH=$pp"
fi
