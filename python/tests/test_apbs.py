"""espgrid.apbs.run: APBS input files from Python (python/espgrid/apbs.py, src/apbs/).

The grids and refusals are the program's (tests/test_apbs*.cpp check them against APBS's own
logs); here: the Python values agree with the files written and with `espgrid apbs`, errors
arrive as espgrid.InputError with .file and .line, and a refused input leaves nothing behind.
"""

import json
import os

import numpy as np
import pytest

import espgrid

from conftest import ROOT, run_cli

ION = "ATOM      1  I   ION     1       0.000   0.000  0.000  1.00  3.00\n"
BLOCK = ("elec name solvated\n"
         "  mg-manual dime 33 33 33 glen 20 20 20 gcent mol 1 mol 1\n"
         "  lpbe bcfl mdh pdie 1 sdie 78.54 chgm spl2 srfm mol srad 1.4 sdens 10 temp 298.15\n"
         "  write pot dx pot\n"
         "end\n")


@pytest.fixture
def ion_input(tmp_path):
    (tmp_path / "ion.pqr").write_text(ION)
    (tmp_path / "in.in").write_text("read mol pqr ion.pqr end\n" + BLOCK + "quit\n")
    return tmp_path


def test_apbs_is_a_submodule_of_espgrid():
    assert espgrid.apbs.run is not None


def test_run_returns_the_written_maps(ion_input):
    run = espgrid.apbs.run("in.in", directory=ion_input)
    assert (ion_input / "pot-PE0.dx").exists()
    written = espgrid.read_map(ion_input / "pot-PE0.dx")
    m = run.maps["pot-PE0.dx"]
    assert m.type == "pot" and m.elec == 1 and m.shape == (33, 33, 33)
    # The DX text carries nine significant digits: every float32 reads back exactly.
    np.testing.assert_array_equal(m.values, written.values)
    np.testing.assert_allclose(m.origin, (-10, -10, -10))
    assert run.calculations[0]["dime"] == (33, 33, 33)
    assert "CALCULATION #1 (solvated): MULTIGRID" in run.text
    assert json.loads(run.json)["maps"][0]["path"].endswith("pot-PE0.dx")


def test_run_and_the_program_agree(ion_input):
    run = espgrid.apbs.run("in.in", directory=ion_input, write=False)
    assert not (ion_input / "pot-PE0.dx").exists()
    out = run_cli("apbs", "in.in", "--json", "run.json", cwd=ion_input)
    assert out.returncode == 0, out.stderr
    program = espgrid.read_map(ion_input / "pot-PE0.dx")
    # Both solve with the same solver (auto) on the same grid: the same map to the float.
    np.testing.assert_allclose(run.maps["pot-PE0.dx"].values, program.values, rtol=1e-6, atol=1e-6)
    assert json.loads((ion_input / "run.json").read_text())["calculations"][0]["grid"]["dime"] == [33, 33, 33]


def test_dry_run_sets_up_focusing_without_solving(tmp_path):
    (tmp_path / "ion.pqr").write_text(ION)
    (tmp_path / "auto.in").write_text(
        "read mol pqr ion.pqr end\n"
        "elec name solvated mg-auto dime 33 33 33 cglen 50 50 50 fglen 12 12 12 cgcent mol 1 fgcent mol 1\n"
        "  mol 1 lpbe bcfl mdh pdie 1 sdie 78.54 chgm spl2 srfm mol srad 1.4 sdens 10 temp 298.15 end\n")
    run = espgrid.apbs.run("auto.in", directory=tmp_path, dry_run=True)
    # APBS's born example: 50 -> 24.495 -> 12 A (tests/data/apbs/nosh/born_auto.apbs.txt).
    assert [round(c["length"][0], 3) for c in run.calculations] == [50.0, 24.495, 12.0]
    assert [c["bcfl"] for c in run.calculations] == ["mdh", "focus", "focus"]
    assert os.listdir(tmp_path) == ["ion.pqr", "auto.in"] or sorted(os.listdir(tmp_path)) == ["auto.in", "ion.pqr"]


def test_errors_name_the_file_and_line_and_write_nothing(tmp_path):
    (tmp_path / "ion.pqr").write_text(ION)
    (tmp_path / "bad.in").write_text("read mol pqr ion.pqr end\n" + BLOCK.replace("pdie 1", "pdie one"))
    with pytest.raises(espgrid.InputError) as caught:
        espgrid.apbs.run("bad.in", directory=tmp_path)
    assert caught.value.line == 4
    assert caught.value.file.endswith("bad.in")
    assert "'one' is not a number" in str(caught.value)
    assert sorted(os.listdir(tmp_path)) == ["bad.in", "ion.pqr"]
    # A keyword of APBS's that espgrid does not build (forces): refused at its line, nothing written.
    forces = BLOCK.replace("  write", "  calcforce total\n  write")
    (tmp_path / "forces.in").write_text("read mol pqr ion.pqr end\n" + forces)
    with pytest.raises(espgrid.InputError) as caught:
        espgrid.apbs.run("forces.in", directory=tmp_path)
    assert caught.value.line == 5
    assert "keyword calcforce is not supported (calcforce total: espgrid computes no forces" in str(caught.value)
    assert sorted(os.listdir(tmp_path)) == ["bad.in", "forces.in", "ion.pqr"]
    with pytest.raises(espgrid.UsageError):
        espgrid.apbs.run("bad.in", directory=tmp_path, backend="gpu")


def test_example_inputs_read_relative_to_the_working_directory(tmp_path):
    # APBS reads `mol pqr ion.pqr` from where it runs, not from the input's folder.
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "ion.pqr").write_text(ION)
    (tmp_path / "sub" / "in.in").write_text("read mol pqr ion.pqr end\n" + BLOCK)
    with pytest.raises(espgrid.InputError) as caught:
        espgrid.apbs.run("sub/in.in", directory=tmp_path)
    assert "cannot open the molecule" in str(caught.value) and caught.value.line == 1
    assert os.path.isdir(ROOT)
