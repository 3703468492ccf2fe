"""The potential at every atom, structures with names, and maps, structures and grids that copy.

potential_at_atoms (espgrid sample --at-atoms) against an independent numpy double sum without the
self term for every pair model, and for model="pb" against the PB map sampled at the atoms (APBS's
atompot); residue_values and write_atom_values; names from PQR files and from arrays; pickle and
copy.deepcopy of Structure, Map (pair models and PB) and Grid; np.asarray(map); Grid's arguments.
"""

import copy
import math
import os
import pickle

import numpy as np
import pytest

import espgrid
from conftest import ROOT, run_cli

FAS = os.path.join(ROOT, "data", "fasciculin2.pqr")
K_KT = 560.459  # kT·Å/e² at 298.15 K, CODATA 2018 (README, Grid, physics and units); checked below


@pytest.fixture(scope="module")
def fas():
    return espgrid.read_structure(FAS)


def numpy_atom_potentials(structure, model, dielectric=1.0, ionic_strength=0.0):
    """k/ε Σ_{j≠i} q_j f(r_ij) in double, written out with numpy: no softening, no espgrid code."""
    x = structure.positions
    q = structure.charges
    r = np.sqrt(((x[:, None, :] - x[None, :, :]) ** 2).sum(-1))
    np.fill_diagonal(r, np.inf)  # the self term: 0
    if model == "coulomb":
        f = 1 / r
    elif model == "distance":
        f = 1 / r ** 2
    else:
        # κ² = 2 N_A e² (1000 I) / (ε₀ ε k_B T), 1/Å (README): Debye length 7.86 Å at 0.15 M.
        na, e, eps0, kb, t = 6.02214076e23, 1.602176634e-19, 8.8541878128e-12, 1.380649e-23, 298.15
        kappa = math.sqrt(2 * na * e * e * 1000 * ionic_strength / (eps0 * dielectric * kb * t)) * 1e-10
        f = np.exp(-kappa * r) / r
    terms = K_KT / dielectric * q[None, :] * f
    return terms.sum(1), np.abs(terms).sum(1)


@pytest.mark.parametrize("model, options", [
    ("coulomb", {}), ("distance", {"dielectric": 4.0}),
    ("debye", {"dielectric": 78.54, "ionic_strength": 0.15})])
def test_potential_at_atoms_equals_an_independent_double_sum(fas, model, options):
    got = espgrid.potential_at_atoms(fas, model=model, **options)
    want, scale = numpy_atom_potentials(fas, model, **options)
    assert got.dtype == np.float64 and got.shape == (len(fas),)
    # The target: 1e-6 of the terms' magnitudes (the softening changes a term by ≤ 7e-9 of it at
    # r ≥ 0.9 Å; K_KT's 6 digits are 1e-6 too, so its value is checked against a map below).
    assert np.all(np.abs(got - want) <= 1e-6 * scale), np.max(np.abs(got - want) / scale)


def test_the_constant_is_the_maps(fas):
    # K_KT against espgrid's own: one charge's map at 10 Å is k/10.
    one = espgrid.potential_at([[10.0, 0, 0]], np.zeros((1, 3)), [1.0])
    assert one[0] == pytest.approx(K_KT / 10, rel=2e-6)


def test_pb_at_atoms_is_the_pb_map_sampled_at_the_atoms(fas):
    # APBS's atompot: the map interpolated at each atom's centre (its own charge included).
    got = espgrid.potential_at_atoms(fas, model="pb", spacing=1.5, padding=8)
    phi = espgrid.compute_map(fas, model="pb", spacing=1.5, padding=8)
    np.testing.assert_array_equal(got, phi.sample(fas.positions).astype(np.float64))


def test_residue_values_and_files(fas, tmp_path):
    values = espgrid.potential_at_atoms(fas)
    residues = espgrid.residue_values(fas, values)
    assert len(residues) == 63 and sum(r["atoms"] for r in residues) == len(fas)
    second = residues[1]
    atoms = slice(second["first_atom"], second["first_atom"] + second["atoms"])
    assert (second["residue"], second["number"]) == ("THR", 544)
    assert second["mean"] == pytest.approx(values[atoms].mean(), rel=1e-12)
    assert second["max"] == values[atoms].max() and second["min"] == values[atoms].min()
    espgrid.write_atom_values(tmp_path / "a.pdb", fas, values)
    fields = [line[60:66] for line in open(tmp_path / "a.pdb") if line.startswith(("ATOM", "HETATM"))]
    assert all(line[66:76].strip() == "" for line in open(tmp_path / "a.pdb") if line.startswith("ATOM"))
    # Columns 61-66 with two decimals where they fit, else fewer (the Coulomb values reach -200 kT/e):
    # each within half its last decimal.
    decimals = np.array([len(f.split(".")[1]) if "." in f else 0 for f in fields])
    assert (decimals == 1).any() and (decimals == 2).any()
    np.testing.assert_array_less(np.abs(np.array(fields, dtype=float) - values), 0.5 * 10.0 ** -decimals + 1e-9)
    espgrid.write_atom_values(tmp_path / "r.csv", fas, values, residues=True)
    assert open(tmp_path / "r.csv").readline().startswith("residue,chain,number")
    # The program writes the same per-atom table.
    r = run_cli("sample", FAS, "--at-atoms", "-o", tmp_path / "cli.csv")
    assert r.returncode == 0, r.stderr
    espgrid.write_atom_values(tmp_path / "py.csv", fas, values, column="potential_kT/e")
    assert open(tmp_path / "cli.csv").read() == open(tmp_path / "py.csv").read()
    with pytest.raises(espgrid.UsageError, match="B-factor"):
        espgrid.write_atom_values(tmp_path / "a.pqr", fas, values)


