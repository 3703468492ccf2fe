"""The espgrid module against the espgrid program and against the physics.

Every map is compared either with the program's output for the same inputs (bit for bit: the
module calls the same library) or with an independent double-precision sum in numpy.
"""

import gzip
import json
import os
import pickle
import re
import shutil
import signal
import subprocess
import threading
import time

import numpy as np
import pytest

import espgrid
from conftest import ROOT, require_gpu

FAS2 = "data/fasciculin2.pqr"  # 906 atoms, +4.053 e
SMALL = "tests/data/pqr_whitespace.pqr"  # 38 atoms
COULOMB_KT = 560.459  # k in kT·Å/e² at 298.15 K (README: CODATA 2018), for the analytic checks


def read_pqr_columns(path):
    """x y z charge of every ATOM/HETATM line of a whitespace PQR: an independent reader."""
    rows = [line.split() for line in open(path) if line.startswith(("ATOM", "HETATM"))]
    values = np.array([[float(v) for v in r[-5:-1]] for r in rows])
    return values[:, :3], values[:, 3]


def cpu_rows():
    return [k["name"] for k in espgrid.kernels() if k["backend"] == "cpu"]


def cuda_rows():
    return [k["name"] for k in espgrid.kernels() if k["backend"] == "cuda"]


# ---- the module's own C++ runtime -----------------------------------------------------------------

def test_the_module_exports_only_its_init_function():
    # A module that exports its C++ runtime's symbols lets the dynamic linker merge them with the
    # interpreter's libstdc++ (numpy, PyTorch): with a statically linked libstdc++ of another
    # version that crashed `import espgrid` on the GPU host. python/src/exports.map
    # keeps everything but PyInit__espgrid local.
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("nm (binutils) is not installed")
    out = subprocess.run([nm, "-D", "--defined-only", espgrid._espgrid.__file__], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, check=True).stdout
    # nm's type letter: upper case a global symbol, which the dynamic linker can bind; lower case a
    # local one, which it cannot (GNU ld at times leaves LOCAL entries of inlined std::string members
    # in .dynsym after LTO with the version script: seen 2026-11-28, types 't').
    fields = [line.split() for line in out.splitlines() if line.strip()]
    exported = sorted(f[-1] for f in fields if f[-2].isupper())
    assert exported == ["PyInit__espgrid"], exported[:20]


# ---- the module's map equals the program's ------------------------------------------------------

@pytest.mark.parametrize("kernel", cpu_rows() + cuda_rows())
def test_map_file_equals_the_programs_byte_for_byte(kernel, cli, tmp_path):
    if kernel in cuda_rows():
        require_gpu()
    row = next(k for k in espgrid.kernels() if k["name"] == kernel)
    if row["reproducibility"] == "varies":
        pytest.skip(f"{kernel} adds with atomics in a varying order; test_atomics_kernel_within_rounding covers it")
    options = ["--spacing", "1.5", "--units", "kcal/mol/e", "--dielectric", "4", "--kernel", kernel]
    r = cli("map", FAS2, "-o", tmp_path / "cli.dx", *options)
    assert r.returncode == 0, r.stderr
    phi = espgrid.compute_map(FAS2, spacing=1.5, units="kcal/mol/e", dielectric=4, kernel=kernel)
    phi.write(tmp_path / "module.dx")
    # Same source line, physics line, grid and every value: the files are identical.
    assert (tmp_path / "cli.dx").read_bytes() == (tmp_path / "module.dx").read_bytes()
    assert phi.kernel == kernel


def test_poisson_boltzmann_map_equals_the_programs(cli, tmp_path):
    """--model pb from Python: the same keywords, the same file as the program's."""
    options = ["--spacing", "1.5", "--model", "pb", "--surface", "mol", "--ionic-strength", "0.1", "--backend", "cpu"]
    r = cli("map", FAS2, "-o", tmp_path / "cli.dx", *options)
    if r.returncode != 0 and "without hypre" in r.stderr:
        pytest.skip("this build has no CPU PB solver (hypre)")
    assert r.returncode == 0, r.stderr
    phi = espgrid.compute_map(FAS2, spacing=1.5, model="pb", surface="mol", ionic_strength=0.1, backend="cpu")
    phi.write(tmp_path / "module.dx")
    assert (tmp_path / "cli.dx").read_bytes() == (tmp_path / "module.dx").read_bytes()
    assert phi.model == "pb"
    assert espgrid.read_map(tmp_path / "module.dx").model == "pb"
    positions, charges = read_pqr_columns(FAS2)
    with pytest.raises(espgrid.UsageError, match="radii"):  # positions and charges alone draw no surface
        espgrid.compute_map(positions, charges, spacing=1.5, model="pb", backend="cpu")


