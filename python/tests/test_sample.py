"""The potential at points and the scripting surface.

`espgrid sample` and espgrid.potential_at (the exact sum at any point), Map.sample (a map
interpolated), `espgrid map --json` against Python's Map, and MDAnalysis atoms given directly:
compute_map(atomgroup), molecules made whole across a periodic box (unwrap), the warning when
they are not, and no MDAnalysis deprecation noise. The periodic system is built here: water-like
molecules with charges and bonds in a PSF written by the test, frames in a DCD with a box.
"""

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import espgrid
from conftest import ROOT, run_cli

FAS = os.path.join(ROOT, "data", "fasciculin2.pqr")


@pytest.fixture(scope="module")
def fas():
    return espgrid.read_structure(FAS)


def random_points(seed, count, lo=-35.0, hi=60.0):
    return np.random.default_rng(seed).uniform(lo, hi, size=(count, 3))


# ---- espgrid.potential_at and Map.sample ---------------------------------------------------------------

def test_potential_at_equals_the_map_at_its_grid_points(fas):
    # cpu-reference sums the same terms in float32 (positions relative to the grid origin); the
    # point evaluator in double. Their difference is float32 rounding of sums of terms up to
    # ~3e3 kT/e a term near atoms: 1e-5 of Σ|q|/r is far above it (4√906 ulp ≈ 7e-6 relative)
    # and far below any modelling error a wrong point would show (the map changes by ~10 kT/e
    # between neighbouring points here).
    phi = espgrid.compute_map(fas, spacing=1.5, kernel="cpu-reference")
    g = phi.grid
    ijk = np.stack(np.meshgrid(*[np.arange(0, n, 3) for n in g.dims], indexing="ij"), -1).reshape(-1, 3)
    points = np.asarray(g.origin) + ijk * np.asarray(g.spacing)
    exact = espgrid.potential_at(points, fas, backend="cpu")
    magnitude = espgrid.potential_at(points, fas.positions, np.abs(fas.charges), backend="cpu")
    mapped = phi.values[ijk[:, 0], ijk[:, 1], ijk[:, 2]]
    assert exact.dtype == np.float32 and exact.shape == (len(points),)
    assert np.all(np.abs(exact - mapped) <= 1e-5 * magnitude)


def test_potential_at_takes_every_model_and_one_point(fas):
    point = [3.0, -4.0, 20.0]
    r = np.sqrt(((fas.positions - point) ** 2).sum(axis=1) + 1e-8)  # the softening length, 1e-4 Å
    for options in ({}, {"model": "distance", "dielectric": 4}, {"model": "debye", "dielectric": 78.54,
                                                                 "ionic_strength": 0.15, "units": "kcal/mol/e"}):
        value = espgrid.potential_at(point, fas, **options)
        # Independently, in numpy: k/ε Σ q f(r), f as the model's; k/ε from a map of one unit charge
        # 1 Å from a grid point (f(1) = 1, e^-κ for Debye), κ from the map's summary.
        unit = espgrid.compute_map([[1.0, 0.0, 0.0]], [1.0], origin=[0, 0, 0], dims=[1, 1, 1], **options)
        kappa = unit.model_parameters.get("kappa_per_angstrom", 0.0)
        k = float(unit.values[0, 0, 0]) * np.exp(kappa)
        f = {"coulomb": 1 / r, "distance": 1 / r ** 2}.get(options.get("model", "coulomb"), np.exp(-kappa * r) / r)
        expected, magnitude = k * (fas.charges * f).sum(), k * (np.abs(fas.charges) * f).sum()
        # k/ε through a float32 map value (6e-8), κ as float32 in the evaluator (κr·6e-8 ≲ 1e-6 a
        # term): 1e-6 of Σ|q|f bounds both, whatever the cancellation between the charges.
        assert value.shape == (1,) and abs(value[0] - expected) <= 1e-6 * magnitude, options


