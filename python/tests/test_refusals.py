"""What the module and espgrid-trajectory refuse or accept that they got wrong before:
file names that are not UTF-8, complex arrays, a caller's NaN, PB short of memory, XYZ frames
whose atom count is not the topology's, --step 0, an output that is an input.

Each test failed on the code before its fix (docs/reliability.md, "Issue #35")."""

import os
import pathlib
import resource
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import espgrid
from conftest import ROOT

THREE_ATOMS = ("ATOM      1  N   ALA A   1       0.000   0.000   0.000  0.5000 1.8000\n"
               "ATOM      2  C   ALA A   1       1.500   0.000   0.000 -0.2000 1.7000\n"
               "ATOM      3  O   ALA A   1       3.000   1.000   0.000 -0.3000 1.5000\n")


def test_file_names_that_are_not_utf8_work_as_python_gives_them(tmp_path):
    # The name os.listdir gives for the bytes b"s\xfe.pqr" (surrogate escapes), those bytes, a Path.
    raw = bytes(tmp_path) + b"/s\xfe.pqr"
    with open(raw, "w") as f:
        f.write(THREE_ATOMS)
    name = os.fsdecode(raw)
    assert name in [os.path.join(tmp_path, n) for n in os.listdir(tmp_path)]
    for given in (name, raw, pathlib.Path(name)):
        s = espgrid.read_structure(given)
        assert len(s) == 3 and s.path == name and os.path.exists(s.path)
    phi = espgrid.compute_map(name, spacing=1.0)
    # The map says where it came from (repr escapes the undecodable byte as Python's repr does).
    assert name in phi.source and repr(name)[1:-1] in repr(phi)
    assert phi.summary()["provenance"]["input"] == name
    written = [bytes(tmp_path) + b"/out\xfe.dx", os.fsdecode(bytes(tmp_path) + b"/out\xfd.mrc")]
    phi.write(*written)
    for path in written:  # .dx and .mrc both hold the float32 values exactly
        assert np.array_equal(espgrid.read_map(path).values, phi.values)
    # An error names the file as Python names it, and .file opens it.
    with open(bytes(tmp_path) + b"/bad\xfe.pqr", "w") as f:
        f.write("ATOM      1  N   ALA A   1       x.000   0.000   0.000  0.5000 1.8000\n")
    with pytest.raises(espgrid.InputError) as e:
        espgrid.read_structure(os.fsdecode(bytes(tmp_path) + b"/bad\xfe.pqr"))
    assert os.path.exists(e.value.file) and "bad\udcfe.pqr:1:" in str(e.value)


@pytest.mark.parametrize("what", ["positions", "charges", "radii", "points", "values"])
def test_complex_arrays_are_refused_not_cast(what):
    s = espgrid.read_structure(os.path.join(ROOT, "data", "fasciculin2.pqr"))
    positions, charges, radii = s.positions.copy(), s.charges.copy(), s.radii.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's ComplexWarning would mean a cast happened
        with pytest.raises(espgrid.UsageError, match=f"{what} hold complex numbers"):
            if what == "positions":
                espgrid.compute_map(positions + 1j, charges, spacing=2.0)
            elif what == "charges":
                espgrid.compute_map(positions, charges * (1 + 1j), spacing=2.0)
            elif what == "radii":
                espgrid.compute_map(positions, charges, radii=radii + 0.5j, spacing=2.0)
            elif what == "points":
                espgrid.potential_at(np.array([[0.0, 0.0, 40.0 + 1j]]), s)
            else:
                grid = espgrid.grid_around(s, spacing=2.0)
                espgrid.map_from_values(np.zeros(grid.dims, complex), grid)


def test_map_from_values_names_the_callers_value_at_its_index():
    grid = espgrid.Grid(origin=(0, 0, 0), dims=(4, 5, 6), spacing=(1, 1, 1))
    values = np.zeros((4, 5, 6))
    values[1, 2, 3] = np.nan
    with pytest.raises(espgrid.UsageError, match=r"values\[1, 2, 3\] is nan: a map holds finite potentials"):
        espgrid.map_from_values(values, grid)
    values[1, 2, 3] = 1e39
    with pytest.raises(espgrid.UsageError, match=r"values\[1, 2, 3\] is 1e\+39 \(beyond float32"):
        espgrid.map_from_values(values, grid)