def test_poisson_boltzmann_energies_equal_the_programs(cli, tmp_path):
    """APBS's energies from Python: Map.energy is the program's --json block; ion species
    as tuples; solvation_energy and binding_energy are the same solves on one grid."""
    options = ["--spacing", "1.5", "--model", "pb", "--ion", "2,0.05,2", "--ion", "-1,0.1,1.5", "--charge-method",
               "spl0", "--boundary", "sdh", "--pb-energy", "comps", "--backend", "cpu"]
    r = cli("map", FAS2, "-o", tmp_path / "cli.dx", "--json", tmp_path / "cli.json", *options)
    if r.returncode != 0 and "without hypre" in r.stderr:
        pytest.skip("this build has no CPU PB solver (hypre)")
    assert r.returncode == 0, r.stderr
    phi = espgrid.compute_map(FAS2, spacing=1.5, model="pb", ion=[(2, 0.05, 2), (-1, 0.1, 1.5)], charge_method="spl0",
                              boundary="sdh", pb_energy="comps", backend="cpu")
    assert phi.energy == json.loads((tmp_path / "cli.json").read_text())["energy"]
    assert len(phi.energy["per_atom_kJ_per_mol"]) == phi.provenance["atoms"]
    assert pickle.loads(pickle.dumps(phi)).energy == phi.energy  # comps: the terms and per-atom energies too
    assert espgrid.compute_map(FAS2, spacing=1.5, backend="cpu").energy is None  # a pair model has none here
    s = espgrid.solvation_energy(FAS2, spacing=1.5, backend="cpu")
    assert s["energy"] == pytest.approx(s["solvated"] - s["reference"], rel=1e-12)
    assert s["energy"] < 0  # a charged protein is stabilized by water
    b = espgrid.binding_energy(FAS2, [FAS2], spacing=1.5, backend="cpu")  # one part: the complex itself
    assert b["energy"] == pytest.approx(0, abs=1e-9 * abs(b["complex"]))


def test_vti_equals_the_programs(cli, tmp_path):
    r = cli("map", SMALL, "-o", tmp_path / "cli.vti", "--spacing", "0.7,0.8,0.9", "--padding", "3")
    if r.returncode != 0 and "VTK" in r.stderr:
        pytest.skip("this build writes no .vti (no VTK)")
    assert r.returncode == 0, r.stderr
    espgrid.compute_map(SMALL, spacing=(0.7, 0.8, 0.9), padding=3).write(tmp_path / "module.vti")
    assert (tmp_path / "cli.vti").read_bytes() == (tmp_path / "module.vti").read_bytes()


def test_arrays_give_the_programs_values(cli, tmp_path):
    positions, charges = read_pqr_columns(FAS2)
    r = cli("map", FAS2, "-o", tmp_path / "cli.dx", "--origin", "-30,-21,0.25", "--dims", "41,33,47",
            "--spacing", "1.25", "--temperature", "310", "--kernel", "cpu-reference")
    assert r.returncode == 0, r.stderr
    phi = espgrid.compute_map(positions, charges, origin=(-30, -21, 0.25), dims=(41, 33, 47), spacing=1.25,
                              temperature=310, kernel="cpu-reference")
    program = espgrid.read_map(tmp_path / "cli.dx")  # DX keeps 9 digits: float32 values read back exactly
    assert phi.grid == program.grid
    assert np.array_equal(phi.values, program.values)
    assert phi.values.dtype == np.float32


def test_explicit_grid_object_equals_origin_and_dims():
    grid = espgrid.Grid(origin=(-30.0, -21.0, 0.25), dims=(21, 17, 24), spacing=(2.0, 2.5, 1.5))
    a = espgrid.compute_map(FAS2, grid=grid)
    b = espgrid.compute_map(FAS2, origin=grid.origin, dims=grid.dims, spacing=grid.spacing)
    assert a.grid == grid and np.array_equal(a.values, b.values)
    with pytest.raises(TypeError, match="not both"):
        espgrid.compute_map(FAS2, grid=grid, spacing=1.0)


def test_grid_around_is_the_programs_grid(cli, tmp_path):
    r = cli("map", FAS2, "-o", tmp_path / "cli.dx", "--spacing", "0.9", "--padding", "4.5")
    assert r.returncode == 0, r.stderr
    program = espgrid.read_map(tmp_path / "cli.dx")
    assert espgrid.grid_around(FAS2, spacing=0.9, padding=4.5) == program.grid
    positions, _ = read_pqr_columns(FAS2)
    assert espgrid.grid_around(positions, spacing=0.9, padding=4.5) == program.grid


# ---- the map's values and attributes ---------------------------------------------------------------

def test_values_axis_order_and_units_against_coulombs_law():
    # One charge off-centre on a grid with different sizes along x, y, z: values[i, j, k] must
    # be k·q/r at origin + (i·hx, j·hy, k·hz). A transposed view would put r wrong everywhere.
    atom = np.array([[1.3, -0.7, 2.1]])
    grid = espgrid.Grid(origin=(-4.0, -3.0, -2.0), dims=(13, 9, 7), spacing=(0.75, 0.8, 1.1))
    phi = espgrid.compute_map(atom, [0.5], grid=grid)
    x, y, z = (grid.coordinates(a) for a in range(3))
    r = np.sqrt((x[:, None, None] - 1.3) ** 2 + (y[None, :, None] + 0.7) ** 2 + (z[None, None, :] - 2.1) ** 2)
    expected = COULOMB_KT * 0.5 / r
    assert phi.values.shape == (13, 9, 7)
    # float32 positions relative to the origin and a float32 sum: well inside 1e-5 relative
    # (the program's oracle bound for one atom is a few float32 roundings, ~1e-6).
    np.testing.assert_allclose(phi.values, expected, rtol=1e-5)
    assert phi.units == "kT/e" and phi.model == "coulomb" and phi.dielectric == 1 and phi.temperature == 298.15
    assert phi.physics == "Potential in kT/e (T = 298.15 K), dielectric 1"
    assert phi.origin == (-4.0, -3.0, -2.0) and phi.spacing == (0.75, 0.8, 1.1) and phi.shape == (13, 9, 7)


