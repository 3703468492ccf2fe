#!/usr/bin/env python3
"""Regenerate the reader-test fixtures in tests/data/ from the real molecules
shipped by Debian's apbs-data package (/usr/share/apbs/examples).

Needs: apbs-data 3.4.1, pdb2pqr 3.5.2 (pdb2pqr30 on PATH), /bin/ls.
Run from anywhere:  python3 tests/data/make_fixtures.py
Every fixture is cut from a real file; the edits made are listed in
tests/data/README.md.  Expected values are computed separately by
fixture_stats.py (this script does not compute them).
"""
import os
import re
import subprocess
import tempfile

EX = "/usr/share/apbs/examples"
HERE = os.path.dirname(os.path.abspath(__file__))


def read_lines(rel):
    """Lines of a shipped example file, without line ends (CRLF or LF)."""
    with open(os.path.join(EX, rel), newline="") as f:
        return f.read().replace("\r\n", "\n").split("\n")


def atoms(rel):
    return [l for l in read_lines(rel) if l.startswith(("ATOM", "HETATM"))]


def write(name, text, binary=False):
    path = os.path.join(HERE, name)
    mode = "wb" if binary else "w"
    kw = {} if binary else {"newline": ""}  # never translate line ends
    with open(path, mode, **kw) as f:
        f.write(text)


ELEMENTS = {"C", "H", "N", "O", "S", "P"}


def element(atom_name):
    """Element from a PDB-style atom name in these small molecules
    (first letter after stripping leading digits; all are C/H/N/O/S)."""
    e = atom_name.lstrip("0123456789")[0].upper()
    assert e in ELEMENTS, atom_name
    return e


# ---------------------------------------------------------------- PQR, valid
# 1. APBS whitespace form: DAPI (residue DRG) from PDB 1D30, single-space
#    separated fields.  Source is CRLF; written here with LF.  REMARK lines
#    added on top, TER and END at the bottom.
dapi = atoms("bem-binding-energy/test_proteins/1d30_monomer2.pqr")
write("pqr_whitespace.pqr",
      "REMARK   1 DAPI ligand (residue DRG) of PDB 1D30, APBS whitespace PQR\n"
      "REMARK   1 cut from apbs-data bem-binding-energy/test_proteins/1d30_monomer2.pqr\n"
      "REMARK   6 Total charge on this ligand: 2.0000 e\n"
      + "\n".join(dapi) + "\nTER\nEND\n")

# 2. PDB2PQR 3.5.2 fixed-column output with chain ID and run-together
#    coordinates.  No shipped PQR has run-together coordinates, so the real
#    box B RNA hairpin PDB is translated by (-100,-100,-100) Å (PDB columns
#    31-54 rewritten with %8.3f) and pdb2pqr itself writes the PQR.
#    Residue U A 4 is kept (its atoms give x/y, y/z and no run-together
#    lines), followed by pdb2pqr's own closing "TER\nEND" (END without newline).
src = read_lines("protein-rna/PDB/model_outBoxB19.pdb")
moved = []
for l in src:
    if l.startswith(("ATOM", "HETATM")):
        x, y, z = (float(l[30:38]), float(l[38:46]), float(l[46:54]))
        l = l[:30] + f"{x - 100:8.3f}{y - 100:8.3f}{z - 100:8.3f}" + l[54:]
    moved.append(l)
with tempfile.TemporaryDirectory() as td:
    pdb = os.path.join(td, "boxb_minus100.pdb")
    pqr = os.path.join(td, "boxb_minus100.pqr")
    with open(pdb, "w") as f:
        f.write("\n".join(moved))
    subprocess.run(["pdb2pqr30", "--ff=AMBER", "--keep-chain", pdb, pqr],
                   check=True, capture_output=True)
    with open(pqr, newline="") as f:
        out = f.read()
res4 = [l for l in out.split("\n")
        if l.startswith("ATOM") and l[21] == "A" and l[22:26] == "   4"]
assert res4 and out.endswith("TER\nEND")
write("pqr_fixed_column.pqr", "\n".join(res4) + "\nTER\nEND")

# 3. CRLF + tabs, CRYST1/MODEL/ENDMDL, HETATM, insertion code.
#    FKBP12 residues GLY 51 and LYS 52 plus the DMSO ligand from
#    FKBP/1d7h-dmso-complex.pqr.  Edits: LYS 52 gets insertion code A
#    (written "52A"), DMSO records become HETATM, fields joined by one TAB,
#    CRYST1 (P 1 unit-cell placeholder), MODEL 1/ENDMDL/END added.
fk = atoms("FKBP/1d7h-dmso-complex.pqr")
rows = []
for l in fk:
    f = l.split()
    if f[3] == "GLY" and f[4] == "51" or f[3] == "LYS" and f[4] == "52":
        if f[4] == "52":
            f[4] = "52A"
        rows.append("\t".join(f))
