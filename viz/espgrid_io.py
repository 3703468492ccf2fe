"""Readers shared by viz/render_potential.py and the interop tests.

Only numpy is needed here (no VTK), so the tests can use the DX reader with any Python.

* read_dx(path)       -> DxMap (origin, spacing, dims, values[nx, ny, nz], units, comments)
* read_structure(path) -> Structure (xyz[N,3], charge[N], radius[N], element[N], names[N])

Errors that a user can cause (missing file, malformed content) raise InputError with a
"FILE:LINE: what is wrong" message; callers print it and exit 1.
"""

import os
import re

import numpy as np


class InputError(Exception):
    """An expected, user-facing error (bad or missing input)."""


# ------------------------------------------------------------------------------------------------
# OpenDX
# ------------------------------------------------------------------------------------------------

class DxMap:
    def __init__(self, origin, spacing, dims, values, units, comments):
        self.origin = np.asarray(origin, float)      # (3,) Å
        self.spacing = np.asarray(spacing, float)    # (3,) Å
        self.dims = tuple(int(d) for d in dims)      # (nx, ny, nz)
        self.values = values                         # float64 array, shape (nx, ny, nz): values[i, j, k]
        self.units = units                           # e.g. "kT/e", or "" when the file does not say
        self.comments = comments                     # the '#' lines, without the '#'

    def node(self, i, j, k):
        return self.origin + self.spacing * np.array([i, j, k], float)


_UNIT_PATTERNS = [
    re.compile(r"[Pp]otential in ([^\s,()]+)"),            # espgrid: "# Potential in kT/e (T = ...)"
    re.compile(r"\((kT/e|kcal/mol/e|kJ/mol/e|V|mV)\)"),      # APBS: "# POTENTIAL (kT/e)"
    re.compile(r"units?\s*[:=]?\s*(kT/e|kcal/mol/e|kJ/mol/e|V|mV)\b", re.I),
]


def units_from_comments(comments):
    for c in comments:
        for pat in _UNIT_PATTERNS:
            m = pat.search(c)
            if m:
                return m.group(1)
    return ""