def test_values_are_a_read_only_view_without_a_copy():
    phi = espgrid.compute_map(SMALL, spacing=1.0)
    a, b = phi.values, phi.values
    assert a.ctypes.data == b.ctypes.data  # the same C++ buffer each time
    assert a.flags["F_CONTIGUOUS"] and not a.flags["WRITEABLE"] and not a.flags["OWNDATA"]
    with pytest.raises(ValueError):
        a[0, 0, 0] = 1.0
    del phi
    assert np.isfinite(a).all()  # the view keeps the map alive


def test_units_and_dielectric_scale_the_map():
    base = espgrid.compute_map(SMALL, spacing=1.0, kernel="cpu-reference")
    other = espgrid.compute_map(SMALL, spacing=1.0, kernel="cpu-reference", units="kcal/mol/e", dielectric=4)
    assert other.units == "kcal/mol/e" and other.dielectric == 4
    # k in kcal/mol/e over k in kT/e at 298.15 K = 332.0637 / 560.459 (7 digits: 1e-6 relative),
    # divided by ε = 4. Each map is a float32 sum of 38 terms: where they cancel, the error is
    # relative to the largest value, so the absolute part is 1e-5 of the map's range.
    np.testing.assert_allclose(other.values, base.values * (332.0637 / 560.459) / 4, rtol=1e-5,
                               atol=1e-5 * np.abs(other.values).max())


def test_structure_from_a_file():
    s = espgrid.read_structure(FAS2)
    positions, charges = read_pqr_columns(FAS2)
    assert len(s) == 906 and s.positions.shape == (906, 3)
    assert np.array_equal(s.positions, positions) and np.array_equal(s.charges, charges)
    assert s.total_charge == pytest.approx(4.053, abs=1e-9)
    assert s.source == "data/fasciculin2.pqr, 906 atoms, total charge +4.0530 e"
    assert s.charges_from is None


def test_kernels_list_the_programs_registry(cli):
    r = cli("kernels")
    assert r.returncode == 0
    table = [line.split() for line in r.stdout.splitlines()[1:] if line.strip() and line.split()[0].startswith(("cpu-", "cuda-"))]
    rows = espgrid.kernels()
    assert [k["name"] for k in rows] == [t[0] for t in table]
    # The program's RUNS column and the module's runnable come from one registry call: they agree.
    runs = {t[0]: t[6] for t in table}
    for k in rows:
        assert "coulomb" in k["models"]
        assert runs[k["name"]] == ("yes" if k["runnable"] else "no"), k
        assert (k["why_not"] is None) == k["runnable"], k
    default = r.stdout.split("Default: ")[1].split()[0]
    assert next(k for k in rows if k["name"] == default)["runnable"], default
    assert sum(k["role"] == "reference" for k in rows) == 1


@pytest.mark.parametrize("kernel", [k["name"] for k in espgrid.kernels() if k["backend"] == "cpu" and k["runnable"]])
def test_every_runnable_cpu_row_runs(kernel):
    # "runnable" is a promise: a row listed as runnable computes a map here.
    phi = espgrid.compute_map(SMALL, spacing=1.0, kernel=kernel)
    assert np.isfinite(phi.values).all() and phi.kernel == kernel


@pytest.mark.parametrize("backend", ["cpu", "cuda"])
def test_frame_average_equals_the_mean_of_the_frames_maps(backend):
    # The engine of espgrid.average_map (MDAnalysis reads the frames; here they are arrays, so it
    # runs where MDAnalysis is missing, e.g. the GPU host): 6 frames of fasciculin-2, each turned
    # and moved, averaged with the backend's default kernel.
    if backend == "cuda":
        require_gpu()
    fas = espgrid.read_structure(FAS2)
    base = fas.positions
    centre = base.mean(axis=0)
    frames = []
    for f in range(6):
        a = np.radians(5.0 * f)
        turn = np.array([[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0], [0, 0, 1]])
        frames.append((base - centre) @ turn.T + centre + np.array([0.5, -0.3, 0.2]) * f)
    grid = espgrid.grid_around(np.vstack(frames), spacing=1.5, padding=5)
    options = espgrid.map_options(origin=grid.origin, dims=grid.dims, spacing=grid.spacing, backend=backend)
    average = espgrid.FrameAverage(options, grid, fas.charges, True, "six frames")
    for xyz in frames:
        average.add_frame(xyz)
    average.finish()  # the last frame may still be computing beside the caller (pipelined) until then
    assert average.frames == 6 and average.kernel.startswith(backend + "-")
    maps = np.stack([np.asarray(espgrid.compute_map(xyz, fas.charges, grid=grid, backend=backend).values, np.float64)
                     for xyz in frames])
    # The running mean is accumulated in double from the same float32 maps and rounded once:
    # within one float32 rounding (6e-8 relative, 2 ulp allowed) of numpy's double mean.
    scale = np.abs(maps).max()
    assert np.abs(np.asarray(average.mean().values, np.float64) - maps.mean(axis=0)).max() <= 1.2e-7 * scale
    assert np.abs(np.asarray(average.deviation().values, np.float64) - maps.std(axis=0)).max() <= 1.2e-7 * scale


