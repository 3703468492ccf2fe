"""Poisson–Boltzmann maps over trajectory frames and where their radii come from.

MDAnalysis' adk.psf carries charges but no radii (tests/data/mdanalysis). The radii come from
PDB2PQR's AMBER table by default (espgrid/radii.py), from a PQR of the same atoms, from the
PARSE table or Bondi's by element; the mean and deviation of the PB maps are checked against the
PB maps of the frames computed one by one with espgrid.compute_map and the same radii.
"""

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import espgrid
from conftest import ROOT

mda = pytest.importorskip("MDAnalysis")
from espgrid import radii as radii_module  # noqa: E402

warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", category=UserWarning)

DATA = os.path.join(ROOT, "tests", "data", "mdanalysis")
ADK_PSF = os.path.join(DATA, "adk.psf.gz")
ADK_DCD = os.path.join(DATA, "adk_dims_head.dcd")
ADK_PQR = os.path.join(DATA, "adk_open.pqr.gz")


def universe(*files):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mda.Universe(*files)


def hypre_or_skip():
    """Skips where no PB solver runs (a build without hypre on a machine without a GPU)."""
    try:
        espgrid.compute_map(np.zeros((1, 3)), [1.0], radii=[1.5], model="pb", spacing=1.0)
    except espgrid.Error as e:
        if "no solver" in str(e) or "hypre" in str(e):
            pytest.skip(f"no PB solver here: {e}")
        raise


def test_the_mean_and_deviation_of_pb_maps_equal_the_frames_maps():
    hypre_or_skip()
    result = espgrid.average_map(ADK_PSF, ADK_DCD, model="pb", std=True, spacing=2.0, progress=False)
    assert result.radii.startswith("AMBER table (pdb2pqr ") and "for 3,341 atoms" in result.radii
    assert "Bondi" not in result.radii  # every adk atom is in the AMBER table under its CHARMM name
    u = universe(ADK_PSF, ADK_DCD)
    radii = radii_module.assign_radii(u.atoms).radii
    charges = np.asarray(u.atoms.charges, np.float64)
    stack = np.stack([np.asarray(espgrid.compute_map(ts.positions.astype(np.float64), charges, radii=radii,
                                                     model="pb", grid=result.mean.grid).values, np.float64)
                      for ts in u.trajectory])
    # Both sides solve the same systems; the exact frame sums round once to float32, numpy's double
    # mean may round to the neighbouring float: one float32 step.
    np.testing.assert_allclose(result.mean.values, stack.mean(axis=0), rtol=2.0 ** -23, atol=0)
    # The deviation from n·Σp² − (Σp)² against numpy's two-pass std: a float32 step, or 1e-6 of the
    # potential's scale where the spread is tiny beside the potential.
    np.testing.assert_allclose(result.std.values, stack.std(axis=0), rtol=2.0 ** -22,
                               atol=1e-6 * np.abs(stack).max())
    assert np.abs(stack[1] - stack[0]).max() > 1.0  # the frames differ
    assert "hypre" in result.solve or "multigrid" in result.solve
    assert "radii: AMBER table" in result.mean.source


