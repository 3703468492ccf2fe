"""Real DCD files read as VMD and MDAnalysis read them: the frames are counted from the
file's size, a stale header count gets a note, and only a file that ends inside a frame (or a
damaged record) is an error.

The fixtures are MDAnalysis' own test files (tests/data/mdanalysis, see tests/data/README.md):
adk.psf with the first 3 frames of adk_dims.dcd, whose header still announces 500 frames, and
watdyn.psf/.dcd (CHARMM, a unit-cell block in every frame). Variants are made here from them:
big-endian (every number byte-swapped), a header count of 0, a file cut inside its last frame.
With ESPGRID_MDANALYSIS_DATA set to MDAnalysisTests/data, the whole adk_dims.dcd is read too.
"""

import os
import struct
import subprocess
import sys
import warnings

import numpy as np
import pytest

import espgrid
from conftest import ROOT

mda = pytest.importorskip("MDAnalysis")
from espgrid.trajectory import TrajectoryNote  # noqa: E402

warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", category=UserWarning, module="MDAnalysis")

DATA = os.path.join(ROOT, "tests", "data", "mdanalysis")
ADK_PSF = os.path.join(DATA, "adk.psf.gz")
ADK_DCD = os.path.join(DATA, "adk_dims_head.dcd")
WAT_PSF = os.path.join(DATA, "watdyn.psf")
WAT_DCD = os.path.join(DATA, "watdyn.dcd")


def frames_of(topology, trajectory):
    """Positions (float64) and charges as MDAnalysis reads them, every frame."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        u = mda.Universe(topology, trajectory)
        return [ts.positions.astype(np.float64) for ts in u.trajectory], np.asarray(u.atoms.charges, np.float64)


def reference_mean(frames, charges, grid, **options):
    stack = np.stack([np.asarray(espgrid.compute_map(xyz, charges, grid=grid, **options).values, np.float64)
                      for xyz in frames])
    return stack.mean(axis=0), stack.std(axis=0)


def assert_close(result, frames, charges, **options):
    mean, std = reference_mean(frames, charges, result.mean.grid, **options)
    # One float32 step (2^-23 relative) of the value: the exact frame sums round once to float32,
    # numpy's pairwise double sums may round to the neighbouring float.
    np.testing.assert_allclose(result.mean.values, mean, rtol=2.0 ** -23, atol=0)
    if result.std is not None:
        np.testing.assert_allclose(result.std.values, std, rtol=2.0 ** -22, atol=1e-7 * np.abs(mean).max())


def test_a_stale_header_count_is_a_note_and_every_whole_frame_is_read():
    header_frames = struct.unpack("<i", open(ADK_DCD, "rb").read()[8:12])[0]
    assert header_frames == 500  # the fixture keeps adk_dims.dcd's stale header
    with pytest.warns(TrajectoryNote, match=r"adk_dims_head.dcd: its header announces 500 frames \(NSET\), but the "
                                            r"file holds 3 whole frames: all 3 are read, as VMD and MDAnalysis"):
        result = espgrid.average_map(ADK_PSF, ADK_DCD, std=True, spacing=2.0, progress=False)
    assert result.frames == [0, 1, 2] and result.atoms == 3341
    frames, charges = frames_of(ADK_PSF, ADK_DCD)
    assert len(frames) == 3
    assert_close(result, frames, charges)
    assert np.asarray(result.std.values).max() > 0.1  # three different frames


def test_an_open_universe_reads_the_same():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        universe = mda.Universe(ADK_PSF, ADK_DCD)
    with pytest.warns(TrajectoryNote, match="its header announces 500 frames"):
        opened = espgrid.average_map(universe, std=True, spacing=2.0, progress=False)
    with pytest.warns(TrajectoryNote):
        files = espgrid.average_map(ADK_PSF, ADK_DCD, std=True, spacing=2.0, progress=False)
    assert opened.mean.grid == files.mean.grid
    assert np.array_equal(opened.mean.values, files.mean.values)
    assert np.array_equal(opened.std.values, files.std.values)


def test_a_charmm_unit_cell_block_and_an_agreeing_header_give_no_note():
    with warnings.catch_warnings():
        warnings.simplefilter("error", TrajectoryNote)
        result = espgrid.average_map(WAT_PSF, WAT_DCD, unwrap=False, spacing=1.0, progress=False)
    assert result.frames == list(range(10))
    frames, charges = frames_of(WAT_PSF, WAT_DCD)
    assert_close(result, frames, charges)


def swap_dcd(data, unit_cell):
    """The little-endian DCD `data` with every number byte-swapped: the same file big-endian."""
    out, at = bytearray(), 0

    def record(kind):
        nonlocal at
        n = struct.unpack("<i", data[at:at + 4])[0]
        body = data[at + 4:at + 4 + n]
        if kind == "header":  # 'CORD', then 20 four-byte numbers
            body = body[:4] + np.frombuffer(body[4:], "<i4").astype(">i4").tobytes()
        elif kind == "title":  # a count, then 80-character lines
            body = np.frombuffer(body[:4], "<i4").astype(">i4").tobytes() + body[4:]
        else:
            little = {"ints": "<i4", "floats": "<f4", "doubles": "<f8"}[kind]
            body = np.frombuffer(body, little).astype(">" + little[1:]).tobytes()
        out.extend(struct.pack(">i", n) + body + struct.pack(">i", n))
        at += n + 8

    record("header")
    record("title")
    record("ints")
    while at < len(data):
        if unit_cell:
            record("doubles")
        for _ in range(3):
            record("floats")
    return bytes(out)


def with_header_count(data, count):
    """`data` (little-endian) with NSET, the header's frame count, replaced."""
    return data[:8] + struct.pack("<i", count) + data[12:]