@pytest.mark.parametrize("backend", ["cpu", "cuda"])
def test_frame_average_sums_each_phase_of_its_pb_frames(backend):
    # phase_seconds (what benchmarks/trajectory_rate.py reports a frame): PB solves run in phases,
    # and each phase's time is summed over the frames in the solve's order; pair models have none.
    if backend == "cuda":
        require_gpu()
    fas = espgrid.read_structure(FAS2)
    frames = [fas.positions + np.array([0.3, -0.2, 0.1]) * f for f in range(3)]
    grid = espgrid.grid_around(np.vstack(frames), spacing=2.0, padding=5)
    options = espgrid.map_options(origin=grid.origin, dims=grid.dims, spacing=grid.spacing, backend=backend,
                                  model="pb")
    average = espgrid.FrameAverage(options, grid, fas.charges, False, "three frames", fas.radii)
    seen = []
    for xyz in frames:
        average.add_frame(xyz)
        average.finish()
        seen.append(dict(average.phase_seconds))
    assert seen[0] and list(seen[2]) == list(seen[0])  # the same phases, in the same order
    assert all(np.isfinite(v) and v >= 0 for v in seen[2].values())
    assert sum(seen[2].values()) > sum(seen[1].values()) > sum(seen[0].values()) > 0
    coulomb = espgrid.FrameAverage(espgrid.map_options(origin=grid.origin, dims=grid.dims, spacing=grid.spacing,
                                                       backend=backend), grid, fas.charges, False, "one frame")
    coulomb.add_frame(frames[0])
    coulomb.finish()
    assert coulomb.phase_seconds == {}


def test_progress_reports_every_plane_in_order():
    seen = []
    phi = espgrid.compute_map(SMALL, spacing=0.5, kernel="cpu-reference", progress=lambda d, t: seen.append((d, t)))
    planes = phi.shape[2]
    assert seen == [(k, planes) for k in range(1, planes + 1)]


def test_an_error_in_the_progress_callback_stops_the_computation():
    def fail(done, total):
        raise RuntimeError("stop here")
    with pytest.raises(RuntimeError, match="stop here"):
        espgrid.compute_map(SMALL, spacing=0.5, progress=fail)


# ---- the GIL and Ctrl-C ---------------------------------------------------------------------------------

def slow_problem(atoms):
    """atoms × 64³ evaluations on one thread (cpu-reference runs about 2e9 a second on a fast
    core): 4000 atoms take 0.5 s or more, 20,000 atoms 2.5 s or more."""
    rng = np.random.default_rng(7)
    positions = rng.uniform(-10, 10, size=(atoms, 3))
    charges = rng.uniform(-1, 1, size=atoms)
    return positions, charges, dict(origin=(-12, -12, -12), dims=(64, 64, 64), spacing=0.4, kernel="cpu-reference")


def test_the_gil_is_released_while_computing():
    positions, charges, options = slow_problem(4000)
    window = {}

    def compute():
        window["start"] = time.perf_counter()
        espgrid.compute_map(positions, charges, **options)
        window["end"] = time.perf_counter()

    worker = threading.Thread(target=compute)
    ticks = []
    worker.start()
    while worker.is_alive():
        ticks.append(time.perf_counter())
    worker.join()
    # Python ran in this thread while the kernel ran in the other. Holding the GIL would leave
    # this loop only the moments around the call (a switch interval, 5 ms, at each end), so
    # count ticks well inside the computation.
    inside = [t for t in ticks if window["start"] + 0.05 < t < window["end"] - 0.05]
    assert window["end"] - window["start"] > 0.3, "the problem was too small to show anything"
    assert len(inside) > 1000, f"{len(inside)} iterations in {window['end'] - window['start']:.2f} s of computing"


def test_ctrl_c_interrupts_a_computation():
    # No Python callback runs during this computation, so only the module's own check for
    # pending signals (at every plane) can stop it. SIGINT comes 0.2 s in; the whole map would
    # take about 64 times one 1-plane slab, measured first on the same problem.
    positions, charges, options = slow_problem(20000)
    began = time.perf_counter()
    espgrid.compute_map(positions, charges, **dict(options, dims=(64, 64, 1)))
    whole = 64 * (time.perf_counter() - began)
    assert whole > 1.0, f"the problem is too small to interrupt ({whole:.2f} s)"
    computing = threading.Event()

    def on_sigint(signum, frame):
        # Python's own behaviour while the map is computed; a signal arriving after it (on a
        # machine fast enough to finish in 0.2 s) must not escape into pytest.
        if computing.is_set():
            raise KeyboardInterrupt
    previous = signal.signal(signal.SIGINT, on_sigint)
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
    began = time.perf_counter()
    try:
        computing.set()
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            espgrid.compute_map(positions, charges, **options)
    finally:
        computing.clear()
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    stopped = time.perf_counter() - began
    assert stopped < 0.5 * whole, f"stopped after {stopped:.2f} s of a {whole:.2f} s computation"


# ---- errors --------------------------------------------------------------------------------------

