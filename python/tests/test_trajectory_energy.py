"""Energies per trajectory frame (issue 37): the pair models' exact sums against numpy, the
binding energy as complex − parts, the statistics of the series, the CSV and JSON files.

The frames are MDAnalysis' adk (tests/data/mdanalysis): 3 frames of 3,341 atoms.
"""

import csv
import json
import os
import shutil
import subprocess
import sys
import warnings

import numpy as np
import pytest

import espgrid
from conftest import ROOT

mda = pytest.importorskip("MDAnalysis")
from espgrid import frame_energy  # noqa: E402

warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", category=UserWarning)

DATA = os.path.join(ROOT, "tests", "data", "mdanalysis")
ADK_PSF = os.path.join(DATA, "adk.psf.gz")
ADK_DCD = os.path.join(DATA, "adk_dims_head.dcd")
KT_KJ = 1.380649e-23 * 6.02214076e23 * 298.15 / 1000.0  # kT at 298.15 K in kJ/mol
COULOMB_KT = 8.9875517923e9 * 1.602176634e-19 / 1e-10 / (1.380649e-23 * 298.15 / 1.602176634e-19)  # e²/(4πε₀ Å kT)


def frames():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        u = mda.Universe(ADK_PSF, ADK_DCD)
        return u, [ts.positions.astype(np.float64) for ts in u.trajectory], [ts.time for ts in u.trajectory]


def numpy_energy(xyz, q, model="coulomb", dielectric=1.0, kappa=0.0, a=None, b=None):
    """Σ_{i<j} qᵢqⱼ k f(r) (or Σ_{i∈a, j∈b}) in kT, in numpy double, row blocks: an independent sum."""
    rows = np.arange(len(q)) if a is None else a
    cols = np.arange(len(q)) if b is None else b
    total = 0.0
    for start in range(0, len(rows), 256):
        i = rows[start:start + 256]
        d = np.sqrt(((xyz[i, None, :] - xyz[None, cols, :]) ** 2).sum(axis=2) + 1e-8)  # the maps' softening a²
        f = 1.0 / d if model == "coulomb" else np.exp(-kappa * d) / d
        term = q[i, None] * q[None, cols] * f
        if a is None:  # pairs of one group: each once, no atom with itself
            term = np.where(i[:, None] < cols[None, :], term, 0.0)
        total += term.sum()
    return COULOMB_KT / dielectric * total


def test_pair_energies_equal_an_independent_numpy_sum():
    u, xyz, times = frames()
    q = np.asarray(u.atoms.charges, np.float64)
    series = espgrid.frame_energies(ADK_PSF, ADK_DCD, energy_units="kT", progress=False)
    assert series.frames == [0, 1, 2] and np.allclose(series.times, times)
    for k in range(3):
        # Both in double; summation orders differ: 1e-10 relative of the sum of |terms| is far
        # above their rounding (~1e-13) and far below any real difference.
        expected = numpy_energy(xyz[k], q)
        assert abs(series.columns["energy"][k] - expected) < 1e-10 * abs(expected), (k, expected)
    # kJ/mol is kT · RT: the same values scaled.
    kj = espgrid.frame_energies(ADK_PSF, ADK_DCD, progress=False)
    np.testing.assert_allclose(kj.columns["energy"], series.columns["energy"] * KT_KJ, rtol=1e-12)


