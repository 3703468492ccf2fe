#!/usr/bin/python3
"""Writes the seed inputs of fuzz_map (fuzz/seeds/map/) and fuzz_dcd (fuzz/seeds/dcd/).

    /usr/bin/python3 fuzz/make_map_seeds.py build/espgrid

fuzz_map's input is one byte for the format (0 .dx, 1 .mrc, 2 .vti) and the file: tiny maps as
espgrid writes them (every pair model, so the physics fields and the split MRC labels are
there), a .vti compressed by VTK, one written by VTK's own writer (UInt32 byte counts), a
big-endian .mrc and one in z, y, x axis order, and .dx files in GridDataFormats' and APBS's
dialects. fuzz_dcd's seeds are DCDs as MDAnalysis writes them (CHARMM, unit cell) and as X-PLOR
does (no unit cell), with fixed atoms, big-endian. All small: the fuzzer mutates bytes, and a
small file lets it reach every field.
"""

import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    espgrid = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "espgrid")
    seeds = os.path.join(ROOT, "fuzz", "seeds", "map")
    os.makedirs(seeds, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        xyz = os.path.join(tmp, "two.xyz")
        with open(xyz, "w") as f:
            f.write("2\nProperties=species:S:1:pos:R:3:charge:R:1\nNa 0.3 0.2 0.1 1.0\nCl 1.1 0.6 0.4 -1.0\n")
        grid = ["--origin", "-0.5,-0.5,0", "--dims", "4,3,2", "--spacing", "0.5"]
        models = {"coulomb": [], "debye": ["--model", "debye", "--ionic-strength", "0.15", "--dielectric", "78.54"],
                  "distance": ["--model", "distance", "--dielectric", "4", "--units", "kcal/mol/e"]}
        for name, options in models.items():
            outs = [os.path.join(tmp, f"{name}.{ext}") for ext in ("dx", "mrc", "vti")]
            cmd = [espgrid, "map", xyz] + sum((["-o", o] for o in outs), []) + grid + options + ["--backend", "cpu"]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            for code, out in enumerate(outs):
                write(seeds, f"{name}.{out.rsplit('.', 1)[1]}", code, open(out, "rb").read())
        zlib = os.path.join(tmp, "zlib.vti")
        r = subprocess.run([espgrid, "map", xyz, "-o", zlib, "--compression", "zlib", "--backend", "cpu"] + grid,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if r.returncode == 0:
            write(seeds, "zlib.vti", 2, open(zlib, "rb").read())
        mrc = open(os.path.join(tmp, "coulomb.mrc"), "rb").read()
        write(seeds, "big-endian.mrc", 1, big_endian_mrc(mrc))
        write(seeds, "zyx.mrc", 1, zyx_mrc(mrc))
        dx = open(os.path.join(tmp, "coulomb.dx")).read()
        body = dx[dx.index("object 1"):]
        write(seeds, "apbs.dx", 0, ("# Data from APBS 3.4.1\n#\n# POTENTIAL (kT/e)\n#\n" + body).encode())
        gdf = body.replace("type double", 'type "float"').replace(
            'attribute "dep" string "positions"\n',
            'attribute "dep" string "positions"\nobject "density" class field\ncomponent "positions" value 1\n'
            'component "connections" value 2\ncomponent "data" value 3\n')
        write(seeds, "griddataformats.dx", 0, gdf.encode())
        # VTK's writer in each encoding espgrid reads itself (maps/vti_decoding.h).
        for name, mode, compressor, header, order in [
                ("vtk-uint32.vti", "raw", "None", "UInt32", "LittleEndian"),
                ("vtk-base64-zlib.vti", "base64", "ZLib", "UInt64", "LittleEndian"),
                ("vtk-inline-lz4.vti", "Binary", "LZ4", "UInt32", "LittleEndian"),
                ("vtk-inline-base64.vti", "Binary", "None", "UInt64", "BigEndian"),
                ("vtk-lzma-big-endian.vti", "raw", "LZMA", "UInt64", "BigEndian"),
                ("vtk-ascii.vti", "Ascii", "None", "UInt32", "LittleEndian")]:
            vtk_vti = vtk_written_vti(tmp, mode, compressor, header, order)
            if vtk_vti:
                write(seeds, name, 2, vtk_vti)
    dcd_seeds(os.path.join(ROOT, "fuzz", "seeds", "dcd"))


def write(folder, name, code, data):
    with open(os.path.join(folder, name), "wb") as f:
        f.write(bytes([code]) + data)


def big_endian_mrc(mrc):
    out = bytearray(mrc)
    for at in range(0, len(out), 4):
        if 208 <= at < 224 and at not in (216, 220) or 224 <= at < 1024:
            continue  # 'MAP ', the machine stamp, the labels: bytes, not numbers
        out[at:at + 4] = out[at:at + 4][::-1]
    out[212:216] = b"\x11\x11\x00\x00"
    return bytes(out)


def zyx_mrc(mrc):
    """The same map with columns along z, rows along y, sections along x (MAPC 3, MAPR 2, MAPS 1)."""
    words = list(struct.unpack("<10i", mrc[:40]))
    nx, ny, nz = words[0:3]
    values = np.frombuffer(mrc[1024:], "<f4").reshape(nz, ny, nx)  # [k, j, i]
    header = bytearray(mrc[:1024])
    struct.pack_into("<3i", header, 0, nz, ny, nx)
    struct.pack_into("<3i", header, 16, words[6], words[5], words[4])
    struct.pack_into("<3i", header, 64, 3, 2, 1)
    return bytes(header) + np.ascontiguousarray(values.transpose(2, 1, 0)).astype("<f4").tobytes()


def vtk_written_vti(tmp, mode, compressor, header, order):
    try:
        import vtk
    except ImportError:
        return None
    img = vtk.vtkImageData()
    img.SetDimensions(3, 2, 2)
    img.SetOrigin(1.0, 2.0, 3.0)
    img.SetSpacing(0.5, 0.5, 0.5)
    a = vtk.vtkFloatArray()
    a.SetName("potential")
    a.SetNumberOfTuples(12)
    for i in range(12):
        a.SetValue(i, 0.25 * i - 1)
    img.GetPointData().SetScalars(a)
    units = vtk.vtkStringArray()
    units.SetName("units")
    units.InsertNextValue("V")
    img.GetFieldData().AddArray(units)
    w = vtk.vtkXMLImageDataWriter()
    path = os.path.join(tmp, "vtk.vti")
    w.SetFileName(path)
    w.SetInputData(img)
    if mode in ("raw", "base64"):
        w.SetDataModeToAppended()
        w.SetEncodeAppendedData(mode == "base64")
    else:
        getattr(w, "SetDataModeTo" + mode)()
    getattr(w, "SetCompressorTypeTo" + compressor)()
    getattr(w, "SetHeaderTypeTo" + header)()
    getattr(w, "SetByteOrderTo" + order)()
    w.Write()
    return open(path, "rb").read()


def record(payload, order="<"):
    return struct.pack(order + "i", len(payload)) + payload + struct.pack(order + "i", len(payload))


def dcd(atoms, frames, unit_cell, fixed=0, order="<", nset=None):
    icntrl = [0] * 20
    icntrl[0] = frames if nset is None else nset
    icntrl[1], icntrl[2] = 0, 1
    icntrl[8] = fixed
    if unit_cell:
        icntrl[10] = 1
        icntrl[19] = 24  # CHARMM version: CHARMM format
    head = b"CORD" + struct.pack(order + "9i", *icntrl[:9]) + struct.pack(order + "f", 0.002) + \
        struct.pack(order + "10i", *icntrl[10:])
    out = record(head, order) + record(struct.pack(order + "i", 1) + b"espgrid fuzz seed".ljust(80), order)
    out += record(struct.pack(order + "i", atoms), order)
    if fixed:
        out += record(struct.pack(order + f"{atoms - fixed}i", *range(1, atoms - fixed + 1)), order)
    rng = np.random.default_rng(3)
    for f in range(frames):
        n = atoms if f == 0 else atoms - fixed
        if unit_cell:
            out += record(struct.pack(order + "6d", 30, 90, 30, 90, 90, 30), order)
        for _ in range(3):
            out += record(rng.normal(0, 5, n).astype(order + "f4").tobytes(), order)
    return out


def dcd_seeds(folder):
    os.makedirs(folder, exist_ok=True)
    seeds = {"charmm.dcd": dcd(4, 3, True), "xplor.dcd": dcd(4, 3, False), "fixed.dcd": dcd(5, 3, False, fixed=2),
             "big-endian.dcd": dcd(4, 2, True, order=">"), "nset-zero.dcd": dcd(3, 2, False, nset=0)}
    try:
        import warnings
        warnings.filterwarnings("ignore")
        import MDAnalysis as mda
        u = mda.Universe(os.path.join(ROOT, "tests", "data", "pqr_whitespace.pqr"))
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "m.dcd")
            with mda.Writer(path, len(u.atoms)) as w:
                for _ in range(2):
                    w.write(u.atoms)
            seeds["mdanalysis.dcd"] = open(path, "rb").read()
    except ImportError:
        pass
    for name, data in seeds.items():
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