def test_big_endian_and_header_count_variants(tmp_path):
    data = open(WAT_DCD, "rb").read()
    reference = espgrid.average_map(WAT_PSF, WAT_DCD, unwrap=False, std=True, spacing=1.0, progress=False)
    big = tmp_path / "big.dcd"
    big.write_bytes(swap_dcd(data, unit_cell=True))
    assert espgrid._espgrid.check_dcd(str(big)) == {"atoms": 15, "frames": 10, "header_frames": 10, "note": ""}
    cases = {"big.dcd": None,
             "zero.dcd": (with_header_count(data, 0), r"zero.dcd: its header's frame count \(NSET\) is 0, not filled "
                                                      r"in, but the file holds 10 whole frames: all 10 are read"),
             "fewer.dcd": (with_header_count(data, 4), r"fewer.dcd: its header announces 4 frames \(NSET\), but the "
                                                       r"file holds 10 whole frames")}
    for name, case in cases.items():
        if case is not None:
            (tmp_path / name).write_bytes(case[0])
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            result = espgrid.average_map(WAT_PSF, str(tmp_path / name), unwrap=False, std=True, grid=reference.mean.grid,
                                         progress=False)
        notes = [str(w.message) for w in seen if issubclass(w.category, TrajectoryNote)]
        if case is None:
            assert notes == [], notes
        else:
            assert len(notes) == 1 and __import__("re").search(case[1], notes[0]), notes
        # The same frames, so the same maps, bit for bit.
        assert result.frames == reference.frames
        assert np.array_equal(result.mean.values, reference.mean.values), name
        assert np.array_equal(result.std.values, reference.std.values), name


def test_only_a_partial_last_frame_is_truncation(tmp_path):
    data = open(WAT_DCD, "rb").read()
    frame = (48 + 8) + 3 * (4 * 15 + 8)
    for name, content in {"cut.dcd": data[:-frame // 2], "big-cut.dcd": swap_dcd(data, True)[:-10]}.items():
        (tmp_path / name).write_bytes(content)
        with pytest.raises(espgrid.InputError, match=name.replace(".", r"\.") + r": the file ends part-way through "
                           r"frame 10 \(after 9 complete frames of the 10 its header announces\): the trajectory is "
                           r"truncated"):
            espgrid.average_map(WAT_PSF, str(tmp_path / name), unwrap=False, spacing=1.0, progress=False)
    # Whole frames, fewer than the header announces: read, with a note.
    (tmp_path / "short.dcd").write_bytes(data[:-3 * frame])
    with pytest.warns(TrajectoryNote, match="announces 10 frames .* holds 7 whole frames"):
        result = espgrid.average_map(WAT_PSF, str(tmp_path / "short.dcd"), unwrap=False, spacing=1.0, progress=False)
    assert result.frames == list(range(7))


def run_script(args, cwd):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(espgrid.__file__)),
                                                       os.environ.get("PYTHONPATH", "")]))
    return subprocess.run(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_the_command_line_prints_the_note_once_and_exits_0(tmp_path):
    r = run_script([sys.executable, "-m", "espgrid", ADK_PSF, ADK_DCD, "-o", "mean.dx", "--spacing", "2",
                    "--no-progress"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stderr == (f"espgrid-trajectory: note: {ADK_DCD}: its header announces 500 frames (NSET), but the file "
                        "holds 3 whole frames: all 3 are read, as VMD and MDAnalysis read them\n"), r.stderr
    assert "frames     3 " in r.stdout and (tmp_path / "mean.dx").exists()


@pytest.mark.skipif(not os.environ.get("ESPGRID_MDANALYSIS_DATA"),
                    reason="ESPGRID_MDANALYSIS_DATA (MDAnalysisTests/data) not set: the whole adk_dims.dcd is 3.9 MB")
def test_the_whole_adk_dims_dcd():
    data = os.environ["ESPGRID_MDANALYSIS_DATA"]
    with pytest.warns(TrajectoryNote, match="announces 500 frames .* holds 98 whole frames"):
        result = espgrid.average_map(os.path.join(data, "adk.psf"), os.path.join(data, "adk_dims.dcd"), step=10,
                                     spacing=2.0, progress=False)
    assert result.frames == list(range(0, 98, 10))