def test_binding_is_complex_minus_parts_for_debye():
    u, xyz, _ = frames()
    q = np.asarray(u.atoms.charges, np.float64)
    a_sel, b_sel = "resid 1:120", "resid 121:214"
    options = dict(model="debye", ionic_strength=0.15, dielectric=80, energy_units="kT", progress=False)
    series = espgrid.frame_energies(ADK_PSF, ADK_DCD, binding=(a_sel, b_sel), **options)
    assert list(series.columns) == ["complex", "a", "b", "binding"]
    complex_ = espgrid.frame_energies(ADK_PSF, ADK_DCD, select=f"({a_sel}) or ({b_sel})", **options)
    part_a = espgrid.frame_energies(ADK_PSF, ADK_DCD, select=a_sel, **options)
    part_b = espgrid.frame_energies(ADK_PSF, ADK_DCD, select=b_sel, **options)
    c = series.columns
    # The complex's own sum and the parts plus their interaction: the same pairs, in another order.
    np.testing.assert_allclose(c["complex"], complex_.columns["energy"], rtol=1e-12)
    np.testing.assert_allclose(c["a"], part_a.columns["energy"], rtol=0)
    np.testing.assert_allclose(c["b"], part_b.columns["energy"], rtol=0)
    # complex = a + b + binding is how the complex is formed, so complex − a − b gives binding back
    # to the rounding of those two subtractions.
    np.testing.assert_allclose(c["binding"], c["complex"] - c["a"] - c["b"], atol=1e-12 * np.abs(c["complex"]).max())
    # The interaction against numpy: κ of 0.15 M in ε 80 at 298.15 K (Debye length 7.85 Å).
    ia, ib = u.select_atoms(a_sel).ix, u.select_atoms(b_sel).ix
    kappa = 1.0 / 7.8492  # 1/Å; espgrid's own κ from the constants, to 1e-4
    expected = numpy_energy(xyz[0], q, "debye", 80.0, kappa, ia, ib)
    assert abs(c["binding"][0] - expected) < 2e-3 * abs(expected)  # κ given to 5 digits here
    assert c["binding"][0] < 0  # the two halves of adk attract in this frame


def test_overlapping_binding_selections_are_refused():
    with pytest.raises(espgrid.UsageError, match=r"share 7 atoms \(atom 150 first\)"):
        espgrid.frame_energies(ADK_PSF, ADK_DCD, binding=("resid 1:10", "resid 10:20"), progress=False)


def test_statistical_inefficiency_of_known_series():
    rng = np.random.default_rng(3)
    white = rng.normal(size=20000)
    assert 1.0 <= frame_energy.statistical_inefficiency(white) < 1.1
    # AR(1) x_t = φ x_{t−1} + ε: g = (1 + φ)/(1 − φ) = 9 for φ = 0.8. The estimate's spread over
    # seeds at N = 200000 is a few percent: 10%.
    x = np.empty(200000)
    x[0] = 0
    noise = rng.normal(size=len(x))
    for t in range(1, len(x)):
        x[t] = 0.8 * x[t - 1] + noise[t]
    g = frame_energy.statistical_inefficiency(x)
    assert abs(g - 9.0) < 0.9, g
    s = frame_energy.series_summary(x)
    assert s["statistical_inefficiency"] == g and s["effective_samples"] == pytest.approx(len(x) / g)
    assert s["standard_error"] == pytest.approx(np.std(x, ddof=1) * np.sqrt(g / len(x)))
    assert frame_energy.statistical_inefficiency([1.0, 1.0, 1.0]) == 1.0  # no spread
    assert frame_energy.series_summary([2.5])["standard_error"] is None


