"""Shared helpers for the interop tests (ctest label `interop`).

Each test makes maps with the espgrid binary, reads our .dx with the strict VMD-rules reader
below (the reference values), then asks an outside client (ParaView, PyMOL, APBS) to read the
same file and compares. A test whose client is not installed exits with SKIP (77), which ctest
reports as "Skipped" (SKIP_RETURN_CODE 77 in tests/CMakeLists.txt).

Usage of every test:  /usr/bin/python3 tests/interop/test_X.py --espgrid BIN --source REPO_ROOT
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:  # numpy is part of the client stack here (python3-numpy): skip, never fail
    print(f"SKIP: numpy is not installed for {sys.executable}; apt-get install python3-numpy")
    sys.exit(77)

SKIP = 77


def skip(msg):
    print(f"SKIP: {msg}")
    sys.stdout.flush()
    sys.exit(SKIP)


def fail(msg):
    print(f"FAIL: {msg}")
    sys.stdout.flush()
    sys.exit(1)


def parse_args(description):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--espgrid", required=True, help="the espgrid binary")
    p.add_argument("--source", required=True, help="repository root (fixtures under tests/data, data/)")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory")
    a = p.parse_args()
    if not os.access(a.espgrid, os.X_OK):
        fail(f"{a.espgrid}: espgrid binary not found or not executable (build the espgrid target)")
    return a


class Workdir:
    def __init__(self, keep=False):
        self.path = tempfile.mkdtemp(prefix="espgrid-interop-")
        self.keep = keep

    def __enter__(self):
        return self.path

    def __exit__(self, *exc):
        if self.keep:
            print(f"kept {self.path}")
        else:
            shutil.rmtree(self.path, ignore_errors=True)


# The maps every test checks: small fixtures, an anisotropic spacing (catches axis mix-ups), and a
# real protein at a coarse spacing. (name, input relative to the repo, espgrid options)
CASES = [
    ("whitespace", "tests/data/pqr_whitespace.pqr", ["--spacing", "1", "--padding", "3"]),
    ("fixedcol_aniso", "tests/data/pqr_fixed_column.pqr", ["--spacing", "0.9,1.1,1.3", "--padding", "3"]),
    ("fasciculin2", "data/fasciculin2.pqr", ["--spacing", "1.5,1.25,1.0", "--padding", "4"]),
]


def make_map(args, workdir, name, structure, options, formats=("dx", "vti")):
    """Run `espgrid map` and return {"dx": path, "vti": path, "stdout": text}; "vti" is None when
    this espgrid was built without VTK (and other formats were asked for too)."""
    out = {}
    cmd = [args.espgrid, "map", os.path.join(args.source, structure)]
    for f in formats:
        out[f] = os.path.join(workdir, f"{name}.{f}")
        cmd += ["-o", out[f]]
    cmd += list(options) + ["--backend", "cpu"]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    if r.returncode != 0 and "vti" in formats and "libvtk9-dev" in r.stderr and len(formats) > 1:
        # This espgrid was built without VTK: it cannot write .vti. Make the rest; vti = None.
        print(f"note: this espgrid cannot write .vti ({r.stderr.strip().splitlines()[-1]})")
        out = make_map(args, workdir, name, structure, options, [f for f in formats if f != "vti"])
        out["vti"] = None
        return out
    if r.returncode != 0:
        fail(f"espgrid failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout}{r.stderr}")
    out["stdout"] = r.stdout
    return out


def run(cmd, timeout=300, env=None, cwd=None):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout, env=env, cwd=cwd)


# ------------------------------------------------------------------------------------------------
# The strict reader: VMD's dxplugin rules (molfile plugin dxplugin.C), made stricter where our
# files should be stricter still (APBS layout).
# ------------------------------------------------------------------------------------------------

VMD_LINESIZE = 2040   # fgets buffer of dxplugin; a longer line would be split by VMD


class StrictDx:
    def __init__(self, counts, origin, delta, values32, values64, comments, trailer):
        self.counts = counts              # (nx, ny, nz)
        self.origin = np.array(origin)    # float64 from the text
        self.delta = np.array(delta)      # 3x3
        self.spacing = np.diag(self.delta).copy()
        self.values32 = values32          # float32, shape (nx, ny, nz): what VMD (sscanf %e into float) gets
        self.values64 = values64          # float64, shape (nx, ny, nz): the text as doubles (APBS)
        self.comments = comments
        self.trailer = trailer

    def node(self, i, j, k):
        return self.origin + self.spacing * np.array([i, j, k], float)


class DxRuleError(Exception):
    pass


_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"


def read_dx_strict(path):
    """Read `path` following VMD's dxplugin, raising DxRuleError at the first deviation.

    VMD: comment lines ('#' in column 1) only before the header, then exactly these lines, each
    read with fgets into a 2040-byte buffer and parsed with sscanf:
        object 1 class gridpositions counts NX NY NZ
        origin X Y Z
        delta DX 0 0 / delta 0 DY 0 / delta 0 0 DZ       (three lines, in that order)
        object 2 class gridconnections counts NX NY NZ   (VMD skips it; we require it to match)
        object 3 class array type double rank 0 items N data follows   (VMD: no 'binary' -> ASCII)
    then N numbers (sscanf %e into float), z fastest, then y, then x; VMD reads exactly N values
    and then only looks for 'object "NAME" class field'. Stricter here: the APBS layout of 3
    values a line (the last line may hold fewer), the trailer lines APBS writes, and no other text.
    """
    with open(path, "rb") as f:
        raw = f.read()
    if b"\r" in raw:
        raise DxRuleError("CR characters (the APBS layout uses LF line ends)")
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError as e:
        raise DxRuleError(f"non-ASCII byte at offset {e.start}")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    else:
        raise DxRuleError("the file does not end with a newline")
    for n, l in enumerate(lines, 1):
        if len(l) + 1 >= VMD_LINESIZE:
            raise DxRuleError(f"line {n} has {len(l)} characters; VMD reads lines of at most {VMD_LINESIZE - 2}")
    n = 0
    comments = []
    while n < len(lines) and lines[n].startswith("#"):
        comments.append(lines[n])
        n += 1

    def expect(pattern, what):
        nonlocal n
        if n >= len(lines):
            raise DxRuleError(f"end of file where {what} was expected")
        m = re.fullmatch(pattern, lines[n])
        if not m:
            raise DxRuleError(f"line {n + 1}: expected {what}, got {lines[n][:100]!r}")
        n += 1
        return m

    m = expect(r"object 1 class gridpositions counts (\d+) (\d+) (\d+)", "'object 1 class gridpositions counts NX NY NZ'")
    counts = tuple(int(x) for x in m.groups())
    if min(counts) < 1:
        raise DxRuleError(f"counts {counts}")
    m = expect(rf"origin ({_NUM}) ({_NUM}) ({_NUM})", "'origin X Y Z'")
    origin = [float(x) for x in m.groups()]
    delta = []
    for axis in range(3):
        m = expect(rf"delta ({_NUM}) ({_NUM}) ({_NUM})", f"'delta' line {axis + 1} of 3")
        d = [float(x) for x in m.groups()]
        for b in range(3):
            if (b == axis) != (d[b] != 0.0):
                raise DxRuleError(f"delta line {axis + 1} is {d}: expected only component {axis} non-zero")
        if d[axis] <= 0:
            raise DxRuleError(f"delta line {axis + 1}: spacing {d[axis]} must be positive")
        delta.append(d)
    m = expect(r"object 2 class gridconnections counts (\d+) (\d+) (\d+)", "'object 2 class gridconnections counts NX NY NZ'")
    if tuple(int(x) for x in m.groups()) != counts:
        raise DxRuleError("gridconnections counts differ from gridpositions counts")
    total = counts[0] * counts[1] * counts[2]
    m = expect(r"object 3 class array type double rank 0 items (\d+) data follows",
               "'object 3 class array type double rank 0 items N data follows'")
    if int(m.group(1)) != total:
        raise DxRuleError(f"items {m.group(1)} but counts give {total}")
    tokens = []
    num = re.compile(_NUM)
    full_lines = (total + 2) // 3
    for r in range(full_lines):
        if n >= len(lines):
            raise DxRuleError(f"end of file after {len(tokens)} of {total} values")
        t = lines[n].split(" ")
        want = 3 if r < full_lines - 1 or total % 3 == 0 else total % 3
        if len(t) != want or not all(num.fullmatch(x) for x in t):
            raise DxRuleError(f"line {n + 1}: expected {want} numbers separated by single spaces, "
                              f"got {lines[n][:100]!r}")
        tokens.extend(t)
        n += 1
    trailer = lines[n:]
    want_trailer = ['attribute "dep" string "positions"',
                    'object "regular positions regular connections" class field',
                    'component "positions" value 1',
                    'component "connections" value 2',
                    'component "data" value 3']
    if trailer != want_trailer:
        raise DxRuleError(f"after the values expected the APBS trailer {want_trailer}, got {trailer[:6]}")
    # VMD: sscanf("%e") into a float = the decimal text rounded once to float32 (strtof).
    values32 = np.array(tokens, dtype=np.float32).reshape(counts)
    values64 = np.array(tokens, dtype=np.float64).reshape(counts)
    if not np.all(np.isfinite(values64)):
        raise DxRuleError("NaN or inf among the values")
    return StrictDx(counts, origin, delta, values32, values64, comments, trailer)


def trilinear(dx, p):
    """The potential at point p by trilinear interpolation of dx.values64 (APBS Vgrid_value's rule)."""
    g = (np.asarray(p, float) - dx.origin) / dx.spacing
    i0 = np.floor(g).astype(int)
    n = np.array(dx.counts)
    i0 = np.minimum(np.maximum(i0, 0), n - 2)
    f = g - i0
    v = 0.0
    for a in (0, 1):
        for b in (0, 1):
            for c in (0, 1):
                w = (f[0] if a else 1 - f[0]) * (f[1] if b else 1 - f[1]) * (f[2] if c else 1 - f[2])
                v += w * dx.values64[i0[0] + a, i0[1] + b, i0[2] + c]
    return v


def espgrid_range(stdout):
    """(min, max) from espgrid's 'potential  MIN to MAX UNIT' summary line (4 significant digits)."""
    m = re.search(r"^potential\s+(\S+) to (\S+) ", stdout, re.M)
    return (float(m.group(1)), float(m.group(2))) if m else None


def sample_indices(counts, n=40, seed=1):
    """Corner nodes, the centre, and n pseudo-random nodes (deterministic)."""
    nx, ny, nz = counts
    rng = np.random.default_rng(seed)
    idx = [(0, 0, 0), (nx - 1, 0, 0), (0, ny - 1, 0), (0, 0, nz - 1), (nx - 1, ny - 1, nz - 1),
           (nx // 2, ny // 2, nz // 2), (1, 2, 3) if min(counts) > 3 else (0, 0, 0)]
    idx += [tuple(int(rng.integers(0, c)) for c in counts) for _ in range(n)]
    return idx
