"""espgrid.read_map reads every format espgrid writes, through the program's readers (issues #21
and #25): the same checks as `espgrid convert`, and a bad file is an espgrid error, never a crash
of the interpreter."""

import os

import numpy as np
import pytest

import espgrid

FORMATS = ["dx", "dx.gz", "mrc", "map", "ccp4", "vti"]


@pytest.fixture(scope="module")
def small_map():
    positions = np.array([[0.0, 0.0, 0.0], [3.0, 1.0, -2.0]])
    return espgrid.compute_map(positions, [1.0, -0.5], spacing=0.7, padding=3, units="kcal/mol/e", dielectric=2,
                               kernel="cpu-reference")


@pytest.mark.parametrize("ext", FORMATS)
def test_every_format_reads_back(small_map, tmp_path, ext):
    path = tmp_path / f"m.{ext}"
    small_map.write(str(path))
    back = espgrid.read_map(path)
    assert back.shape == small_map.shape
    assert np.array_equal(back.values, small_map.values)  # every format holds the floats exactly
    assert back.units == "kcal/mol/e" and back.dielectric == 2
    if ext in ("mrc", "map", "ccp4"):  # float32 header fields: the floats nearest the grid's numbers
        assert np.array_equal(np.float32(back.origin), np.float32(small_map.origin))
        assert np.array_equal(np.float32(back.spacing), np.float32(small_map.spacing))
    else:
        assert back.grid == small_map.grid


def dx_text(counts="2 2 2", items=8, data="1 2 3\n4 5 6\n7 8\n"):
    return ("# Potential in kT/e (T = 298.15 K), dielectric 1\n"
            f"object 1 class gridpositions counts {counts}\norigin 0 0 0\n"
            "delta 1 0 0\ndelta 0 1 0\ndelta 0 0 1\n"
            f"object 2 class gridconnections counts {counts}\n"
            f"object 3 class array type double rank 0 items {items} data follows\n{data}")


def test_bad_maps_are_input_errors_with_file_and_line(tmp_path):
    # Overflowing counts once wrapped the point count and took the interpreter down (SIGSEGV).
    bad = tmp_path / "counts.dx"
    bad.write_text(dx_text("4294967296 4294967296 1", 0, ""))
    with pytest.raises(espgrid.InputError, match="grid count '4294967296'") as e:
        espgrid.read_map(bad)
    assert e.value.file == str(bad) and e.value.line == 2
    # 1e39 does not fit a float32 map: the user's data, named with its line (was "internal error").
    big = tmp_path / "big.dx"
    big.write_text(dx_text(data="1 2 3\n4 1e39 6\n7 8\n"))
    with pytest.raises(espgrid.InputError, match=r"big.dx:10: value '1e39' is beyond the range") as e:
        espgrid.read_map(big)
    assert e.value.line == 10
    cut = tmp_path / "cut.mrc"
    # the interpreter is still alive after the errors above
    m = espgrid.compute_map(np.zeros((1, 3)), [1.0], spacing=1.0, padding=2, kernel="cpu-reference")
    m.write(str(tmp_path / "whole.mrc"))
    cut.write_bytes((tmp_path / "whole.mrc").read_bytes()[:-8])
    with pytest.raises(espgrid.InputError, match="it is truncated") as e:
        espgrid.read_map(cut)
    assert e.value.file == str(cut) and e.value.line == 0  # a binary file: no line


def test_read_map_honours_max_grid_points(tmp_path, monkeypatch):
    path = tmp_path / "m.dx"
    path.write_text(dx_text())
    monkeypatch.setenv("ESPGRID_MAX_GRID_POINTS", "7")
    with pytest.raises(espgrid.UsageError, match="8 points is over the limit of 7 points"):
        espgrid.read_map(path)
    monkeypatch.setenv("ESPGRID_MAX_GRID_POINTS", "8")
    assert espgrid.read_map(path).shape == (2, 2, 2)


def test_missing_file_and_unknown_extension(tmp_path):
    with pytest.raises(FileNotFoundError):
        espgrid.read_map(tmp_path / "nope.mrc")
    (tmp_path / "x.tiff").write_text("")
    with pytest.raises(espgrid.UsageError, match="cannot tell the map format"):
        espgrid.read_map(tmp_path / "x.tiff")
    assert os.path.exists(tmp_path / "x.tiff")