@pytest.mark.parametrize("solver,room_mib", [("hypre", 200), ("multigrid", 30)])
def test_pb_short_of_memory_raises_and_the_interpreter_lives(solver, room_mib):
    """hypre's allocation failed and called MPI_Abort, which took the interpreter down. Both CPU
    solvers: 290,700 points need ~90 MiB with hypre beside Open MPI's start (~160 MiB), ~63 MiB
    with espgrid's multigrid; each is given less room than that."""
    script = textwrap.dedent(f"""
        import os, resource, sys
        import espgrid
        s = espgrid.read_structure({os.path.join(ROOT, "data", "fasciculin2.pqr")!r})
        vm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmSize:")) * 1024
        resource.setrlimit(resource.RLIMIT_AS, (vm + {room_mib} * 2**20, resource.RLIM_INFINITY))
        try:
            espgrid.compute_map(s, model="pb", spacing=0.8, backend="cpu", pb_solver={solver!r})
            print("solved")
        except (espgrid.UsageError, espgrid.Error, MemoryError) as e:
            print("raised:", type(e).__name__, e)
        print("alive")
        """)
    r = subprocess.run([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=300)
    if "without hypre" in r.stdout:
        pytest.skip("no hypre in this build")
    assert r.returncode == 0 and "alive" in r.stdout, (r.returncode, r.stdout, r.stderr)
    assert "raised: UsageError --model pb on a grid of 75 x 57 x 68" in r.stdout, r.stdout
    assert "MPI_ABORT" not in r.stderr


# ---- espgrid-trajectory ----------------------------------------------------------------------------

mda = pytest.importorskip("MDAnalysis")


def run_trajectory(args, cwd):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(espgrid.__file__)),
                                                       os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, os.path.join(ROOT, "python", "scripts", "espgrid-trajectory"), *args],
                          cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def xyz_frame(atoms, shift):
    return f"{atoms}\nframe\n" + "".join(f"X {1.5 * i + shift:.3f} 0.000 0.000\n" for i in range(atoms))


@pytest.mark.parametrize("counts, frame, line", [((3, 3, 4), 2, 11), ((3, 4, 3), 1, 6), ((3, 2, 3), 1, 6)])
def test_an_xyz_frame_whose_atom_count_is_not_the_topologys_is_named(tmp_path, counts, frame, line):
    """The last frame with one atom more was averaged with every position after the first frame's
    shifted onto the wrong atom (exit 0); a middle one said "the trajectory ended after 2 of 3"."""
    (tmp_path / "top.pqr").write_text(THREE_ATOMS)
    (tmp_path / "t.xyz").write_text("".join(xyz_frame(n, 0.1 * f) for f, n in enumerate(counts)))
    r = run_trajectory(["top.pqr", "t.xyz", "-o", "mean.dx", "--no-progress"], tmp_path)
    assert r.returncode == 1, r.stderr
    assert (f"espgrid-trajectory: error: t.xyz:{line}: frame {frame} holds {counts[frame]} atoms where the "
            f"topology has 3 atoms") in r.stderr
    assert not (tmp_path / "mean.dx").exists()
    # The same frames with the right counts (and blank lines at the end) average.
    (tmp_path / "t.xyz").write_text("".join(xyz_frame(3, 0.1 * f) for f in range(3)) + "\n\n")
    r = run_trajectory(["top.pqr", "t.xyz", "-o", "mean.dx", "--no-progress"], tmp_path)
    assert r.returncode == 0 and "frames     3" in r.stdout, r.stderr


def test_step_0_is_a_usage_error(tmp_path):
    (tmp_path / "top.pqr").write_text(THREE_ATOMS)
    (tmp_path / "t.xyz").write_text(xyz_frame(3, 0) + xyz_frame(3, 0.1))
    r = run_trajectory(["top.pqr", "t.xyz", "-o", "mean.dx", "--step", "0"], tmp_path)
    assert r.returncode == 2 and "step=0" in r.stderr, (r.returncode, r.stderr)
    with pytest.raises(espgrid.UsageError, match="step=0"):
        espgrid.average_map(str(tmp_path / "top.pqr"), str(tmp_path / "t.xyz"), step=0, progress=False)


@pytest.mark.parametrize("kind", ["symlink to the topology", "symlink to the trajectory", "hard link to the topology"])
def test_an_output_that_is_an_input_is_refused(tmp_path, kind):
    (tmp_path / "top.pqr").write_text(THREE_ATOMS)
    (tmp_path / "t.xyz").write_text(xyz_frame(3, 0) + xyz_frame(3, 0.1))
    target = tmp_path / ("t.xyz" if "trajectory" in kind else "top.pqr")
    before = target.read_bytes()
    (os.symlink if kind.startswith("symlink") else os.link)(target, tmp_path / "l.dx")
    r = run_trajectory(["top.pqr", "t.xyz", "-o", "l.dx", "--no-progress"], tmp_path)
    assert r.returncode == 2 and "is the input file" in r.stderr, (r.returncode, r.stderr)
    assert target.read_bytes() == before