def test_names_from_files_and_arrays(fas):
    assert fas.names[:3] == ["N", "HT1", "HT2"] and fas.residue_names[0] == "NTE"
    assert fas.residue_numbers[0] == 544 and fas.chains[0] == ""
    s = espgrid.structure_from_arrays([[0, 0, 0], [3, 0, 0]], [1, -1], names=["NA", "CL"],
                                      residue_names=["NA", "CL"], residue_numbers=[1, 2], chains=["A", "A"])
    assert s.names == ["NA", "CL"] and list(s.residue_numbers) == [1, 2]
    assert [r["residue"] for r in espgrid.residue_values(s, [1.0, 2.0])] == ["NA", "CL"]
    bare = espgrid.structure_from_arrays([[0, 0, 0]], [1.0])
    assert bare.names is None
    with pytest.raises(espgrid.UsageError, match="has no residues"):
        espgrid.residue_values(bare, [0.0])
    with pytest.raises(espgrid.UsageError, match="names has 1 values for 2 atoms"):
        espgrid.structure_from_arrays([[0, 0, 0], [3, 0, 0]], [1, -1], names=["X"])


# ---- copies --------------------------------------------------------------------------------------------

def test_structures_pickle_and_copy(fas):
    for twin in (pickle.loads(pickle.dumps(fas)), copy.deepcopy(fas), copy.copy(fas)):
        assert twin is not fas
        np.testing.assert_array_equal(twin.positions, fas.positions)
        np.testing.assert_array_equal(twin.charges, fas.charges)
        np.testing.assert_array_equal(twin.radii, fas.radii)
        assert twin.names == fas.names and twin.elements == fas.elements and twin.source == fas.source
        # The same map from either.
        a = espgrid.compute_map(fas, spacing=2.0)
        b = espgrid.compute_map(twin, spacing=2.0)
        np.testing.assert_array_equal(a.values, b.values)


@pytest.mark.parametrize("options", [
    {"model": "debye", "dielectric": 78.54, "ionic_strength": 0.15, "units": "kcal/mol/e"},
    {"model": "pb", "surface": "mol", "probe_radius": 1.2, "surface_sampling": 2},
    {"model": "pb", "pb_formulation": "split", "ionic_strength": 0.05, "backend": "cpu"},
    {"model": "pb", "ion": [(2, 0.05, 2), (-1, 0.1, 1.5)], "boundary": "sdh", "pb_energy": "comps"}])
def test_maps_pickle_and_copy(fas, options):
    phi = espgrid.compute_map(fas, spacing=1.5, padding=6, **options)
    for twin in (pickle.loads(pickle.dumps(phi)), copy.deepcopy(phi)):
        assert twin is not phi
        np.testing.assert_array_equal(twin.values, phi.values)
        assert twin.grid == phi.grid and twin.physics == phi.physics and twin.model == phi.model
        assert twin.model_parameters == phi.model_parameters and twin.kernel == phi.kernel
        assert twin.summary() == phi.summary()
        assert twin.energy == phi.energy  # pb: APBS's total energy, computed with the map
    # Independent: the copy outlives the original.
    twin = copy.deepcopy(phi)
    first = float(phi.values[0, 0, 0])
    del phi
    assert float(twin.values[0, 0, 0]) == first


def test_asarray_of_a_map_is_its_values(fas):
    phi = espgrid.compute_map(fas, spacing=2.0)
    a = np.asarray(phi)
    assert a.shape == phi.shape and a.dtype == np.float32
    np.testing.assert_array_equal(a, phi.values)
    assert np.asarray(phi, dtype=np.float64).dtype == np.float64
    assert np.array(phi).flags.writeable  # np.array copies
    assert np.max(phi) == np.float32(phi.range[1])  # range: the float32 extremes, as Python floats


def test_grid_takes_one_spacing_and_says_what_it_needs():
    g = espgrid.Grid(origin=(0, 0, 0), dims=(3, 4, 5), spacing=1.0)
    assert g.spacing == (1.0, 1.0, 1.0)
    assert espgrid.Grid((0, 0, 0), (3, 4, 5), (1.0, 2.0, 3.0)).spacing == (1.0, 2.0, 3.0)
    assert pickle.loads(pickle.dumps(g)) == g and copy.deepcopy(g) == g
    with pytest.raises(TypeError, match="grid_around"):
        espgrid.Grid(spacing=1.0)
    with pytest.raises(espgrid.UsageError, match="spacing along x must be a positive number"):
        espgrid.Grid(origin=(0, 0, 0), dims=(3, 4, 5), spacing=-1.0)