for l in fk:
    f = l.split()
    if f[3] == "DMS":
        f[0] = "HETATM"
        rows.append("\t".join(f))
text = ("REMARK\tFKBP12 G51/K52 + DMSO, from apbs-data FKBP/1d7h-dmso-complex.pqr\n"
        "CRYST1    1.000    1.000    1.000  90.00  90.00  90.00 P 1           1\n"
        "MODEL\t1\n" + "\n".join(rows) + "\nENDMDL\nEND\n")
write("pqr_crlf_tabs.pqr", text.replace("\n", "\r\n"))

# ---------------------------------------------------------------- XYZ, valid
def xyz_rows(rel):
    out = []
    for l in atoms(rel):
        f = l.split()
        out.append((element(f[2]), f[5], f[6], f[7], f[8]))
    return out


# DMSO (FKBP/dmso-min.pqr): plain count / comment / "El x y z q".
dmso = xyz_rows("FKBP/dmso-min.pqr")
write("xyz_plain.xyz",
      f"{len(dmso)}\nDMSO from apbs-data FKBP/dmso-min.pqr; columns: El x y z charge\n"
      + "".join(f"{e} {x} {y} {z} {q}\n" for e, x, y, z, q in dmso))

# Acetate (ionize/acetate.pqr): extended XYZ, columns reordered, extra
# columns (Z, mass) and extra comment keys.
acet = xyz_rows("ionize/acetate.pqr")
ZM = {"H": (1, "1.008"), "C": (6, "12.011"), "O": (8, "15.999")}
write("xyz_extended_reordered.xyz",
      f"{len(acet)}\n"
      'Properties=pos:R:3:initial_charges:R:1:species:S:1:Z:I:1:masses:R:1 '
      'pbc="F F F" comment="acetate from apbs-data ionize/acetate.pqr"\n'
      + "".join(f"{x:>8} {y:>8} {z:>8} {q:>7} {e:<2} {ZM[e][0]:>2} {ZM[e][1]:>7}\n"
                for e, x, y, z, q in acet))

# Same DMSO, element + coordinates only: no charges -> must be rejected.
write("xyz_nocharge.xyz",
      f"{len(dmso)}\nDMSO without charges (must be rejected)\n"
      + "".join(f"{e} {x} {y} {z}\n" for e, x, y, z, q in dmso))

# ---------------------------------------------------------------- bad inputs
# PQR base: first 5 atoms of fasciculin-2 (misc/fas2.pqr), one edit each.
fas = atoms("misc/fas2.pqr")[:5]


def edit(i, field, value):
    """Replace whitespace-separated token `field` (0-based) of atom line `i`
    in place, keeping the original spacing of the rest of the line."""
    lines = list(fas)
    m = list(re.finditer(r"\S+", lines[i]))[field]
    lines[i] = lines[i][:m.start()] + value + lines[i][m.end():]
    return "\n".join(lines) + "\n"


write("bad_coord_nonnumber.pqr", edit(1, 6, "2.57Q3"))   # y of line 2
write("bad_missing_field.pqr",
      "\n".join(fas[:2] + [fas[2].rsplit(None, 1)[0]] + fas[3:]) + "\n")  # no radius, line 3
write("bad_nan_charge.pqr", edit(3, 8, "nan"))           # charge of line 4
write("bad_inf_coord.pqr", edit(2, 7, "inf"))            # z of line 3
write("bad_empty.pqr", "")
write("bad_empty.xyz", "")
write("bad_remark_only.pqr",
      "\n".join(l for l in read_lines("protein-rna/model_outNB.pqr")
                if l.startswith("REMARK")) + "\n")

# XYZ base: xyz_plain.xyz (DMSO, 10 atoms).
body = "".join(f"{e} {x} {y} {z} {q}\n" for e, x, y, z, q in dmso)
write("bad_count_too_large.xyz",
      f"12\nDMSO: count line says 12 but only 10 atom lines follow\n" + body)
write("bad_count_not_number.xyz",
      f"ten\nDMSO: count line is not a number\n" + body)

with open("/bin/ls", "rb") as f:
    garbage = f.read(200)
write("bad_binary.pqr", garbage, binary=True)
write("bad_binary.xyz", garbage, binary=True)
print("fixtures written to", HERE)
