"""How the renderer (viz/render_potential.py) reads structures and maps: through the espgrid
program itself, so a picture always shows what espgrid read — the C++ readers' rules
(src/maps/), never a second copy of them.

* read_structure(path) -> Structure: `espgrid atoms PATH` (x y z charge radius element per atom)
* map_to_vti(path, vti, units) : `espgrid convert PATH -o VTI [--units U]`: any map espgrid
  writes (.dx, .dx.gz, .mrc/.map/.ccp4, .vti), read by espgrid's own readers (src/maps/: the
  structure, every size and value checked, nothing non-finite), written as an uncompressed .vti
  by espgrid for VTK to read. A truncated or damaged map is refused there, never drawn.

The program is found as `--espgrid PATH` (set_espgrid), the ESPGRID environment variable, the
repository's build/espgrid next to this folder, or `espgrid` on the PATH, in that order.

Errors a user can cause (missing file, malformed content) raise InputError carrying espgrid's
own "FILE:LINE: what is wrong" message; callers print it and exit 1.
"""

import os
import shutil
import subprocess

import numpy as np


class InputError(Exception):
    """An expected, user-facing error (bad or missing input)."""


_ESPGRID = None


def set_espgrid(path):
    global _ESPGRID
    _ESPGRID = path


def espgrid_program():
    candidates = [_ESPGRID, os.environ.get("ESPGRID"),
                  os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "espgrid"),
                  shutil.which("espgrid")]
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    raise InputError("cannot find the espgrid program (give --espgrid PATH, set ESPGRID, build it into "
                     "build/, or put espgrid on the PATH)")


def _run(args):
    r = subprocess.run([espgrid_program()] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, errors="replace")
    if r.returncode != 0:
        lines = [l for l in r.stderr.splitlines() if l.startswith("espgrid: error: ")]
        raise InputError(lines[-1][len("espgrid: error: "):] if lines else r.stderr.strip() or
                         f"espgrid {args[0]} failed (exit {r.returncode})")
    return r.stdout


class Structure:
    def __init__(self, xyz, charge, radius, element, path):
        self.xyz = np.asarray(xyz, float).reshape(-1, 3)  # Å
        self.charge = np.asarray(charge, float)             # e
        self.radius = np.asarray(radius, float)             # Å
        self.element = list(element)                        # "C", "Cl", or "X" when unknown
        self.path = path

    def __len__(self):
        return len(self.xyz)

    def subset(self, mask):
        mask = np.asarray(mask, bool)
        return Structure(self.xyz[mask], self.charge[mask], self.radius[mask],
                         [e for e, k in zip(self.element, mask) if k], self.path)


def read_structure(path):
    """The atoms as espgrid reads them (`espgrid atoms PATH`)."""
    if not os.path.isfile(path):
        raise InputError(f"{path}: no such file")
    rows = [line.split() for line in _run(["atoms", path]).splitlines() if line and not line.startswith("#")]
    if not rows:
        raise InputError(f"{path}: no atoms")
    numbers = np.array([[float(v) for v in r[:5]] for r in rows])
    return Structure(numbers[:, 0:3], numbers[:, 3], numbers[:, 4], [r[5] for r in rows], path)


#: The map extensions `espgrid convert` reads (src/maps/map_formats.h, map_format_from_extension).
MAP_EXTENSIONS = (".dx", ".dx.gz", ".mrc", ".map", ".ccp4", ".vti")


def map_extension(path):
    """The map extension of `path` (".dx.gz" for a gzip-compressed .dx), lower case, or None."""
    name = os.path.basename(path).lower()
    for ext in sorted(MAP_EXTENSIONS, key=len, reverse=True):
        if name.endswith(ext):
            return ext
    return None


def map_to_vti(path, vti, units=None):
    """Writes the map `path` (any format espgrid writes) as the uncompressed `vti`, through
    espgrid's own readers and writer."""
    if not os.path.isfile(path):
        raise InputError(f"{path}: no such file")
    _run(["convert", path, "-o", vti] + (["--units", units] if units else []))


def dx_to_vti(path, vti, units=None):
    """Writes the OpenDX map `path` as `vti` (map_to_vti; kept for callers of the old name)."""
    map_to_vti(path, vti, units)
