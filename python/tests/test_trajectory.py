"""Trajectory-averaged maps (espgrid.average_map, espgrid-trajectory, python3 -m espgrid).

The test writes its own trajectory with MDAnalysis: 10 frames of fasciculin-2 (data/), each
rigidly moved by a known rotation and translation. The reference is the per-frame maps
computed from those known positions with espgrid.compute_map, averaged in numpy.
"""

import os
import re
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


def run_script(args, cwd, env=None):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(espgrid.__file__)),
                                                       os.environ.get("PYTHONPATH", "")]), **(env or {}))
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


# ---- bad trajectories: errors that name the file, no tracebacks, espgrid's exit codes ----

def dcd_frame_bytes(atoms):
    """Bytes of one frame as MDAnalysis writes a DCD: a unit-cell record (6 doubles) and three
    coordinate records, each with its two 4-byte length markers."""
    return (48 + 8) + 3 * (4 * atoms + 8)


def test_a_truncated_dcd_is_an_error_not_a_shorter_average(trajectory, tmp_path):
    path, _, _ = trajectory
    data = open(path, "rb").read()
    frame = dcd_frame_bytes(906)
    header = len(data) - FRAMES * frame
    assert 0 < header < 1000  # the layout dcd_frame_bytes assumes
    # Cut to 55%: MDAnalysis counts frames from the size and averaged the 5 left, exit 0.
    cut = tmp_path / "cut.dcd"
    cut.write_bytes(data[:int(0.55 * len(data))])
    with pytest.raises(espgrid.InputError, match=r"cut.dcd: the file ends part-way through frame 6 \(after 5 "
                                                 r"complete frames of the 10 its header announces\)") as e:
        espgrid.average_map(TOPOLOGY, str(cut), spacing=2.0, progress=False)
    assert e.value.file == str(cut)
    # A Universe the caller opened is checked too.
    with pytest.raises(espgrid.InputError, match="cut.dcd: the file ends part-way through frame 6"):
        espgrid.average_map(mda.Universe(TOPOLOGY, str(cut)), spacing=2.0, progress=False)
    # Cut at a frame boundary: whole frames, fewer than the header's 10, are read as VMD and
    # MDAnalysis read them (writers leave the header's count stale), with a note.
    whole = tmp_path / "whole.dcd"
    whole.write_bytes(data[:header + 4 * frame])
    with pytest.warns(TrajectoryNote, match="its header announces 10 frames .NSET., but the file holds 4 whole"):
        result = espgrid.average_map(TOPOLOGY, str(whole), spacing=2.0, progress=False)
    assert result.frames == [0, 1, 2, 3]
    # A damaged record marker in the middle.
    damaged = bytearray(data)
    damaged[header + 3 * frame] ^= 0x40
    (tmp_path / "damaged.dcd").write_bytes(bytes(damaged))
    with pytest.raises(espgrid.InputError, match="damaged"):
        espgrid.average_map(TOPOLOGY, str(tmp_path / "damaged.dcd"), spacing=2.0, progress=False)


def test_a_bad_selection_is_a_usage_error():
    with pytest.raises(espgrid.UsageError, match=r"selection 'resname \(' is not one MDAnalysis understands"):
        espgrid.average_map(TOPOLOGY, select="resname (", progress=False)


def io_faults_library():
    for build in (os.environ.get("ESPGRID_BUILD_DIR"), os.path.join(ROOT, "build")):
        if build and os.path.exists(os.path.join(build, "tests", "libespgrid_io_faults.so")):
            return os.path.join(build, "tests", "libespgrid_io_faults.so")
    return None


def bad_trajectories(path, tmp_path):
    """name -> (file, what stderr must say): the trajectories of the issue's probe."""
    data = open(path, "rb").read()
    header = len(data) - FRAMES * dcd_frame_bytes(906)
    files = {"empty.dcd": b"", "random.dcd": np.random.default_rng(5).bytes(50_000),
             "header-only.dcd": data[:header], "cut.dcd": data[:int(0.55 * len(data))]}
    for name, content in files.items():
        (tmp_path / name).write_bytes(content)
    small = mda.Universe(os.path.join(ROOT, "tests", "data", "pqr_whitespace.pqr"))
    with mda.Writer(str(tmp_path / "other-atoms.dcd"), len(small.atoms)) as w:
        w.write(small.atoms)
    return {
        "empty.dcd": "empty.dcd: the file is empty",
        "random.dcd": "random.dcd: this is not a DCD trajectory",
        "header-only.dcd": "header-only.dcd: the file holds a header but no frames (its header announces 10)",
        "cut.dcd": "cut.dcd: the file ends part-way through frame 6",
        "other-atoms.dcd": "other-atoms.dcd: MDAnalysis cannot read this trajectory with",
        "missing.dcd": "cannot open missing.dcd: No such file or directory",
    }


