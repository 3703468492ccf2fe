#!/usr/bin/env python3
"""Regenerates the MDAnalysis fixtures of this folder from MDAnalysis' test data
(testsuite/MDAnalysisTests/data of github.com/MDAnalysis/mdanalysis; taken at commit
d2729f71809f1f5fc2d3644ef48ee351e3b28f3d). See tests/data/README.md, "MDAnalysis trajectories".

    /usr/bin/python3 tests/data/mdanalysis/make_fixtures.py PATH/TO/MDAnalysisTests/data

adk.psf and adk_open.pqr are gzip-compressed (MDAnalysis reads .psf.gz and .pqr.gz); adk_dims.dcd
(3.9 MB, 98 frames, its header's NSET a stale 500) is cut after its third frame, header
unchanged; watdyn.psf and watdyn.dcd are copied as they are.
"""

import gzip
import os
import shutil
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def dcd_header_bytes(data):
    """Bytes before the first frame of a little-endian DCD with 32-bit record markers."""
    at = 4 + struct.unpack("<i", data[:4])[0] + 4  # the 84-byte header record
    title = struct.unpack("<i", data[at:at + 4])[0]
    at += 4 + title + 4
    return at + 4 + 4 + 4  # the atom-count record


def main(source):
    for name in ("adk.psf", "adk_open.pqr"):
        with open(os.path.join(source, name), "rb") as f, open(os.path.join(HERE, name + ".gz"), "wb") as out:
            # mtime 0 and no file name: the same bytes on every run
            with gzip.GzipFile(filename="", mode="wb", compresslevel=9, fileobj=out, mtime=0) as z:
                z.write(f.read())
    data = open(os.path.join(source, "adk_dims.dcd"), "rb").read()
    atoms = 3341
    frame = 3 * (4 * atoms + 8)  # x, y, z records, no unit cell (CHARMM version 35, no extra block)
    header = dcd_header_bytes(data)
    assert (len(data) - header) % frame == 0 and (len(data) - header) // frame == 98
    open(os.path.join(HERE, "adk_dims_head.dcd"), "wb").write(data[:header + 3 * frame])
    for name in ("watdyn.psf", "watdyn.dcd"):
        shutil.copyfile(os.path.join(source, name), os.path.join(HERE, name))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
