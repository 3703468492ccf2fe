"""Trajectory-averaged maps (espgrid.average_map, espgrid-trajectory, python3 -m espgrid).

The test writes its own trajectory with MDAnalysis: 10 frames of fasciculin-2 (data/), each
rigidly moved by a known rotation and translation. The reference is the per-frame maps
computed from those known positions with espgrid.compute_map, averaged in numpy.
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
warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", category=UserWarning, module="MDAnalysis")

TOPOLOGY = os.path.join(ROOT, "data", "fasciculin2.pqr")
FRAMES = 10


def rotation(angle_deg, axis):
    a = np.radians(angle_deg)
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(a) * k + (1 - np.cos(a)) * k @ k


def known_frames(base):
    """Frame f: the molecule turned by 4°·f about a tilted axis through its centre, then moved
    by (0.7, −0.4, 0.3)·f Å; stored as float32, as DCD stores them."""
    centre = base.mean(axis=0)
    return [((base - centre) @ rotation(4.0 * f, (1, 2, 3)).T + centre + np.array([0.7, -0.4, 0.3]) * f)
            .astype(np.float32) for f in range(FRAMES)]


@pytest.fixture(scope="module")
def trajectory(tmp_path_factory):
    folder = tmp_path_factory.mktemp("trajectory")
    universe = mda.Universe(TOPOLOGY)
    frames = known_frames(universe.atoms.positions.astype(np.float64))
    path = str(folder / "fas2.dcd")
    with mda.Writer(path, len(universe.atoms)) as writer:
        for xyz in frames:
            universe.atoms.positions = xyz
            writer.write(universe.atoms)
    # MDAnalysis's PQR charges, as average_map takes them (it reads them as float32).
    return path, frames, np.asarray(universe.atoms.charges, np.float64)


def reference_stack(frames, charges, grid, **options):
    return np.stack([np.asarray(espgrid.compute_map(xyz.astype(np.float64), charges, grid=grid, **options).values,
                                np.float64) for xyz in frames])


def assert_mean_and_std(result, stack):
    # Both sides sum in double: Welford's running update here, numpy's pairwise sums in the
    # reference. Their difference (~1e-15 relative) shows only where rounding to float32 falls
    # on a boundary, so one float32 step (2^-23 relative) of the value is the tolerance.
    mean = stack.mean(axis=0)
    np.testing.assert_allclose(result.mean.values, mean, rtol=2.0 ** -23, atol=0)
    if result.std is not None:
        # Population form (ddof=0). Where the spread is tiny next to the potential, the
        # double sums' rounding (~1e-16·φ²) enters √ as a small absolute term: 1e-7 of φ's scale.
        std = stack.std(axis=0)
        np.testing.assert_allclose(result.std.values, std, rtol=2.0 ** -22, atol=1e-7 * np.abs(stack).max())


def test_mean_and_std_equal_the_per_frame_maps(trajectory):
    path, frames, charges = trajectory
    result = espgrid.average_map(TOPOLOGY, path, std=True, spacing=1.5, padding=6, progress=False)
    assert result.frames == list(range(FRAMES)) and result.atoms == 906
    stack = reference_stack(frames, charges, result.mean.grid)
    assert_mean_and_std(result, stack)
    # The frames do differ (a reader returning frame 0 ten times would give std 0).
    assert np.asarray(result.std.values).max() > 1.0
    assert result.mean.units == "kT/e" and result.mean.source.startswith("mean over 10 frames of ")
    assert result.std.source.startswith("standard deviation over 10 frames of ")


def test_the_grid_covers_every_frame(trajectory):
    path, frames, _ = trajectory
    result = espgrid.average_map(TOPOLOGY, path, spacing=1.5, padding=6, progress=False)
    # The bounding box over all frames plus padding, placed as `espgrid map` places it.
    assert result.mean.grid == espgrid.grid_around(np.vstack(frames).astype(np.float64), spacing=1.5, padding=6)
    first_only = espgrid.grid_around(frames[0].astype(np.float64), spacing=1.5, padding=6)
    assert result.mean.grid != first_only  # the molecule moves ~9 Å over the frames


def test_selection_frames_and_options(trajectory):
    path, frames, charges = trajectory
    universe = mda.Universe(TOPOLOGY, path)
    picked = universe.select_atoms("resid 544:560").indices
    grid = espgrid.Grid(origin=(-35.0, -30.0, -5.0), dims=(40, 36, 44), spacing=(1.6, 1.7, 1.8))
    result = espgrid.average_map(TOPOLOGY, path, select="resid 544:560", start=1, step=3, std=True, grid=grid,
                                 units="kcal/mol/e", dielectric=2, kernel="cpu-reference", progress=False)
    assert result.frames == [1, 4, 7] and result.atoms == len(picked) and result.kernel == "cpu-reference"
    assert result.mean.units == "kcal/mol/e" and result.mean.dielectric == 2 and result.mean.grid == grid
    stack = reference_stack([frames[f][picked] for f in (1, 4, 7)], charges[picked], grid, units="kcal/mol/e",
                            dielectric=2, kernel="cpu-reference")
    assert_mean_and_std(result, stack)


def test_a_universe_and_a_progress_callback(trajectory):
    path, frames, charges = trajectory
    seen = []
    result = espgrid.average_map(mda.Universe(TOPOLOGY, path), stop=4, spacing=2.0,
                                 progress=lambda done, total: seen.append((done, total)))
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert_mean_and_std(result, reference_stack(frames[:4], charges, result.mean.grid))


def test_errors(trajectory, tmp_path):
    path, _, _ = trajectory
    with pytest.raises(espgrid.UsageError, match="matches no atoms"):
        espgrid.average_map(TOPOLOGY, path, select="resname XYZ", progress=False)
    with pytest.raises(espgrid.UsageError, match="no frames"):
        espgrid.average_map(TOPOLOGY, path, start=20, progress=False)
    # An XYZ topology carries no charges for MDAnalysis.
    xyz = tmp_path / "no_charges.xyz"
    xyz.write_text("2\ncomment\nC 0 0 0\nO 1.2 0 0\n")
    with pytest.raises(espgrid.UsageError, match="no charges"):
        espgrid.average_map(str(xyz), progress=False)
    with pytest.raises(espgrid.UsageError, match="spacing"):
        espgrid.average_map(TOPOLOGY, path, spacing=-1, progress=False)


def run_script(args, cwd):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(espgrid.__file__)),
                                                       os.environ.get("PYTHONPATH", "")]))
    return subprocess.run(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("launcher", ["module", "script"])
def test_command_line(trajectory, tmp_path, launcher):
    path, frames, charges = trajectory
    command = ([sys.executable, "-m", "espgrid"] if launcher == "module"
               else [sys.executable, os.path.join(ROOT, "python", "scripts", "espgrid-trajectory")])
    r = run_script(command + [TOPOLOGY, path, "-o", "mean.dx", "--std-output", "std.dx", "--spacing", "1.5",
                              "--padding", "6", "--step", "2", "--units", "V", "--no-progress"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "frames     5" in r.stdout and "wrote      mean.dx" in r.stdout and "wrote      std.dx" in r.stdout
    mean, std = espgrid.read_map(tmp_path / "mean.dx"), espgrid.read_map(tmp_path / "std.dx")
    assert mean.units == "V"
    expected = espgrid.average_map(TOPOLOGY, path, step=2, std=True, spacing=1.5, padding=6, units="V",
                                   progress=False)
    assert mean.grid == expected.mean.grid
    assert np.array_equal(mean.values, expected.mean.values) and np.array_equal(std.values, expected.std.values)


def test_command_line_errors_write_nothing(trajectory, tmp_path):
    path, _, _ = trajectory
    r = run_script([sys.executable, "-m", "espgrid", TOPOLOGY, path, "-o", "mean.dx", "--select", "resname XYZ"],
                   cwd=tmp_path)
    assert r.returncode == 2 and "matches no atoms" in r.stderr
    r = run_script([sys.executable, "-m", "espgrid", TOPOLOGY, path, "-o", "mean.tiff"], cwd=tmp_path)
    assert r.returncode == 2 and "tiff" in r.stderr
    r = run_script([sys.executable, "-m", "espgrid", TOPOLOGY, path, "-o", "mean.dx", "--kernel", "nope"],
                   cwd=tmp_path)
    assert r.returncode == 2 and "nope" in r.stderr
    assert os.listdir(tmp_path) == []