def read_dx(path):
    """Read a scalar OpenDX regular grid (the layout APBS writes: z fastest)."""
    if not os.path.isfile(path):
        raise InputError(f"{path}: no such file")
    with open(path, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    lines = text.splitlines()
    comments, counts, origin, deltas, items = [], None, None, [], None
    data_line = None
    for n, line in enumerate(lines):
        s = line.strip()
        if not s:
            continue
        if s.startswith("#"):
            comments.append(s[1:].strip())
            continue
        w = s.split()
        try:
            if w[0] == "object" and "gridpositions" in w and "counts" in w:
                counts = [int(x) for x in w[w.index("counts") + 1:w.index("counts") + 4]]
            elif w[0] == "origin":
                origin = [float(x) for x in w[1:4]]
            elif w[0] == "delta":
                deltas.append([float(x) for x in w[1:4]])
            elif w[0] == "object" and "array" in w:
                if "items" in w:
                    items = int(w[w.index("items") + 1])
                if "follows" not in w:
                    raise InputError(f"{path}:{n + 1}: only inline data ('data follows') is supported")
                data_line = n
                break
        except (ValueError, IndexError):
            raise InputError(f"{path}:{n + 1}: malformed header line: {s[:80]}")
    if counts is None or len(counts) != 3:
        raise InputError(f"{path}: not an OpenDX grid (no 'object 1 class gridpositions counts NX NY NZ')")
    if origin is None or len(origin) != 3:
        raise InputError(f"{path}: no 'origin X Y Z' line")
    if len(deltas) != 3 or any(len(d) != 3 for d in deltas):
        raise InputError(f"{path}: expected three 'delta' lines, found {len(deltas)}")
    if data_line is None:
        raise InputError(f"{path}: no 'object 3 class array ... data follows' line")
    d = np.array(deltas)
    if np.any(np.abs(d - np.diag(np.diag(d))) > 1e-12) or np.any(np.diag(d) <= 0):
        raise InputError(f"{path}: only axis-aligned grids with positive deltas are supported")
    n_expected = counts[0] * counts[1] * counts[2]
    if items is not None and items != n_expected:
        raise InputError(f"{path}: 'items {items}' does not match counts {counts} ({n_expected} points)")
    # The values run from the line after 'data follows' up to the first non-numeric line.
    body = []
    for line in lines[data_line + 1:]:
        s = line.lstrip()
        if s[:1].isalpha() and not s.lower().startswith(("nan", "inf")):
            break
        body.append(line)
    try:
        vals = np.array(" ".join(body).split(), dtype=float) if body else np.zeros(0)
    except ValueError as e:
        raise InputError(f"{path}: a value after 'data follows' is not a number ({e}); truncated file?")
    if vals.size < n_expected:
        raise InputError(f"{path}: {vals.size} values, expected {n_expected}")
    vals = vals[:n_expected]
    if not np.all(np.isfinite(vals)):
        raise InputError(f"{path}: the map holds NaN or inf values")
    return DxMap(origin, np.diag(d), counts, vals.reshape(counts), units_from_comments(comments), comments)


# ------------------------------------------------------------------------------------------------
# Structures
# ------------------------------------------------------------------------------------------------

class Structure:
    def __init__(self, xyz, charge, radius, element, names, path):
        self.xyz = np.asarray(xyz, float).reshape(-1, 3)
        self.charge = np.asarray(charge, float)
        self.radius = np.asarray(radius, float)
        self.element = list(element)
        self.names = list(names)
        self.path = path

    def __len__(self):
        return len(self.xyz)

    def subset(self, mask):
        mask = np.asarray(mask, bool)
        return Structure(self.xyz[mask], self.charge[mask], self.radius[mask],
                         [e for e, k in zip(self.element, mask) if k],
                         [n for n, k in zip(self.names, mask) if k], self.path)


# Bondi van der Waals radii (Å), as espgrid uses for XYZ; 1.70 for anything else.
BONDI = {"H": 1.20, "He": 1.40, "C": 1.70, "N": 1.55, "O": 1.52, "F": 1.47, "Ne": 1.54, "Si": 2.10,
         "P": 1.80, "S": 1.80, "Cl": 1.75, "Ar": 1.88, "As": 1.85, "Se": 1.90, "Br": 1.85, "Kr": 2.02,
         "I": 1.98, "Xe": 2.16, "Li": 1.82, "Na": 2.27, "Mg": 1.73, "K": 2.75, "Ni": 1.63, "Cu": 1.40,
         "Zn": 1.39, "Ga": 1.87, "Pd": 1.63, "Ag": 1.72, "Cd": 1.58, "In": 1.93, "Sn": 2.17,
         "Pt": 1.75, "Au": 1.66, "Hg": 1.55, "Tl": 1.96, "Pb": 2.02, "U": 1.86}

_FLOAT = re.compile(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?$")
_MERGED = re.compile(r"[+-]?\d+\.\d{3}")          # PDB2PQR's %8.3f coordinates, run together


def _is_float(tok):
    return bool(_FLOAT.match(tok))


def _element_from_name(name, resname=""):
    n = name.strip().lstrip("0123456789")
    if not n:
        return "X"
    # Two-letter ions whose residue name equals the atom name (CA, MG, ZN, CL, NA ...).
    if resname.strip().upper() == name.strip().upper() and len(n) >= 2:
        return n[0].upper() + n[1].lower()
    return n[0].upper()


def _read_pqr(path, lines):
    xyz, q, r, el, names = [], [], [], [], []
    for n, line in enumerate(lines, 1):
        rec = line[:6].strip().upper()
        if rec == "ENDMDL":
            break
        if rec not in ("ATOM", "HETATM"):
            continue
        toks = line.split()
        if len(toks) < 6:
            raise InputError(f"{path}:{n}: too few fields in {rec} record")
        try:
            radius, charge = float(toks[-1]), float(toks[-2])
        except ValueError:
            raise InputError(f"{path}:{n}: charge and radius must be the last two fields")
        coords, i = [], len(toks) - 3
        while len(coords) < 3 and i >= 2:
            t = toks[i]
            if _is_float(t):
                coords.insert(0, float(t))
            elif "".join(_MERGED.findall(t)) == t and t:
                coords[0:0] = [float(x) for x in _MERGED.findall(t)]
            else:
                break
            i -= 1
        if len(coords) != 3:
            raise InputError(f"{path}:{n}: cannot find x y z before charge and radius")
        name = toks[2] if len(toks) > 2 else "X"
        resname = toks[3] if len(toks) > 3 else ""
        xyz.append(coords)
        q.append(charge)
        r.append(radius)
        names.append(name)
        el.append(_element_from_name(name, resname))
    if not xyz:
        raise InputError(f"{path}: no ATOM/HETATM records")
    return Structure(xyz, q, r, el, names, path)


def _read_xyz(path, lines):
    lines = [l for l in lines]
    if not lines or not lines[0].strip():
        raise InputError(f"{path}:1: expected the atom count")
    try:
        count = int(lines[0].split()[0])
    except ValueError:
        raise InputError(f"{path}:1: expected the atom count, got {lines[0].strip()[:40]!r}")
    comment = lines[1] if len(lines) > 1 else ""
    # Extended XYZ: Properties=species:S:1:pos:R:3:charge:R:1 (any order).
    cols = {"species": 0, "pos": 1, "charge": 4}
    m = re.search(r"Properties=(\S+)", comment)
    if m:
        parts = m.group(1).split(":")
        col, cols = 0, {}
        for k in range(0, len(parts) - 2, 3):
            name, width = parts[k], int(parts[k + 2])
            key = {"charges": "charge", "initial_charges": "charge"}.get(name, name)
            cols.setdefault(key, col)
            col += width
        if "species" not in cols or "pos" not in cols:
            raise InputError(f"{path}:2: Properties= lacks species or pos")
    xyz, q, r, el = [], [], [], []
    for n in range(2, 2 + count):
        if n >= len(lines):
            raise InputError(f"{path}: count says {count} atoms, file has {len(lines) - 2}")
        t = lines[n].split()
        try:
            e = t[cols["species"]]
            p = [float(t[cols["pos"] + a]) for a in range(3)]
            c = float(t[cols["charge"]]) if "charge" in cols and cols["charge"] < len(t) else 0.0
        except (ValueError, IndexError):
            raise InputError(f"{path}:{n + 1}: expected 'Element x y z charge'")
        e = e[:1].upper() + e[1:].lower()
        xyz.append(p)
        q.append(c)
        el.append(e)
        r.append(BONDI.get(e, 1.70))
    return Structure(xyz, q, r, el, el, path)


def read_structure(path):
    if not os.path.isfile(path):
        raise InputError(f"{path}: no such file")
    with open(path, "rb") as f:
        raw = f.read()
    if b"\0" in raw[:4096]:
        raise InputError(f"{path}: binary data, expected a PQR or XYZ text file")
    lines = raw.decode("latin-1").splitlines()
    ext = os.path.splitext(path)[1].lower()
    if ext == ".pqr":
        return _read_pqr(path, lines)
    if ext in (".xyz", ".extxyz"):
        return _read_xyz(path, lines)
    raise InputError(f"{path}: unknown structure format '{ext}' (expected .pqr, .xyz or .extxyz)")
