#!/usr/bin/env bash
# Installs the Debian 12 packages espgrid builds, tests and draws with. Run as root (or with
# sudo available). Safe to run again: apt-get skips what is already installed.
set -euo pipefail
packages=(
  build-essential cmake pkg-config          # compiler and build
  clang-format                              # the layout check (ctest formatting: tests/check_format.py)
  libvtk9-dev libcxxopts-dev                # .vti writer, command line
  libhwy-dev                                # Google Highway: cpu-simd, the CPU default (README, Kernels)
  zlib1g-dev liblz4-dev liblzma-dev         # .dx.gz; reading .vti compressed by VTK or ParaView (zlib, LZ4, LZMA)
  googletest libgtest-dev libbenchmark-dev  # tests and benchmarks
  python3-vtk9 python3-matplotlib python3-numpy  # viz/ renderer and benchmark plots
  xvfb                                      # headless rendering where no GPU/EGL exists
  libopenmpi-dev openmpi-bin                # MPI: mpirun -np N espgrid map (README, Scale-out)
  pybind11-dev python3-dev python3-pytest   # the Python module and its tests (docs/python.md)
  python3-mdanalysis python3-tqdm           # trajectory averages: espgrid-trajectory
  pdb2pqr gemmi                             # PDB/mmCIF input: charges from pdb2pqr30 (gemmi: mmCIF -> PDB)
  openbabel python3-openbabel               # the ligands pdb2pqr leaves out: Open Babel's hydrogens and charges
  libhypre-dev python3-scipy                # --model pb on the CPU: hypre PCG + PFMG; the PB benchmarks' scipy
  locales                                   # the locale tests make de_DE.UTF-8 from its source (localedef)
  util-linux                                # unshare: the full-disk and read-only-mount tests' private mounts
)
# `espgrid view` pages: the build bundles 3Dmol.js with npm (web/package-lock.json). Debian's
# nodejs and npm unless a Node.js with npm is already installed (NodeSource's nodejs ships its
# own npm and conflicts with Debian's npm package).
if ! command -v npm >/dev/null 2>&1; then
  packages+=(nodejs npm)
fi
interop=0
for option in "$@"; do
  case $option in
    --interop)  # the clients the interop tests open our files with: ParaView, PyMOL (and its tutorial
                # files, pymol-data: the espgrid PyMOL command's tests), APBS (multivalue),
                # gemmi and GridDataFormats (where each places an .mrc), mrcfile (MRC2014 validation),
                # and Chromium and Firefox for the `espgrid view` page (ctest label browser)
      interop=1
      packages+=(paraview pymol pymol-data apbs python3-gemmi python3-griddataformats python3-mrcfile chromium firefox-esr) ;;
    --hardening)  # scripts/hardening.sh: clang with libFuzzer, its sanitizer runtimes, OpenMP for clang
      packages+=(clang libclang-rt-14-dev libomp-14-dev) ;;
    *) echo "install-deps: unknown option $option (--interop, --hardening)" >&2; exit 2 ;;
  esac
done
SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: run as root or install sudo" >&2; exit 1; }
  SUDO=sudo
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
if [ $interop = 1 ] && [ ! -e /opt/paraview-python/.espgrid-unpacked ]; then
  # ParaView's Python modules conflict with python3-vtk9 as packages; unpack them privately.
  $SUDO bash "$(dirname "$0")/../tests/interop/setup_paraview_python.sh"
fi