def test_pb_frames_in_flight_follow_the_devices_free_memory(monkeypatch):
    """PB frames get PB_FRAMES_IN_FLIGHT_PER_GPU accumulators a GPU as far as half the device's free
    memory holds them at PB_DEVICE_BYTES_PER_POINT a point, at least one; the pair models keep
    FRAMES_IN_FLIGHT_PER_GPU. The device's memory is stood in for (no GPU needed)."""
    from espgrid import frames
    grid = espgrid.grid_around(np.array([[0.0, 0.0, 0.0], [20.0, 15.0, 10.0]]), spacing=1.0)
    job = espgrid.map_options(**espgrid._with_grid(grid, {"model": "pb", "device": 1}))
    points = int(np.prod([int(d) for d in grid.dims]))
    one = 2 * frames.PB_DEVICE_BYTES_PER_POINT * points  # the free memory one accumulator needs
    asked = []
    for free, expected in ((100 * one, frames.PB_FRAMES_IN_FLIGHT_PER_GPU), (3 * one + one // 2, 3), (one, 1),
                           (one - 1, 1), (0, 1)):
        monkeypatch.setattr(frames._espgrid, "device_memory", lambda d, free=free: (asked.append(d), (free, 2 * free))[1])
        assert frames.frames_in_flight(job) == expected, free
    assert asked == [1] * 5  # the job's own device
    pair_job = espgrid.map_options(**espgrid._with_grid(grid, {"model": "coulomb", "device": 1}))
    assert frames.frames_in_flight(pair_job) == frames.FRAMES_IN_FLIGHT_PER_GPU == 2
    assert len(asked) == 5  # the pair models do not ask


def test_radius_sources():
    u = universe(ADK_PSF)
    amber = radii_module.assign_radii(u.atoms)
    assert amber.source == "amber" and len(amber.radii) == 3341
    # MET 1's backbone N and its CHARMM terminal hydrogens HT1-3 under PDB2PQR's NMET names.
    assert list(amber.radii[:4]) == [1.824, 0.6, 0.6, 0.6]
    parse = radii_module.assign_radii(u.atoms, "parse")
    assert parse.description.endswith("Bondi by element for 4 (MET HT1, MET HT2, MET HT3, GLY OT2)")
    assert list(parse.radii[1:4]) == [1.2, 1.2, 1.2]  # Bondi's H
    bondi = radii_module.assign_radii(u.atoms, "bondi")
    assert set(np.unique(bondi.radii)) == {1.2, 1.52, 1.55, 1.7, 1.8}
    # A PQR of the same atoms made by PDB2PQR: renamed and reordered within residues, matched by name.
    pqr = radii_module.assign_radii(u.atoms, ADK_PQR)
    assert pqr.description == "adk_open.pqr.gz's radius column (matched by residue and atom name)"
    theirs = np.asarray(universe(ADK_PQR).atoms.radii, np.float64)
    assert sorted(pqr.radii) == sorted(theirs)  # every PQR atom used once
    assert pqr.radii[0] == theirs[0]  # MET N, first in both
    # A selection takes its atoms' radii.
    part = u.select_atoms("resid 10:20")
    assert np.array_equal(radii_module.assign_radii(part, ADK_PQR).radii, pqr.radii[part.ix])
    # The PQR as the topology: its own radii.
    own = radii_module.assign_radii(universe(ADK_PQR).atoms)
    assert own.source == "topology" and np.array_equal(own.radii, theirs)
    given = radii_module.assign_radii(part, np.full(len(part), 1.5))
    assert given.source == "given"


def test_radius_errors(tmp_path):
    u = universe(ADK_PSF)
    with pytest.raises(espgrid.UsageError, match="carries no radii"):
        radii_module.assign_radii(u.atoms, "topology")
    with pytest.raises(espgrid.UsageError, match="neither 'topology', 'amber', 'parse', 'bondi' nor an existing"):
        radii_module.assign_radii(u.atoms, "charmm")
    with pytest.raises(espgrid.UsageError, match="radii hold 3 values for 3341 selected atoms"):
        radii_module.assign_radii(u.atoms, [1.0, 2.0, 3.0])
    small = os.path.join(ROOT, "tests", "data", "pqr_whitespace.pqr")
    with pytest.raises(espgrid.UsageError, match="pqr_whitespace.pqr holds 38 atoms, but the topology has 3341"):
        radii_module.assign_radii(u.atoms, small)
    # An atom whose element no table or Bondi knows: an error naming it, never a guess.
    weird = tmp_path / "weird.pqr"
    weird.write_text("ATOM      1  XX  UNK     1       0.000   0.000   0.000  1.0000 1.5000\n")
    with pytest.raises(espgrid.UsageError, match=r"atom 0 \(XX UNK 1\) is not in the AMBER table, and its element"):
        radii_module.assign_radii(universe(str(weird)).atoms, "amber")
    with pytest.raises(espgrid.UsageError, match="radii are for model='pb'"):
        espgrid.average_map(ADK_PSF, ADK_DCD, radii="amber", spacing=3.0, progress=False)


def test_prmtop_radii_section(tmp_path):
    path = tmp_path / "mini.prmtop"
    path.write_text("%VERSION  VERSION_STAMP = V0001.000\n%FLAG TITLE\n%FORMAT(20a4)\nmini\n"
                    "%FLAG RADIUS_SET\n%FORMAT(1a80)\nmodified Bondi radii (mbondi2)\n"
                    "%FLAG RADII\n%FORMAT(5E16.8)\n"
                    "  1.55000000E+00  1.30000000E+00  1.70000000E+00  1.30000000E+00  1.50000000E+00\n"
                    "  1.80000000E+00\n%FLAG SCREEN\n%FORMAT(5E16.8)\n  7.90000000E-01\n")
    radii, radius_set = radii_module.prmtop_radii(str(path))
    assert list(radii) == [1.55, 1.3, 1.7, 1.3, 1.5, 1.8]
    assert radius_set == "modified Bondi radii (mbondi2)"


def test_the_committed_table_is_what_the_script_makes_from_pdb2pqr():
    pytest.importorskip("pdb2pqr")
    sys.path.insert(0, os.path.join(ROOT, "python", "scripts"))
    try:
        import make_radius_tables
    finally:
        sys.path.pop(0)
    with open(os.path.join(ROOT, "python", "espgrid", "radius_tables.py")) as f:
        assert f.read() == make_radius_tables.generate()


def test_the_command_line_says_where_the_radii_came_from(tmp_path):
    hypre_or_skip()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(espgrid.__file__)),
                                                       os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-m", "espgrid", ADK_PSF, ADK_DCD, "-o", "pb.dx", "--model", "pb", "--spacing",
                        "3", "--radii", ADK_PQR, "--stop", "2", "--no-progress"], cwd=tmp_path, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert r.returncode == 0, r.stderr
    assert "radii      adk_open.pqr.gz's radius column (matched by residue and atom name)" in r.stdout
    assert "solve      linearized PB" in r.stdout
    header = open(tmp_path / "pb.dx").read(4000)
    assert "radii: adk_open.pqr.gz" in header