def test_bad_input_file_is_an_input_error_with_file_and_line(cli):
    path = "tests/data/bad_nan_charge.pqr"
    r = cli("map", path, "-o", "/tmp/never-written.dx")
    with pytest.raises(espgrid.InputError) as caught:
        espgrid.read_structure(path)
    e = caught.value
    assert isinstance(e, ValueError)
    assert e.file == path and e.line >= 1 and str(e).startswith(f"{path}:{e.line}: ")
    assert f"espgrid: error: {e}" in r.stderr  # the program's message, word for word
    with pytest.raises(espgrid.InputError):
        espgrid.compute_map(path)


def test_missing_file_is_file_not_found():
    with pytest.raises(FileNotFoundError):
        espgrid.read_structure("no/such/file.pqr")


@pytest.mark.parametrize("options, message", [
    (dict(spacing=-1), "spacing"),
    (dict(dielectric=0), "dielectric"),
    (dict(units="furlongs"), "unit"),
    (dict(model="yukawa-ish"), "model"),
    (dict(kernel="no-such-kernel"), "no-such-kernel"),
    (dict(threads=5000), "threads"),
    (dict(origin=(0, 0, 0)), "--dims"),
])
def test_bad_option_values_are_usage_errors(options, message):
    with pytest.raises(espgrid.UsageError, match=message) as caught:
        espgrid.compute_map(SMALL, **options)
    assert isinstance(caught.value, ValueError)


def test_unknown_keyword_is_a_type_error():
    with pytest.raises(TypeError, match="spacng"):
        espgrid.compute_map(SMALL, spacng=1.0)


def test_bad_arrays_name_the_element():
    positions, charges = read_pqr_columns(SMALL)
    bad = positions.copy()
    bad[5, 2] = np.nan
    with pytest.raises(espgrid.UsageError, match=r"positions\[5, 2\]"):
        espgrid.compute_map(bad, charges)
    with pytest.raises(espgrid.UsageError, match=r"shape \(N, 3\)"):
        espgrid.compute_map(positions[:, :2], charges)
    with pytest.raises(espgrid.UsageError, match="one per atom"):
        espgrid.compute_map(positions, charges[:-1])
    with pytest.raises(espgrid.UsageError, match=r"charges\[3\]"):
        espgrid.compute_map(positions, np.where(np.arange(len(charges)) == 3, np.inf, charges))
    with pytest.raises(TypeError, match="need charges"):
        espgrid.compute_map(positions)


def test_no_gpu_is_a_runtime_error():
    ok, reason = espgrid.cuda_available()
    if ok:
        pytest.skip("a GPU is present; test_map_file_equals_the_programs_byte_for_byte runs the CUDA rows")
    with pytest.raises(espgrid.Error, match="cuda") as caught:
        espgrid.compute_map(SMALL, backend="cuda")
    assert isinstance(caught.value, RuntimeError) and reason in str(caught.value)
    with pytest.raises(espgrid.Error, match="needs a CUDA device"):
        espgrid.compute_map(SMALL, kernel=cuda_rows()[0])


# ---- writing and reading ------------------------------------------------------------------------

def test_write_by_extension_and_read_back(tmp_path):
    phi = espgrid.compute_map(SMALL, spacing=0.8, units="V")
    phi.write(tmp_path / "a.dx", str(tmp_path / "b.dx"))
    for name in ("a.dx", "b.dx"):
        back = espgrid.read_map(tmp_path / name)
        assert back.grid == phi.grid and back.units == "V" and np.array_equal(back.values, phi.values)
        assert back.kernel is None  # a map read from a file was computed elsewhere
    with pytest.raises(espgrid.UsageError, match="tiff"):
        phi.write(tmp_path / "c.tiff")
    with pytest.raises(espgrid.Error, match="does not exist"):
        phi.write(tmp_path / "no-such-dir" / "d.dx")
    assert sorted(os.listdir(tmp_path)) == ["a.dx", "b.dx"]


def test_map_from_values_keeps_physics_and_refuses_nan_on_write(tmp_path):
    phi = espgrid.compute_map(SMALL, spacing=1.0, units="kcal/mol/e")
    doubled = espgrid.map_from_values(np.asarray(phi.values) * 2, phi.grid, like=phi, source="twice the map")
    assert doubled.units == "kcal/mol/e" and doubled.source == "twice the map"
    assert np.array_equal(doubled.values, np.asarray(phi.values) * 2)
    doubled.write(tmp_path / "twice.dx")
    assert np.array_equal(espgrid.read_map(tmp_path / "twice.dx").values, doubled.values)
    holes = np.array(phi.values)
    holes[1, 2, 3] = np.nan
    # Refused where it is made, naming the value's index (nothing to write).
    with pytest.raises(espgrid.UsageError, match=r"values\[1, 2, 3\] is .*nan"):
        espgrid.map_from_values(holes, phi.grid, like=phi)
    with pytest.raises(espgrid.UsageError, match="grid's shape"):
        espgrid.map_from_values(holes[:, :, :-1], phi.grid)


# ---- GPU (skips without one; ESPGRID_REQUIRE_GPU=1 makes that a failure) --------------------------

