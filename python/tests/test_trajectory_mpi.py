"""Frames shared out over MPI ranks: `mpirun -np N espgrid-trajectory ...` gives the
same files, bit for bit, for N = 1, 2 and 4 as one plain process (exact frame sums, energies put
back in frame order), reports progress once, from rank 0, and stops every rank with one message
when one rank fails.

The ranks run oversubscribed with one OpenMP thread each, so a 2-core machine runs 4 of them.
Skipped without mpirun or mpi4py (Debian: openmpi-bin, python3-mpi4py).
"""

import hashlib
import os
import shutil
import subprocess
import sys

import pytest

import espgrid
from conftest import ROOT

pytest.importorskip("MDAnalysis")
pytest.importorskip("mpi4py")
MPIRUN = shutil.which("mpirun")
if MPIRUN is None:
    pytest.skip("mpirun is not installed (Debian: openmpi-bin)", allow_module_level=True)

DATA = os.path.join(ROOT, "tests", "data", "mdanalysis")
WAT_PSF, WAT_DCD = os.path.join(DATA, "watdyn.psf"), os.path.join(DATA, "watdyn.dcd")
ADK_PSF, ADK_DCD = os.path.join(DATA, "adk.psf.gz"), os.path.join(DATA, "adk_dims_head.dcd")


def environment(extra=None):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(espgrid.__file__)),
                                           os.environ.get("PYTHONPATH", "")]))
    env.update(extra or {})
    return env


def trajectory(ranks, args, cwd, extra=None):
    """espgrid-trajectory ARGS on `ranks` MPI ranks (0: a plain process, no mpirun)."""
    command = [sys.executable, "-m", "espgrid", *args]
    if ranks:
        command = [MPIRUN, "-np", str(ranks), "--oversubscribe"] + command
    return subprocess.run(command, cwd=cwd, env=environment(extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=600)


def digest(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


@pytest.mark.parametrize("topology,dcd,extra", [
    (WAT_PSF, WAT_DCD, ["--no-unwrap", "--spacing", "0.7"]),  # 10 frames: blocks of 2 and 3 on 4 ranks
    (ADK_PSF, ADK_DCD, ["--spacing", "2.5", "--model", "debye", "--ionic-strength", "0.1"]),  # 3 frames: an idle rank
])
def test_one_two_and_four_ranks_write_the_same_bits(tmp_path, topology, dcd, extra):
    files = {}
    for ranks in (0, 1, 2, 4):
        folder = tmp_path / f"np{ranks}"
        folder.mkdir()
        r = trajectory(ranks, [topology, dcd, "-o", "mean.dx", "--std-output", "std.dx", "--energy-output", "e.csv",
                               "--no-progress", *extra], folder)
        assert r.returncode == 0, (ranks, r.stderr)
        files[ranks] = {name: digest(folder / name) for name in ("mean.dx", "std.dx", "e.csv")}
        if ranks > 1:
            assert f"on {ranks} MPI ranks" in r.stdout
            assert r.stdout.count("wrote      mean.dx") == 1  # rank 0 alone reports and writes
    # Exact integer frame sums and frames put back in order: bit for bit, not within a tolerance.
    assert files[1] == files[0] and files[2] == files[0] and files[4] == files[0], files


def test_progress_is_reported_once_from_rank_0(tmp_path):
    r = trajectory(2, [WAT_PSF, WAT_DCD, "-o", "mean.dx", "--no-unwrap", "--spacing", "1", "--progress"], tmp_path)
    assert r.returncode == 0, r.stderr
    # One bar (tqdm, or espgrid's plain lines without it) that counts both ranks' frames: a bar of
    # each rank's own 5 frames would show "5/5".
    assert "10/10" in r.stderr and "/5 " not in r.stderr and "5/5" not in r.stderr, r.stderr


def io_faults_library():
    for build in (os.environ.get("ESPGRID_BUILD_DIR"), os.path.join(ROOT, "build")):
        if build and os.path.exists(os.path.join(build, "tests", "libespgrid_io_faults.so")):
            return os.path.join(build, "tests", "libespgrid_io_faults.so")
    return None


def test_a_failure_on_one_rank_stops_every_rank_with_one_message(tmp_path):
    library = io_faults_library()
    if library is None:
        pytest.skip("build/tests/libespgrid_io_faults.so is not built")
    shutil.copyfile(WAT_DCD, tmp_path / "disk.dcd")
    frame = (48 + 8) + 3 * (4 * 15 + 8)
    header = os.path.getsize(WAT_DCD) - 10 * frame
    # MDAnalysis's reads fail from frame 9 on: only the last rank's block (frames 7-9) holds it.
    r = trajectory(4, [WAT_PSF, "disk.dcd", "-o", "mean.dx", "--no-unwrap", "--spacing", "1", "--no-progress"],
                   tmp_path, {"LD_PRELOAD": library, "ESPGRID_FAULT_READ_EIO": f"disk.dcd:{header + 9 * frame + 20}"})
    assert r.returncode == 1, r.stderr
    errors = [line for line in r.stderr.splitlines() if line.startswith("espgrid-trajectory: error:")]
    assert len(errors) == 1 and errors[0].startswith("espgrid-trajectory: error: rank 3: "), r.stderr
    assert "disk.dcd" in errors[0] and "frame 9" in errors[0], errors
    assert "Traceback" not in r.stderr and not (tmp_path / "mean.dx").exists()