def run_script(args, cwd):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(espgrid.__file__)),
                                                       os.environ.get("PYTHONPATH", "")]))
    return subprocess.run(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_the_command_line_writes_the_series_and_its_summary(tmp_path):
    r = run_script([sys.executable, "-m", "espgrid", ADK_PSF, ADK_DCD, "--binding", "resid 1:120", "resid 121:214",
                    "--energy-output", "e.csv", "--json", "s.json", "--energy-units", "kcal/mol", "--model", "debye",
                    "--ionic-strength", "0.15", "--dielectric", "80", "--no-progress"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "energy     binding: mean " in r.stdout and "wrote      e.csv" in r.stdout
    rows = list(csv.reader(open(tmp_path / "e.csv")))
    assert rows[0] == ["frame", "time_ps", "complex_kcal_per_mol", "a_kcal_per_mol", "b_kcal_per_mol",
                       "binding_kcal_per_mol"]
    assert [row[0] for row in rows[1:]] == ["0", "1", "2"]
    summary = json.load(open(tmp_path / "s.json"))
    series = espgrid.frame_energies(ADK_PSF, ADK_DCD, binding=("resid 1:120", "resid 121:214"), model="debye",
                                    ionic_strength=0.15, dielectric=80, energy_units="kcal/mol", progress=False)
    assert summary["energies"] == json.loads(json.dumps(series.summary()))
    assert [float(row[5]) for row in rows[1:]] == list(series.columns["binding"])  # every digit written
    # Only the series, on standard output, with --energy-output -.
    r = run_script([sys.executable, "-m", "espgrid", ADK_PSF, ADK_DCD, "--energy-output", "-", "--no-progress"],
                   cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.splitlines()[0] == "frame,time_ps,energy_kJ_per_mol", r.stdout
    assert "energy     energy: mean" in r.stderr


def test_command_line_errors(tmp_path):
    for args, message in [([], "nothing to write"), (["--binding", "resid 1", "resid 2"], "--binding needs"),
                          (["--std-output", "s.dx"], "--std-output needs -o"),
                          (["--energy-output", "-", "--json", "-"], "cannot both be -"),
                          (["--energy-output", "e.dx", "-o", "e.dx"], "named twice"),
                          (["--energy-output", ADK_DCD], "is an input"), (["-o", "m.dx", "--step", "0"], "step=0")]:
        r = run_script([sys.executable, "-m", "espgrid", ADK_PSF, ADK_DCD, *args, "--no-progress"], cwd=tmp_path)
        assert r.returncode == 2 and message in r.stderr, (args, r.stderr)
    assert os.listdir(tmp_path) == []


APBS_ELEC = """elec name {name}
  mg-manual
  dime {dims}
  grid {h} {h} {h}
  gcent {centre}
  mol 1
  lpbe
  bcfl mdh
  pdie 2.0
  sdie {sdie}
{ions}  srfm smol
  chgm spl2
  sdens 10.0
  srad 1.4
  swin 0.3
  temp 298.15
  calcenergy total
  calcforce no
end
"""


def apbs_solvation_kj(pqr, grid, folder):
    """APBS 3.4.1's polar solvation energy (kJ/mol) of `pqr` on `grid`: the total energy with
    sdie 78.54 and 0.15 M salt less with sdie 2 and none, espgrid's PB defaults."""
    import re
    dims = " ".join(map(str, grid.dims))
    centre = " ".join(f"{o + 0.5 * (n - 1) * grid.spacing[0]:.6f}" for o, n in zip(grid.origin, grid.dims))
    ions = "  ion charge 1 conc 0.15 radius 2.0\n  ion charge -1 conc 0.15 radius 2.0\n"
    text = (f"read\n  mol pqr {pqr}\nend\n"
            + APBS_ELEC.format(name="solvated", dims=dims, h=grid.spacing[0], centre=centre, sdie=78.54, ions=ions)
            + APBS_ELEC.format(name="reference", dims=dims, h=grid.spacing[0], centre=centre, sdie=2.0, ions="")
            + "print elecEnergy solvated - reference end\nquit\n")
    (folder / "apbs.in").write_text(text)
    r = subprocess.run(["apbs", "apbs.in"], cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert r.returncode == 0, r.stdout[-2000:]
    return float(re.search(r"Global net ELEC energy = ([-+0-9.eE]+) kJ/mol", r.stdout).group(1))


def test_pb_solvation_energies_per_frame_equal_apbs_on_the_same_frames_and_grid(tmp_path):
    """Issue 37's target: adk's polar solvation energy per frame within 0.1% of APBS's (3 frames)."""
    if shutil.which("apbs") is None:
        pytest.skip("APBS is not installed (Debian: apbs)")
    from espgrid.radii import assign_radii
    u, xyz, _ = frames()
    radii = assign_radii(u.atoms).radii
    grid = espgrid.Grid(origin=(-38.4, -38.4, -38.4), dims=(97, 97, 97), spacing=(0.8, 0.8, 0.8))
    series = espgrid.frame_energies(ADK_PSF, ADK_DCD, model="pb", grid=grid, progress=False)
    assert list(series.columns) == ["solvation"] and series.unit == "kJ/mol"
    for k in range(3):
        pqr = tmp_path / f"frame{k}.pqr"
        with open(pqr, "w") as f:
            for i, (atom, p) in enumerate(zip(u.atoms, xyz[k])):
                f.write(f"ATOM {i + 1:6d} {atom.name:4s} {atom.resname:4s} {atom.resid:5d} {p[0]:.4f} {p[1]:.4f} "
                        f"{p[2]:.4f} {atom.charge:.4f} {radii[i]:.4f}\n")
        expected = apbs_solvation_kj(pqr.name, grid, tmp_path)
        assert abs(series.columns["solvation"][k] - expected) < 1e-3 * abs(expected), (k, expected)