def test_atomics_kernel_within_rounding():
    varies = [k["name"] for k in espgrid.kernels() if k["reproducibility"] == "varies"]
    if not varies:
        pytest.skip("no kernel adds in a varying order")
    require_gpu()
    positions, charges = read_pqr_columns(FAS2)
    reference = espgrid.compute_map(positions, charges, spacing=1.5, kernel="cpu-reference")
    # S = Σ|q|/r at each point bounds the float32 error of either sum: at most one rounding
    # (u = 2^-24) of the running sum per atom, (n − 1)·u·S for each of the two, in any order;
    # plus a few units of u per term for the GPU's rsqrt against the CPU's 1/sqrt (4u·S).
    scale = espgrid.compute_map(positions, np.abs(charges), grid=reference.grid, kernel="cpu-reference")
    bound = (2 * len(charges) + 4) * 2.0 ** -24 * np.asarray(scale.values, dtype=np.float64)
    for kernel in varies:
        phi = espgrid.compute_map(positions, charges, grid=reference.grid, kernel=kernel)
        diff = np.abs(np.asarray(phi.values, np.float64) - np.asarray(reference.values, np.float64))
        assert (diff <= bound).all(), f"{kernel}: worst excess {np.max(diff - bound)}"


# ---- PDB input through pdb2pqr (the program's rules; tests/test_pdb2pqr.cpp tests them in depth) --

def write_boxb_pdb(path):
    """A PDB file from data/boxb_rna_pdb2pqr3.pqr (PDB2PQR's own output): its first 54 columns
    are PDB columns; the charges and radii are dropped."""
    with open("data/boxb_rna_pdb2pqr3.pqr") as pqr, open(path, "w") as pdb:
        for line in pqr:
            if line.startswith("ATOM"):
                pdb.write(line[:54] + "  1.00  0.00           " + line[12:16].strip()[0] + "\n")
        pdb.write("END\n")