def test_command_line_bad_trajectories_name_the_file_without_traceback(trajectory, tmp_path):
    path, _, _ = trajectory
    for name, message in bad_trajectories(path, tmp_path).items():
        r = run_script([sys.executable, "-m", "espgrid", TOPOLOGY, name, "-o", "mean.dx", "--spacing", "2",
                        "--no-progress"], cwd=tmp_path)
        assert r.returncode == 1, (name, r.stderr)
        assert r.stderr == f"espgrid-trajectory: error: {r.stderr.split(': error: ', 1)[1]}", r.stderr
        assert message in r.stderr and "Traceback" not in r.stderr and r.stdout == "", (name, r.stderr)
        assert not (tmp_path / "mean.dx").exists()
    # A missing topology, a bad selection (exit 2, as documented), a directory as trajectory.
    r = run_script([sys.executable, "-m", "espgrid", "nope.psf", path, "-o", "mean.dx"], cwd=tmp_path)
    assert r.returncode == 1 and "cannot open nope.psf: No such file or directory" in r.stderr, r.stderr
    r = run_script([sys.executable, "-m", "espgrid", TOPOLOGY, path, "-o", "mean.dx", "--select", "resname ("],
                   cwd=tmp_path)
    assert r.returncode == 2 and "selection 'resname ('" in r.stderr and "Traceback" not in r.stderr, r.stderr
    r = run_script([sys.executable, "-m", "espgrid", TOPOLOGY, str(tmp_path), "-o", "mean.dx"], cwd=tmp_path)
    assert r.returncode == 1 and "Is a directory" in r.stderr and "Traceback" not in r.stderr, r.stderr
    # No MDAnalysis deprecation noise on a good run.
    r = run_script([sys.executable, "-m", "espgrid", TOPOLOGY, path, "-o", "mean.dx", "--spacing", "3", "--stop",
                    "1", "--no-progress"], cwd=tmp_path)
    assert r.returncode == 0 and r.stderr == "" and "for 1 frame " in r.stdout, r.stderr


@pytest.mark.parametrize("reader", ["check", "mdanalysis"])
def test_a_read_error_part_way_through_a_dcd_stops_the_average(trajectory, tmp_path, reader):
    """EIO from the 5th frame on (tests/fault/io_faults.cpp, LD_PRELOAD): an error, never the
    average of the frames before it. "check": espgrid's structure check (pread) meets it;
    "mdanalysis": only MDAnalysis's reads (read) fail, and MDAnalysis takes the error for the
    end of the trajectory: the frames before it averaged, exit 0, before the frame count was
    checked."""
    library = io_faults_library()
    if library is None:
        pytest.skip("build/tests/libespgrid_io_faults.so is not built")
    path, _, _ = trajectory
    data = open(path, "rb").read()
    frame = dcd_frame_bytes(906)
    header = len(data) - FRAMES * frame
    (tmp_path / "disk.dcd").write_bytes(data)
    variable = "ESPGRID_FAULT_PREAD_EIO" if reader == "check" else "ESPGRID_FAULT_READ_EIO"
    env = {"LD_PRELOAD": library, variable: f"disk.dcd:{header + 4 * frame + 100}"}
    r = run_script([sys.executable, "-m", "espgrid", TOPOLOGY, "disk.dcd", "-o", "mean.dx", "--spacing", "2",
                    "--no-progress"], cwd=tmp_path, env=env)
    # (MDAnalysis reads a frame in pieces; how many it takes before the failing one varies)
    message = ("cannot read disk.dcd: Input/output error" if reader == "check"
               else r"disk.dcd: the trajectory ended after [45] of the 10 frames selected")
    assert r.returncode == 1 and re.search(message, r.stderr), r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "mean.dx").exists()


def test_frames_dealt_over_several_accumulators_give_the_same_bits(trajectory):
    """devices=[...] deals frames round-robin to one accumulator per entry (here three on the CPU,
    where `device` is not used) whose exact sums are added at the end: the same bits as one."""
    path, _, _ = trajectory
    one = espgrid.average_map(TOPOLOGY, path, std=True, spacing=2.0, progress=False)
    three = espgrid.average_map(TOPOLOGY, path, std=True, spacing=2.0, progress=False, devices=[0, 0, 0])
    assert three.devices == [0, 0, 0] and three.frames == one.frames
    assert np.array_equal(three.mean.values, one.mean.values) and np.array_equal(three.std.values, one.std.values)
    ok, _ = espgrid.cuda_available()
    if not ok:
        with pytest.raises(espgrid.Error, match="devices='all'"):
            espgrid.average_map(TOPOLOGY, path, spacing=2.0, progress=False, devices="all")
