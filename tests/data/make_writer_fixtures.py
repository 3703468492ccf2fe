#!/usr/bin/env python3
"""Write tests/data/pqr_whitespace.pqr (DAPI, 38 atoms) again with two real PQR writers, for
the reader's layout tests:

  pqr_biopython.pqr   Biopython 1.80 PDBIO(is_pqr=True): chain A, the element symbol after
                      the radius ("... 1.8240      N")
  pqr_mdanalysis.pqr  MDAnalysis 2.4.2 PQRWriter: 6-digit serials, whitespace columns

The atoms are read here with a plain split of the source's last five fields (no library
parser), so the writers get exactly the source's values; tests/test_readers.cpp checks that
espgrid reads every atom of both files equal to the source.

Needs Debian's python3-biopython and python3-mdanalysis: /usr/bin/python3 tests/data/make_writer_fixtures.py
"""
import os
import warnings

warnings.simplefilter("ignore")  # MDAnalysis' deprecation noise

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "pqr_whitespace.pqr")


def source_atoms():
    rows = []
    with open(SOURCE) as f:
        for line in f:
            fields = line.split()
            if fields and fields[0] == "ATOM":
                serial, name, resname, resseq = int(fields[1]), fields[2], fields[3], int(fields[4])
                x, y, z, q, r = (float(v) for v in fields[-5:])
                rows.append((serial, name, resname, resseq, x, y, z, q, r))
    assert len(rows) == 38, len(rows)
    return rows


def write_biopython(rows, path):
    from Bio.PDB import PDBIO
    from Bio.PDB.StructureBuilder import StructureBuilder

    b = StructureBuilder()
    b.init_structure("dapi")
    b.init_model(0)
    b.init_chain("A")
    b.init_seg(" ")
    b.init_residue(rows[0][2], " ", rows[0][3], " ")
    for serial, name, _, _, x, y, z, q, r in rows:
        element = name.lstrip("0123456789")[0]  # C, H or N in DAPI
        b.init_atom(name, (x, y, z), 0.0, 1.0, " ", name.ljust(4), serial, element, pqr_charge=q, radius=r,
                    is_pqr=True)
    io = PDBIO(is_pqr=True)
    io.set_structure(b.get_structure())
    io.save(path)


def write_mdanalysis(path):
    import MDAnalysis as mda

    os.chdir(HERE)  # MDAnalysis names its input in a REMARK: keep it relative
    mda.Universe("pqr_whitespace.pqr").atoms.write(path)


if __name__ == "__main__":
    rows = source_atoms()
    write_biopython(rows, os.path.join(HERE, "pqr_biopython.pqr"))
    write_mdanalysis(os.path.join(HERE, "pqr_mdanalysis.pqr"))