def test_potential_at_checks_its_arguments(fas):
    with pytest.raises(espgrid.UsageError, match=r"points\[1, 2\] \(z of point 1\) is nan"):
        espgrid.potential_at([[0, 0, 0], [1, 2, np.nan]], fas)
    with pytest.raises(espgrid.UsageError, match=r"points must have shape \(N, 3\)"):
        espgrid.potential_at(np.zeros((4, 2)), fas)
    with pytest.raises(espgrid.UsageError, match="--model pb is a field solve"):
        espgrid.potential_at([0, 0, 0], fas, model="pb")
    with pytest.raises(espgrid.UsageError, match="--kernel names a map kernel"):
        espgrid.potential_at([0, 0, 0], fas, kernel="cpu-simd")
    with pytest.raises(TypeError, match="spacing= places a map's grid"):
        espgrid.potential_at([0, 0, 0], fas, spacing=1.0)
    with pytest.raises(TypeError, match="unwrap= applies to MDAnalysis"):
        espgrid.potential_at([0, 0, 0], fas, unwrap=True)


def trilinear(values, origin, spacing, points):
    """Trilinear interpolation in numpy, written from the definition: the 8 corners of the cell
    holding each point, weighted by the products of the fractional distances."""
    u = (np.asarray(points) - origin) / spacing
    i0 = np.minimum(np.floor(u).astype(int), np.array(values.shape) - 2)
    f = u - i0
    out = np.zeros(len(points))
    for corner in range(8):
        d = np.array([(corner >> a) & 1 for a in range(3)])
        w = np.prod(np.where(d, f, 1 - f), axis=1)
        idx = i0 + d
        out += w * values[idx[:, 0], idx[:, 1], idx[:, 2]]
    return out


def test_map_sample_is_trilinear_and_refuses_outside(fas):
    phi = espgrid.compute_map(fas, spacing=1.0, padding=4)
    g = phi.grid
    lo = np.asarray(g.origin)
    hi = lo + (np.asarray(g.dims) - 1) * np.asarray(g.spacing)
    points = np.random.default_rng(3).uniform(lo, hi, size=(500, 3))
    sampled = phi.sample(points)
    expected = trilinear(np.asarray(phi.values, np.float64), lo, np.asarray(g.spacing), points)
    # float32 result of a double sum of 8 weights in [0, 1] times float32 values: half an ulp of
    # the largest corner, ~6e-8 relative; 1e-6 of the map's scale allows the product's rounding.
    np.testing.assert_allclose(sampled, expected, rtol=0, atol=1e-6 * np.abs(phi.values).max())
    # A grid point is its value; the far corner is inside.
    assert phi.sample(lo)[0] == phi.values[0, 0, 0] and phi.sample(hi)[0] == phi.values[-1, -1, -1]
    with pytest.raises(espgrid.UsageError, match=r"points\[1\] \(.*\) lies outside the map \(x .* Å\) \(2 of the 3 "
                                                 r"points do\)"):
        phi.sample([lo, hi + 0.1, lo - 1])
    # No map with a NaN can be made to sample (map_from_values refuses it, naming where).
    with pytest.raises(espgrid.UsageError, match=r"values\[0, 0, 0\] is nan"):
        espgrid.map_from_values(np.full(g.dims, np.nan, np.float32), g, like=phi)


# ---- espgrid sample ------------------------------------------------------------------------------------

def write_points(path, points, sep=" "):
    with open(path, "w") as f:
        f.write("# test points\n")
        for p in points:
            f.write(sep.join(repr(float(c)) for c in p) + "\n")


def read_csv(path):
    lines = open(path).read().splitlines()
    assert lines[0] == "x,y,z,potential"
    return np.array([[float(v) for v in line.split(",")] for line in lines[1:]])