def test_pdb_through_pdb2pqr_equals_the_program(cli, tmp_path, monkeypatch):
    if not shutil.which("pdb2pqr30"):
        pytest.skip("pdb2pqr30 is not installed (Debian: pdb2pqr; scripts/install-deps.sh installs it)")
    pdb = tmp_path / "boxb.pdb"
    write_boxb_pdb(pdb)
    r = cli("map", "boxb.pdb", "-o", "cli.dx", "--spacing", "2", "--forcefield", "parse", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    monkeypatch.chdir(tmp_path)  # the same relative input name, so the header lines match too
    s = espgrid.read_structure("boxb.pdb", forcefield="parse", keep_pqr="kept.pqr")
    assert s.charges_from.startswith("pdb2pqr 3.") and "PARSE force field" in s.charges_from
    assert s.pdb2pqr_command == "pdb2pqr30 --ff PARSE --drop-water boxb.pdb kept.pqr"  # the PQR it kept
    assert len(s) == 619 and s.total_charge == pytest.approx(-18, abs=1e-3)
    espgrid.compute_map(s, spacing=2).write("module.dx")
    assert (tmp_path / "cli.dx").read_bytes() == (tmp_path / "module.dx").read_bytes()
    kept = espgrid.read_structure("kept.pqr")
    assert np.array_equal(kept.positions, s.positions) and np.array_equal(kept.charges, s.charges)
    with pytest.raises(espgrid.UsageError, match="PDB and mmCIF"):
        espgrid.read_structure(os.path.join(ROOT, FAS2), ph=7)
    with pytest.raises(espgrid.UsageError, match="ph"):
        espgrid.read_structure("boxb.pdb", ph=20)


# ---- the module holds input to the program's checks -------------------------------------

@pytest.mark.parametrize("radius, problem", [(np.nan, "is not finite"), (-1.5, "is negative"),
                                             (101.0, "is implausible (over 100 Å)"), (np.inf, "is not finite")])
def test_radii_are_checked_as_the_pqr_reader_checks_them(radius, problem, tmp_path, cli):
    # NaN and negative radii were accepted from Python although the PQR reader refuses them.
    positions, charges = read_pqr_columns(SMALL)
    radii = np.full(len(charges), 1.5)
    radii[7] = radius
    with pytest.raises(espgrid.UsageError, match=r"radii\[7\] = .* " + re.escape(problem)):
        espgrid.compute_map(positions, charges, radii=radii)
    # The program, for the same value in a PQR: the same words (one set of checks).
    pqr = tmp_path / "bad.pqr"
    pqr.write_text(f"ATOM 1 N MET 1 1.000 2.000 3.000 0.5 {radius}\n")
    r = cli("atoms", pqr)
    assert r.returncode == 1 and problem in r.stderr, r.stderr


@pytest.mark.parametrize("charge, problem", [(np.nan, "is not finite"), (1001.0, "is implausible (beyond ±1000 e)")])
def test_charges_are_checked_as_the_pqr_reader_checks_them(charge, problem):
    positions, charges = read_pqr_columns(SMALL)
    charges = charges.copy()
    charges[2] = charge
    with pytest.raises(espgrid.UsageError, match=r"charges\[2\] = .* " + re.escape(problem)):
        espgrid.compute_map(positions, charges)


def test_map_from_values_like_takes_a_map_else_type_error():
    # like=5 raised pybind11's cast RuntimeError ("Unable to cast Python instance...").
    phi = espgrid.compute_map(SMALL, spacing=2.0)
    for wrong in (5, "phi", phi.grid):
        with pytest.raises(TypeError, match="like= takes an espgrid.Map"):
            espgrid.map_from_values(np.asarray(phi.values), phi.grid, like=wrong)


def test_map_repr_says_what_the_map_is():
    phi = espgrid.compute_map(SMALL, spacing=2.0, units="kcal/mol/e", dielectric=4, kernel="cpu-reference")
    text = repr(phi)
    values = np.asarray(phi.values)
    assert text.startswith(f"Map(shape={phi.shape}, spacing={phi.spacing}, origin={phi.origin}, units='kcal/mol/e', "
                           "model='coulomb', dielectric=4.0"), text
    assert f"range=({float(values.min())!r}, {float(values.max())!r})" in text, text
    assert "kernel='cpu-reference'" in text and f"source={phi.source!r}" in text, text
    assert "not_finite" not in text, text  # counted only where a map holds some (none can be made from Python)


def test_keep_pqr_never_replaces_the_input(tmp_path):
    # read_structure('in.pdb', keep_pqr='in.pdb') overwrote the PDB with the PQR; now refused (the
    # job's checks) under its own name, through a symbolic link and through a hard link, before
    # pdb2pqr runs (it is never looked for: ESPGRID_PDB2PQR names nothing).
    pdb = tmp_path / "in.pdb"
    write_boxb_pdb(pdb)
    before = pdb.read_bytes()
    (tmp_path / "link.pqr").symlink_to("in.pdb")
    os.link(pdb, tmp_path / "hard.pqr")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ESPGRID_PDB2PQR", "/nonexistent/never-run")
        for keep in (pdb, tmp_path / "link.pqr", tmp_path / "hard.pqr"):
            with pytest.raises(espgrid.UsageError, match="would replace the input"):
                espgrid.read_structure(pdb, keep_pqr=keep)
    assert pdb.read_bytes() == before


def test_structure_files_as_users_have_them(tmp_path):
    # .pqr.gz (and a gzip file under a plain name) read as the plain file.
    plain = espgrid.read_structure(FAS2)
    with open(FAS2, "rb") as f:
        data = f.read()
    (tmp_path / "fas2.pqr.gz").write_bytes(gzip.compress(data))
    (tmp_path / "fas2-really-gzip.pqr").write_bytes(gzip.compress(data))
    for name in ("fas2.pqr.gz", "fas2-really-gzip.pqr"):
        s = espgrid.read_structure(tmp_path / name)
        assert np.array_equal(s.positions, plain.positions) and np.array_equal(s.charges, plain.charges), name
    (tmp_path / "cut.pqr.gz").write_bytes(gzip.compress(data)[:4000])
    with pytest.raises(espgrid.InputError, match="truncated"):
        espgrid.read_structure(tmp_path / "cut.pqr.gz")


# ---- pdb2pqr from Python: what it left out, its log, Ctrl-C ------------------------------------------

def write_slow_pdb2pqr(folder, seconds):
    """A stand-in pdb2pqr30 that records its PID and its child's, then waits `seconds`."""
    script = folder / "slow-pdb2pqr"
    script.write_text("#!/bin/sh\nsleep %d &\necho $! > '%s/grandchild.pid'\necho $$ > '%s/child.pid.tmp' && "
                      "mv '%s/child.pid.tmp' '%s/child.pid'\nwait\n" % ((seconds,) + (folder,) * 4))
    script.chmod(0o700)
    return script


def gone(pid):
    """Whether process `pid` runs no more (absent, or a zombie awaiting its reaper)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_ctrl_c_while_pdb2pqr_runs_ends_it_and_removes_its_folder(tmp_path, monkeypatch):
    # The module checks for Ctrl-C while pdb2pqr runs (it runs in a process group of its own, out
    # of the terminal's reach); KeyboardInterrupt ends the program and removes its folder.
    pdb = tmp_path / "x.pdb"
    write_boxb_pdb(pdb)
    (tmp_path / "tmp").mkdir()
    # The stand-in runs 60 s; the interrupt must end it well before (30 s allows a loaded machine;
    # the module checks every 0.1 s). Before, the call returned only when pdb2pqr ended.
    monkeypatch.setenv("ESPGRID_PDB2PQR", str(write_slow_pdb2pqr(tmp_path, 60)))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    sent = []

    def interrupt_once_started():
        for _ in range(6000):
            if (tmp_path / "child.pid").exists():
                sent.append(time.monotonic())
                os.kill(os.getpid(), signal.SIGINT)
                return
            time.sleep(0.01)

    threading.Thread(target=interrupt_once_started, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        espgrid.read_structure(pdb)
    assert sent and time.monotonic() - sent[0] < 30, "the interrupt waited for pdb2pqr to end"
    program = int((tmp_path / "child.pid").read_text())
    grandchild = int((tmp_path / "grandchild.pid").read_text())
    try:
        deadline = time.monotonic() + 10
        while not (gone(program) and gone(grandchild)) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert gone(program) and gone(grandchild), "pdb2pqr's stand-in (or its child) still runs"
        assert os.listdir(tmp_path / "tmp") == [], "its temporary folder was left"
    finally:
        for pid in (program, grandchild):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_what_pdb2pqr_left_out_and_its_log(tmp_path, monkeypatch):
    if not shutil.which("pdb2pqr30"):
        pytest.skip("pdb2pqr30 is not installed (Debian: pdb2pqr; scripts/install-deps.sh installs it)")
    pdb = tmp_path / "lig.pdb"
    write_boxb_pdb(pdb)
    text = pdb.read_text().replace("END\n", "")
    text += ("HETATM 9001  C1  NAG B 501      10.000  10.000  10.000  1.00  0.00           C\n"
             "HETATM 9002 ZN    ZN C 601      -5.000  -5.000  -5.000  1.00  0.00          ZN\nEND\n")
    pdb.write_text(text)
    monkeypatch.chdir(tmp_path)
    os.mkdir("kept")
    s = espgrid.read_structure("lig.pdb", keep_pqr="kept/lig.pqr")
    atoms = s.pdb2pqr_atoms
    assert atoms["input_atoms"] == 621 and atoms["left_out_atoms"] == 2, atoms
    assert [r["residue"] for r in atoms["left_out"]] == ["NAG B 501", "ZN C 601"], atoms
    # The zinc is charged by its formal charge, the sugar by Open Babel where installed
    # (tests/test_ligands.cpp): nothing is left out of the map then.
    assert ("ion", "ZN C 601: zinc ion, formal charge +2 (the PDB's ZN), radius 1.09 Å (CHARMM's, as in pdb2pqr's "
            "CHARMM.DAT)") in s.report, s.report
    assert "Ignoring 2 missing lines in output" in s.pdb2pqr_log
    assert s.pdb2pqr_command == "pdb2pqr30 --ff AMBER --drop-water lig.pdb kept/lig.pqr"
    assert (tmp_path / "kept" / "lig.log").read_text() == s.pdb2pqr_log
    assert espgrid.read_structure(os.path.join(ROOT, FAS2)).pdb2pqr_atoms is None


# ---- locale: the numbers in files and messages never follow LC_NUMERIC ----------------------------

def _set_locale(name, locpath):
    """setlocale(LC_ALL, name) with glibc's LOCPATH set to `locpath` (None: as the environment had
    it) for that one call: a private LOCPATH hides the system's locales, so the one in force before
    (on the GPU host 'LC_CTYPE=en_US.UTF-8;...') could not be restored under it."""
    import locale
    saved = os.environ.get("LOCPATH")
    if locpath is not None:
        os.environ["LOCPATH"] = locpath
    try:
        return locale.setlocale(locale.LC_ALL, name)
    finally:
        if saved is None:
            os.environ.pop("LOCPATH", None)
        else:
            os.environ["LOCPATH"] = saved


@pytest.fixture(scope="session")
def german_locale(tmp_path_factory):
    """de_DE.UTF-8 (decimal comma), made with localedef into a private folder, so no system locale
    is needed: (name, folder for LOCPATH); skips, saying why, where it cannot be made."""
    import locale
    folder = tmp_path_factory.mktemp("locales")
    localedef = shutil.which("localedef")
    if localedef is None:
        pytest.skip("localedef (libc-bin) is not installed")
    r = subprocess.run([localedef, "-i", "de_DE", "-f", "UTF-8", str(folder / "de_DE.UTF-8")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if not (folder / "de_DE.UTF-8").is_dir():
        pytest.skip(f"de_DE.UTF-8 cannot be made here (Debian: apt-get install locales): {r.stdout.strip()}")
    before = locale.setlocale(locale.LC_ALL)
    try:
        _set_locale("de_DE.UTF-8", str(folder))
    except locale.Error as e:
        pytest.skip(f"de_DE.UTF-8 was made but cannot be set: {e}")
    finally:
        _set_locale(before, None)
    return "de_DE.UTF-8", str(folder)


def test_files_and_messages_are_the_same_in_a_german_locale(german_locale, tmp_path, monkeypatch):
    # After setlocale(LC_ALL, "de_DE.UTF-8") in the same process, headers read "+0,2000 e" and a
    # Debye model's header could not be read back. Every file is compared byte for byte with the
    # one written in the C locale, and the messages and repr with theirs.
    import ctypes
    import locale

    def everything(folder):
        folder.mkdir()
        s = espgrid.read_structure(FAS2)
        phi = espgrid.compute_map(s, spacing=1.5, model="debye", ionic_strength=0.15, dielectric=78.54,
                                  temperature=310.25)
        names = ["m.dx", "m.dx.gz", "m.mrc", "m.vti"]
        phi.write(*[folder / n for n in names])
        back = espgrid.read_map(folder / "m.dx")
        try:
            espgrid.compute_map(SMALL, spacing=1e300)
        except espgrid.UsageError as e:
            message = str(e)
        return {n: (folder / n).read_bytes() for n in names}, s.source, repr(phi), back.physics, message

    c_locale = everything(tmp_path / "c")
    before = locale.setlocale(locale.LC_ALL)
    _set_locale(*german_locale)
    try:
        # The locale really is in force, down to the C library's printf.
        assert locale.str(0.2) == "0,2"
        buffer = ctypes.create_string_buffer(32)
        ctypes.CDLL(None).snprintf(buffer, 32, b"%+.4f", ctypes.c_double(0.2))
        assert buffer.value == b"+0,2000"
        german = everything(tmp_path / "de")
    finally:
        _set_locale(before, None)
    for name, data in c_locale[0].items():
        assert german[0][name] == data, f"{name} differs in de_DE.UTF-8"
    assert german[1:] == c_locale[1:]
    assert "+4.0530 e" in german[1] and "ionic strength 0.15 M" in german[3] and "1e+300" in german[4], german[1:]