def test_sample_writes_csv_equal_to_potential_at(tmp_path, fas):
    points = random_points(1, 50)
    write_points(tmp_path / "points.csv", points, sep=",")
    r = run_cli("sample", FAS, "--points", "points.csv", "-o", "values.csv", "--model", "debye", "--dielectric", "78.54",
                "--ionic-strength", "0.15", "--backend", "cpu", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "points     50 from points.csv" in r.stdout and "wrote      values.csv (CSV)" in r.stdout
    table = read_csv(tmp_path / "values.csv")
    np.testing.assert_array_equal(table[:, :3], points)  # coordinates written exactly
    expected = espgrid.potential_at(points, fas, model="debye", dielectric=78.54, ionic_strength=0.15, backend="cpu")
    # The same double sum in the program and the module (any thread count gives the same bits),
    # written as the float's shortest text and read back: equal.
    np.testing.assert_array_equal(table[:, 3].astype(np.float32), expected)


def test_sample_reads_standard_input_and_writes_text_to_standard_output(tmp_path, fas):
    points = random_points(2, 5)
    text = "x y z\n" + "".join(f"{x!r} {y!r} {z!r}\n" for x, y, z in points)
    r = subprocess.run([os.environ.get("ESPGRID") or os.path.join(ROOT, "build", "espgrid"), "sample", FAS,
                        "--points", "-", "--units", "V"], input=text, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rows = [line for line in r.stdout.splitlines() if not line.startswith("#")]
    assert len(rows) == 5 and "# x y z potential" in r.stdout and "the potential in V at 5 points from <stdin>" in r.stdout
    values = np.array([float(line.split()[3]) for line in rows], np.float32)
    np.testing.assert_array_equal(values, espgrid.potential_at(points, fas, units="V"))
    # The summary goes to stderr, out of the table's way.
    assert "points     5 from <stdin>" in r.stderr and "range" in r.stderr
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("content, message", [
    ("1 2 3\n4 5\n", "points.txt:2: expected three numbers x y z (Å), separated by spaces or commas; found 2 fields"),
    ("1 2 3\n4 5 nan\n", "points.txt:2: z is nan: points must be finite numbers (Å)"),
    ("1,2,three\n", "points.txt:1: z is not a number: 'three'"),
    ("# only a comment\n", "points.txt:1: no points in the file"),
])
def test_sample_bad_points_name_their_line_and_write_nothing(tmp_path, content, message):
    (tmp_path / "points.txt").write_text(content)
    r = run_cli("sample", FAS, "--points", "points.txt", "-o", "values.csv", cwd=tmp_path)
    assert r.returncode == 1 and f"espgrid: error: {message}" in r.stderr, r.stderr
    assert r.stdout == "" and sorted(os.listdir(tmp_path)) == ["points.txt"]


def test_sample_usage_errors(tmp_path):
    (tmp_path / "p.txt").write_text("0 0 0\n")
    for args, message in [
        ([FAS], "no points given"),
        (["--points", "p.txt"], "no structure given"),
        ([FAS, "--points", "p.txt", "--model", "pb"], "--model pb is a field solve"),
        ([FAS, "--points", "p.txt", "--map", "m.dx"], "not both"),
        (["--points", "p.txt", "--map", "m.dx", "--dielectric", "4"], "--dielectric does not apply with --map"),
        ([FAS, "--points", "p.txt", "--kernel", "cpu-simd"], "kernel"),
        ([FAS, "--points", "p.txt", "-o", "p.txt"], "is the input p.txt"),
        ([FAS, "--points", "p.txt", "--table", "tsv"], "--table must be text or csv"),
    ]:
        r = run_cli("sample", *args, cwd=tmp_path)
        assert r.returncode == 2 and message in r.stderr, (args, r.stderr)
    assert os.listdir(tmp_path) == ["p.txt"]


def test_sample_interpolates_a_map_and_refuses_points_outside(tmp_path, fas):
    phi = espgrid.compute_map(fas, spacing=1.0, padding=3)
    phi.write(str(tmp_path / "fas.mrc"))
    lo = np.asarray(phi.origin)
    inside = random_points(4, 20, lo=lo, hi=lo + (np.asarray(phi.shape) - 1) * np.asarray(phi.spacing))
    write_points(tmp_path / "in.txt", inside)
    r = run_cli("sample", "--map", "fas.mrc", "--points", "in.txt", "-o", "v.csv", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "trilinear interpolation of the map" in r.stdout
    np.testing.assert_array_equal(read_csv(tmp_path / "v.csv")[:, 3].astype(np.float32),
                                  espgrid.read_map(tmp_path / "fas.mrc").sample(inside))
    write_points(tmp_path / "out.txt", [inside[0], inside[1], [500.0, 0.0, 0.0]])
    r = run_cli("sample", "--map", "fas.mrc", "--points", "out.txt", "-o", "w.csv", cwd=tmp_path)
    assert r.returncode == 1 and "out.txt:4: the point (500, 0, 0) lies outside the map fas.mrc (x " in r.stderr, r.stderr
    assert not (tmp_path / "w.csv").exists()


# ---- espgrid map --json and Map.summary() ----------------------------------------------------------------

def test_map_json_has_the_python_maps_attributes(tmp_path):
    r = run_cli("map", FAS, "-o", "fas.dx", "--spacing", "1.5", "--model", "debye", "--dielectric", "78.54",
                "--ionic-strength", "0.15", "--json", "fas.json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "wrote      fas.json (the summary as JSON)" in r.stdout
    summary = json.load(open(tmp_path / "fas.json"))
    phi = espgrid.compute_map(FAS, spacing=1.5, model="debye", dielectric=78.54, ionic_strength=0.15)
    phi.write(str(tmp_path / "py.dx"))
    mine = phi.summary()
    assert set(summary) == set(mine)
    for key in summary:
        assert hasattr(phi, key), f"the JSON's {key!r} is no attribute of espgrid.Map"
    # The same map: grid, physics, range, model parameters, kernel choice.
    for key in ("origin", "spacing", "shape", "units", "model", "dielectric", "temperature", "physics",
                "model_parameters", "range", "kernel", "kernel_choice", "device"):
        assert summary[key] == mine[key], key
        assert getattr(phi, key) == (tuple(mine[key]) if isinstance(mine[key], list) else mine[key]), key
    assert summary["grid"]["dims"] == list(phi.grid.dims) and summary["grid"]["point_count"] == phi.grid.point_count
    # The range is written as each float32's shortest text: it reads back as the same float32.
    assert np.float32(summary["range"][0]) == phi.values.min() and np.float32(summary["range"][1]) == phi.values.max()
    assert summary["model_parameters"]["ionic_strength"] == 0.15
    assert summary["model_parameters"]["kappa_per_angstrom"] == pytest.approx(1 / 7.86, rel=1e-3)
    assert summary["timing"]["atom_evaluations"] == phi.grid.point_count * 906
    assert set(summary["timing"]) == set(phi.timing)
    assert summary["outputs"] == ["fas.dx"] and phi.outputs == [str(tmp_path / "py.dx")]
    p = summary["provenance"]
    assert p["atoms"] == 906 and p["input"] == FAS and p["command"][:3] == ["espgrid", "map", FAS]
    assert p["espgrid_version"] == espgrid.__version__ and p["created"].endswith("Z")
    assert phi.provenance["atoms"] == 906 and phi.provenance["command"] is None


def test_map_json_to_standard_output_is_the_json_alone(tmp_path):
    r = run_cli("map", FAS, "-o", "fas.mrc", "--spacing", "2", "--json", "-", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["outputs"] == ["fas.mrc"] and summary["shape"] == list(espgrid.read_map(tmp_path / "fas.mrc").shape)
    assert "wrote      fas.mrc" in r.stderr and "kernel     " in r.stderr


def test_map_json_refuses_a_clash_before_computing(tmp_path):
    r = run_cli("map", FAS, "-o", "fas.dx", "--json", "fas.dx", cwd=tmp_path)
    assert r.returncode == 2 and "--json fas.dx is also fas.dx" in r.stderr, r.stderr
    r = run_cli("map", FAS, "-o", "fas.dx", "--json", "nowhere/fas.json", cwd=tmp_path)
    assert r.returncode != 0 and "nowhere/fas.json" in r.stderr
    assert os.listdir(tmp_path) == []


def test_small_maps_print_no_estimate(tmp_path):
    # The estimate appears only when a probe predicts more than 5 s (src/pipeline/time_estimate.h;
    # its probe is tested in tests/test_sample.cpp): a map of 1.4e8 atom-evaluations is not probed.
    r = run_cli("map", FAS, "-o", "fas.dx", "--spacing", "1", cwd=tmp_path)
    assert r.returncode == 0 and "estimate" not in r.stdout, r.stdout


# ---- MDAnalysis atoms ---------------------------------------------------------------------------------

mda = pytest.importorskip("MDAnalysis")
warnings.filterwarnings("ignore", category=DeprecationWarning)

BOX = 24.0


def write_psf(path, charges, bonds):
    """A PSF (the format MDAnalysis reads charges and bonds from) of 3-atom water-like molecules."""
    names = ["O", "H", "H"] * (len(charges) // 3)
    lines = ["PSF", "", "       1 !NTITLE", " REMARKS espgrid test_sample.py", "", f"{len(charges):8d} !NATOM"]
    for i, (name, q) in enumerate(zip(names, charges)):
        lines.append(f"{i + 1:8d} W    {i // 3 + 1:<4d} WAT  {name:<4s} {name:<4s} {q:10.6f} "
                     f"{15.999 if name == 'O' else 1.008:13.4f}           0")
    lines += ["", f"{len(bonds):8d} !NBOND: bonds"]
    pairs = "".join(f"{a + 1:8d}{b + 1:8d}" for a, b in bonds)
    lines += [pairs[i:i + 64] for i in range(0, len(pairs), 64)]
    for section in ("NTHETA: angles", "NPHI: dihedrals", "NIMPHI: impropers", "NDON: donors", "NACC: acceptors"):
        lines += ["", f"       0 !{section}"]
    open(path, "w").write("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def periodic(tmp_path_factory):
    """Four water-like molecules (O −0.8 e, two H +0.4 e, 1 Å bonds) in a 24 Å cubic box, over 3
    frames in which they drift by (2.5, 1, 0.5) Å a frame; molecule 0 sits on the x face, so the
    wrapped coordinates put its hydrogens on the far side of the box. Returns the files, the whole
    molecules of each frame (as MDAnalysis's unwrap leaves them: the first atom of each molecule
    where wrapping put it, the others beside it) and the charges."""
    folder = tmp_path_factory.mktemp("periodic")
    centres = np.array([[23.6, 12.0, 12.0], [6.0, 6.0, 18.0], [16.0, 20.0, 4.0], [12.0, 3.0, 11.0]])
    shape = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [-0.33, 0.94, 0.0]])
    charges = np.tile([-0.8, 0.4, 0.4], 4)
    bonds = [(3 * m, 3 * m + a) for m in range(4) for a in (1, 2)]
    write_psf(folder / "water.psf", charges, bonds)
    whole, wrapped = [], []
    for f in range(3):
        molecules = [c + f * np.array([2.5, 1.0, 0.5]) + shape for c in centres]
        first = [np.floor(m[0] / BOX) * BOX for m in molecules]  # the box vector that wraps atom 0
        whole.append(np.vstack([m - s for m, s in zip(molecules, first)]))
        wrapped.append(np.vstack(molecules) % BOX)
    universe = mda.Universe(str(folder / "water.psf"))
    universe.load_new(np.array(wrapped, np.float32), dimensions=[BOX, BOX, BOX, 90, 90, 90])
    with mda.Writer(str(folder / "water.dcd"), len(universe.atoms)) as writer:
        for _ in universe.trajectory:
            writer.write(universe.atoms)
    # The test's premise: molecule 0 is split in the wrapped frames.
    assert np.ptp(np.array(wrapped)[:, :3, 0], axis=1).max() > BOX / 2
    return dict(psf=str(folder / "water.psf"), dcd=str(folder / "water.dcd"), whole=whole, wrapped=wrapped,
                charges=charges, folder=folder)


def test_compute_map_takes_an_atomgroup_and_a_universe():
    universe = mda.Universe(FAS)
    fas = espgrid.read_structure(FAS)
    expected = espgrid.compute_map(fas.positions, fas.charges, spacing=2.0)
    for atoms in (universe.atoms, universe):
        phi = espgrid.compute_map(atoms, spacing=2.0)
        # MDAnalysis holds positions (and PQR charges) as float32: the same values as the PQR's
        # three decimals up to float32 rounding, so the maps agree to float32 rounding of φ.
        assert phi.grid == expected.grid
        np.testing.assert_allclose(phi.values, expected.values, rtol=1e-4, atol=1e-4 * np.abs(expected.values).max())
        assert phi.source.startswith("MDAnalysis ") and "fasciculin2.pqr, frame 0, 906 atoms" in phi.source
    part = universe.select_atoms("resid 544:553")
    assert len(part) > 50
    residues = espgrid.compute_map(part.residues, spacing=2.0)  # a ResidueGroup: its atoms
    assert residues.source.startswith("MDAnalysis ResidueGroup of fasciculin2.pqr, frame 0, ")
    np.testing.assert_array_equal(espgrid.potential_at([0, 0, 0], part),
                                  espgrid.potential_at([0, 0, 0], part.positions, part.charges))


def test_mdanalysis_atoms_without_charges_say_so(tmp_path):
    (tmp_path / "two.xyz").write_text("2\ncomment\nC 0 0 0\nO 1.2 0 0\n")
    universe = mda.Universe(str(tmp_path / "two.xyz"))
    with pytest.raises(espgrid.UsageError, match="the Universe of two.xyz has no charges"):
        espgrid.compute_map(universe)
    with pytest.raises(TypeError, match="charges come with the MDAnalysis atoms"):
        espgrid.compute_map(universe.atoms, [1.0, -1.0])


def test_unwrap_makes_the_molecules_whole(periodic):
    universe = mda.Universe(periodic["psf"], periodic["dcd"])
    # Grid points a quarter spacing off the atoms' coordinates, which are whole and half Å: no
    # point closer than ~0.3 Å to an atom, where the softened 1/r would dominate the scale.
    grid = espgrid.Grid(origin=(-6.25, -6.25, -6.25), dims=(37, 37, 37), spacing=(1.0, 1.0, 1.0))
    reference = espgrid.compute_map(periodic["whole"][0], periodic["charges"], grid=grid)
    made_whole = espgrid.compute_map(universe.atoms, grid=grid, unwrap=True)
    # MDAnalysis unwraps through float32 fractional coordinates: positions within ~1e-6 Å of the
    # whole molecules built here, which moves φ (|∇φ| ≲ 5e3 kT/e/Å at ≥ 0.3 Å from the atoms)
    # by < 5e-3 kT/e: below 1e-5 of the map's scale (~1.5e3 kT/e at 0.3 Å from an oxygen).
    scale = np.abs(reference.values).max()
    np.testing.assert_allclose(made_whole.values, reference.values, rtol=0, atol=1e-5 * scale)
    assert "molecules made whole" in made_whole.source
    # Without unwrap the split molecule's hydrogens sit across the box: a different map, and a warning.
    with pytest.warns(espgrid.trajectory.PeriodicBoxWarning, match=r"periodic \(box 24 x 24 x 24 Å\).*1 of its 8 "
                                                                    r"bonds spans more than half the box in frame 0"):
        split = espgrid.compute_map(universe.atoms, grid=grid)
    assert np.abs(split.values - reference.values).max() > 0.1 * scale
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        espgrid.compute_map(universe.atoms, grid=grid, unwrap=False)  # says they are whole: no warning
    # The universe's own coordinates are left as they were.
    np.testing.assert_allclose(universe.atoms.positions, periodic["wrapped"][0], atol=1e-5)


def test_average_map_unwraps_every_frame(periodic):
    grid = espgrid.Grid(origin=(-6.25, -6.25, -6.25), dims=(40, 40, 40), spacing=(1.0, 1.0, 1.0))  # as above
    result = espgrid.average_map(periodic["psf"], periodic["dcd"], grid=grid, unwrap=True, progress=False)
    stack = np.stack([espgrid.compute_map(w, periodic["charges"], grid=grid).values for w in periodic["whole"]])
    scale = np.abs(stack).max()
    # As above: positions within ~1e-6 Å, so each frame's map within 1e-5 of the scale.
    np.testing.assert_allclose(result.mean.values, stack.mean(axis=0), rtol=0, atol=1e-5 * scale)
    assert "molecules made whole" in result.mean.source
    with pytest.warns(espgrid.trajectory.PeriodicBoxWarning):
        espgrid.average_map(periodic["psf"], periodic["dcd"], grid=grid, progress=False)
    # unwrap needs bonds and a box.
    with pytest.raises(espgrid.UsageError, match=r"unwrap=True needs bonds to tell the molecules apart, and "
                                                 r".*fasciculin2.pqr \+ .*fas.dcd has none"):
        espgrid.average_map(FAS, boxed_fas_dcd(periodic), unwrap=True, progress=False)
    with pytest.raises(espgrid.UsageError, match="the Universe of fasciculin2.pqr has no periodic box"):
        espgrid.compute_map(mda.Universe(FAS), unwrap=True)


def boxed_fas_dcd(periodic):
    """fasciculin-2's coordinates as a one-frame DCD in an 80 Å box (a PQR topology has no bonds)."""
    path = str(periodic["folder"] / "fas.dcd")
    if not os.path.exists(path):
        universe = mda.Universe(FAS)
        universe.dimensions = [80, 80, 80, 90, 90, 90]
        with mda.Writer(path, len(universe.atoms)) as writer:
            writer.write(universe.atoms)
    return path


def run_python(args, cwd):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(espgrid.__file__)),
                                                       os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)


def test_trajectory_command_line_unwraps_and_warns(periodic, tmp_path):
    common = [periodic["psf"], periodic["dcd"], "--origin=-6.25,-6.25,-6.25", "--dims", "40,40,40", "--spacing", "1",
              "--no-progress"]
    r = run_python(["-m", "espgrid", *common, "-o", "whole.dx", "--unwrap"], cwd=tmp_path)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert "molecules  made whole across the periodic box in every frame" in r.stdout
    r = run_python(["-m", "espgrid", *common, "-o", "split.dx"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stderr.startswith("espgrid-trajectory: warning: ") and "--unwrap" in r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr  # one line, no Python warning source
    whole, split = espgrid.read_map(tmp_path / "whole.dx"), espgrid.read_map(tmp_path / "split.dx")
    assert np.abs(whole.values - split.values).max() > 1.0
    r = run_python(["-m", "espgrid", *common, "-o", "quiet.dx", "--no-unwrap"], cwd=tmp_path)
    assert r.returncode == 0 and r.stderr == "", r.stderr


def test_no_mdanalysis_noise_from_a_script(periodic, tmp_path):
    # A script that calls espgrid (not MDAnalysis) on a DCD: MDAnalysis's DeprecationWarnings about
    # its own internals (xdrlib, DCD timesteps) stay out of its stderr.
    script = (f"import espgrid\n"
              f"r = espgrid.average_map({periodic['psf']!r}, {periodic['dcd']!r}, spacing=3, unwrap=True, "
              f"progress=False)\n"
              f"print(len(r.frames), r.mean.shape)\n")
    r = run_python(["-W", "default", "-c", script], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("3 (") and r.stderr == "", r.stderr
