"""espgrid: electrostatic potential maps by direct Coulomb summation, from Python.

    import espgrid
    fas = espgrid.read_structure("data/fasciculin2.pqr")          # or .pdb/.cif: charges from pdb2pqr
    phi = espgrid.compute_map(fas, spacing=1.0)                    # any `espgrid map` option as a keyword
    phi.values[i, j, k]                                            # kT/e at phi.origin + (i, j, k) * phi.spacing
    phi.write("fas.dx", "fas.vti")

    phi = espgrid.compute_map(positions, charges, kernel="cpu-reference", units="kcal/mol/e")
    avg = espgrid.average_map("top.psf", "traj.dcd", select="protein", std=True)
    espgrid.potential_at(points, fas)                              # the exact potential at (N, 3) points
    phi.sample(points)                                             # the map interpolated there
    phi.summary()                                                  # what `espgrid map --json` writes

The calls go through espgrid's C++ library (the same facade as the `espgrid` program), so a
map equals the program's bit for bit for the same inputs and options. Keywords are the Grid,
Physics and Compute options of `espgrid map --help` with '-' written '_' (spacing, padding,
origin, dims, units, dielectric, temperature, model, kernel, backend, device, devices,
threads, and whatever those groups gain); they are parsed and checked by the program's own
code (the map job's option table), so their defaults and messages are the program's. The
reference is docs/python.md.
"""

import json as _json
import os

import numpy as _np

from . import _espgrid
from ._espgrid import Error, FrameAverage, Grid, InputError, Map, Structure, UsageError, __version__

__all__ = [
    "Error", "Grid", "InputError", "Map", "Structure", "UsageError", "View", "__version__", "average_map", "compute_map",
    "binding_energy", "cuda_available", "frame_energies", "grid_around", "kernels", "map_from_values", "map_options",
    "potential_at", "potential_at_atoms", "read_map", "read_structure", "residue_values", "solvation_energy",
    "structure_from_arrays", "write_atom_values",
]


def map_options(**options):
    """The Grid, Physics and Compute options of `espgrid map`, checked by the program's parser
    (src/job/job_options.h): typed values (numbers, sequences, text) go to the same checks as the
    program's words, with the same messages. None means "not given"."""
    return _espgrid.map_options(options)


def _with_grid(grid, options):
    """Folds grid=Grid(...) into origin/dims/spacing, refusing a second description of the grid."""
    if grid is None:
        return options
    if not isinstance(grid, Grid):
        raise TypeError(f"grid must be an espgrid.Grid, got {type(grid).__name__}")
    clash = [k for k in ("spacing", "padding", "origin", "dims", "center", "length") if options.get(k) is not None]
    if clash:
        raise TypeError(f"give grid= or {', '.join(clash)}=, not both")
    return dict(options, origin=grid.origin, dims=grid.dims, spacing=grid.spacing)


def read_structure(path, format=None, *, forcefield=None, ph=None, keep_pqr=None, keep_water=False,
                   keep_chain=False, ligand=None, ligand_charges=None, pdb2pqr_options=None):
    """Reads a structure as `espgrid map` does: .pqr and .xyz directly; .pdb and .cif through
    pdb2pqr30 (forcefield, default AMBER; ph through PROPKA and for the ligands' hydrogens;
    keep_pqr: where to keep the PQR of every atom, default nowhere), with the ligands pdb2pqr has
    no template for charged by Open Babel (ligand_charges: "mmff94", "gasteiger" or "none"), ions
    by formal charge, waters dropped unless keep_water; keep_chain, ligand (a MOL2 file pdb2pqr
    charges itself) and pdb2pqr_options (its --nodebump, --noopt, ...) go to pdb2pqr. Raises
    InputError (a ValueError with .file and .line) for a defect."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(2, "No such file or directory", path)
    pdb_options = dict(keep_water=keep_water or None, keep_chain=keep_chain or None, ligand=ligand,
                       ligand_charges=ligand_charges, pdb2pqr_options=pdb2pqr_options)
    return _espgrid.read_structure(path, format, forcefield, ph,
                                   os.fspath(keep_pqr) if keep_pqr is not None else None, pdb_options)


def structure_from_arrays(positions, charges, radii=None, *, names=None, residue_names=None, residue_numbers=None,
                          chains=None, name="positions and charges from Python"):
    """A Structure from (N, 3) positions (Å) and N charges (e), with optional radii (Å) and the
    atoms' names and residues (sequences of N values), which per-atom and per-residue tables
    (potential_at_atoms, residue_values, write_atom_values) use."""
    return _espgrid.structure_from_arrays(positions, charges, radii, name, names, residue_names, residue_numbers,
                                          chains)


def _is_mdanalysis(atoms):
    """An MDAnalysis AtomGroup or Universe (told by its module: MDAnalysis is not imported here)."""
    return type(atoms).__module__.split(".")[0] == "MDAnalysis"


def _structure(atoms, charges, radii, unwrap=None):
    if _is_mdanalysis(atoms):
        if charges is not None or radii is not None:
            raise TypeError("charges come with the MDAnalysis atoms; give them only with positions")
        from .trajectory import structure_of_atoms
        return structure_of_atoms(atoms, unwrap)
    if unwrap is not None:
        raise TypeError("unwrap= applies to MDAnalysis AtomGroups and Universes (their periodic box and bonds)")
    if isinstance(atoms, Structure):
        if charges is not None or radii is not None:
            raise TypeError("charges and radii come with the Structure; give them only with positions")
        return atoms
    if isinstance(atoms, (str, bytes, os.PathLike)):
        if charges is not None or radii is not None:
            raise TypeError("charges and radii come from the file; give them only with positions")
        return read_structure(atoms)
    if charges is None:
        raise TypeError("positions need charges: compute_map(positions, charges, ...), or give a Structure, a file "
                        "name or an MDAnalysis AtomGroup/Universe with charges")
    return _espgrid.structure_from_arrays(atoms, charges, radii)


def grid_around(atoms, charges=None, **options):
    """The grid `espgrid map` would place around a structure (or an (N, 3) array of positions,
    Å) with these options: the atoms' bounding box plus padding, at spacing."""
    if _is_mdanalysis(atoms):
        atoms = _np.asarray(atoms.atoms.positions, dtype=_np.float64)  # no charges needed
    elif isinstance(atoms, (Structure, str, bytes, os.PathLike)):
        atoms = _structure(atoms, None, None).positions
    return _espgrid.grid_around(map_options(**options), atoms)


def compute_map(atoms, charges=None, *, radii=None, grid=None, progress=None, unwrap=None, **options):
    """The potential of `atoms` on a grid, as an espgrid.Map.

    atoms: a Structure, a file name (read with read_structure), an MDAnalysis AtomGroup or
    Universe (its current frame's positions and its topology's charges; unwrap=True makes its
    molecules whole across the periodic box first, which needs bonds), or an (N, 3) array of
    positions in Å together with `charges` (N values, e). grid: an espgrid.Grid (otherwise the options
    spacing/padding or origin/dims place it, as `espgrid map` does). progress: a callable
    progress(planes_done, planes) called from this thread. Every other keyword is an
    `espgrid map` option: spacing, padding, origin, dims, units, dielectric, temperature, model,
    kernel, backend, device, devices, threads, ...

    The GIL is released while the kernel runs; Ctrl-C stops it (KeyboardInterrupt) at the
    next plane. A missing GPU raises espgrid.Error (a RuntimeError) naming why.
    """
    structure = _structure(atoms, charges, radii, unwrap)
    options = _with_grid(grid, _ion_keyword(options))
    return _espgrid.compute(structure, map_options(**options), progress)


def potential_at(points, atoms, charges=None, *, radii=None, progress=None, unwrap=None, **options):
    """The exact potential at each of `points` ((N, 3) Å, or one (3,) point) as a float32 array
    of N values in the units asked for: the direct sum over `atoms` (anything compute_map takes)
    with the pair model and medium of the Physics options (units, dielectric, temperature, model,
    ionic_strength, ...). backend="cpu" sums in double precision on `threads` threads; "cuda" in
    float32 on `device`; "auto" (the default) takes a GPU when there is one, as compute_map does.
    progress(points_done, points) is called from this thread. `espgrid sample` on the command
    line; Map.sample interpolates a map instead. Raises UsageError for model="pb" (sample its
    map) and the grid and map-kernel options (spacing, kernel, accuracy, ...), which do not
    apply to points."""
    structure = _structure(atoms, charges, radii, unwrap)
    for name in ("spacing", "padding", "origin", "dims", "center", "length", "grid"):
        if options.get(name) is not None:
            raise TypeError(f"{name}= places a map's grid; potential_at takes points")
    values, _ = _espgrid.potential_at(points, structure, map_options(**options), progress)
    return values


def potential_at_atoms(atoms, charges=None, *, radii=None, progress=None, unwrap=None, **options):
    """The potential at every atom from every other charge, as a float64 array (one value an
    atom, in `units`): `espgrid sample --at-atoms`. Pair models: the exact sum over the other
    atoms in double precision on the CPU (the atom's own term left out). model="pb": APBS's
    atompot, the PB map (the Grid options place it) interpolated at each atom's centre.
    progress(done, total) is called from this thread (atoms; PB: the map's planes)."""
    structure = _structure(atoms, charges, radii, unwrap)
    values, _ = _espgrid.potential_at_atoms(structure, map_options(**options), progress)
    return values


def residue_values(structure, values):
    """Each residue's mean, lowest and highest of `values` (one an atom, e.g. potential_at_atoms'),
    with its atoms' count and charge, as a list of dicts in the structure's order. Needs a
    structure with residues (PQR, PDB/mmCIF, or arrays with names)."""
    return _espgrid.residue_values(_structure(structure, None, None), values)


def write_atom_values(path, structure, values, *, residues=False, column="potential"):
    """Writes `values` (one an atom) as `espgrid sample --at-atoms` does: a .csv with a row an atom
    (the values in the last column, named `column`; the program names it potential_UNIT), a .pdb
    with the value as each atom's B-factor, or with residues=True each residue's mean, lowest and
    highest (.csv)."""
    _espgrid.write_atom_values(os.fspath(path), _structure(structure, None, None), values, residues=residues,
                               column=column)


def _array(self, dtype=None, copy=None):
    """np.asarray(map): the (nx, ny, nz) values, the read-only view `values` is (copied when a dtype
    or copy=True asks for it)."""
    values = self.values
    if dtype is not None and _np.dtype(dtype) != values.dtype:
        return values.astype(dtype)
    return _np.array(values) if copy else values


def _sample(self, points):
    """The map's values at `points` ((N, 3) Å, or one (3,) point) as a float32 array, interpolated
    trilinearly from the 8 grid points around each (the rule `espgrid view` and `espgrid sample
    --map` use). A point outside the map's box (beyond a millionth of a spacing) raises
    UsageError naming it; so does a point where the map is not finite."""
    return _espgrid.sample_map(self, points)


def _summary(self):
    """The map's whole record as a dict: what `espgrid map --json` writes (grid, kernel, device,
    timing, range, model and its parameters, provenance, files written), whose keys are this
    Map's attributes."""
    return _json.loads(_espgrid.map_summary_json(self))


Map.__array__ = _array
Map.sample = _sample
Map.summary = _summary
Map.range = property(lambda self: tuple(self.summary()["range"] or (None, None)),
                     doc="(min, max) of the map's finite values, in its units")
Map.model_parameters = property(lambda self: _json.loads(_espgrid.map_summary_json(self, "model_parameters")),
                                doc="the model's name, description and parameters (dict)")
Map.provenance = property(lambda self: self.summary()["provenance"],
                          doc="where the map came from: espgrid version, input, atoms, total charge, pdb2pqr, time")
Map.energy = property(lambda self: _json.loads(_espgrid.map_summary_json(self, "energy")),
                      doc="model='pb': the energies computed with the map (pb_energy='total' by default: APBS's "
                          "total electrostatic energy in kT and kJ/mol; 'comps' adds its terms and per-atom "
                          "energies; solvation_energy=True, binding_parts=[...] add those); None otherwise")
Map.outputs = property(lambda self: self.summary()["outputs"], doc="the files write() wrote, in order")
Map.timing = property(lambda self: _json.loads(_espgrid.map_summary_json(self, "timing")),
                      doc="seconds of each stage (read, prepare, kernel, transfer, write, total), atom-evaluations "
                          "and their rate, as `espgrid map --json` records them")


def _ion_keyword(options):
    """ion=[(z, c, r), ...] (several species) becomes the option table's text "z,c,r;z,c,r"."""
    ion = options.get("ion")
    if ion is not None and not isinstance(ion, str):
        items = list(ion)
        if items and all(isinstance(i, (list, tuple, _np.ndarray)) for i in items):
            options = dict(options, ion=";".join(",".join(repr(float(v)) for v in species) for species in items))
    return options


def solvation_energy(atoms, charges=None, *, radii=None, grid=None, **options):
    """The PB solvation energy of `atoms` (anything compute_map takes) as a dict: two solves on one
    grid (the solvated one with these options, model="pb", and the reference with the solvent
    dielectric set to the solute's and no ions), each APBS's total electrostatic energy;
    {"solvated", "reference", "energy"} in kJ/mol, plus "kT" the same in kT and "map" the solvated Map."""
    options = dict(options, model="pb", solvation_energy=True)
    options.setdefault("pb_energy", "total")
    m = compute_map(atoms, charges, radii=radii, grid=grid, **options)
    e = m.energy
    s = e["solvation"]
    return {"solvated": e["total"]["kJ_per_mol"], "reference": s["reference"]["kJ_per_mol"],
            "energy": s["energy"]["kJ_per_mol"],
            "kT": {"solvated": e["total"]["kT"], "reference": s["reference"]["kT"], "energy": s["energy"]["kT"]},
            "map": m}


def binding_energy(complex, parts, *, grid=None, **options):
    """The PB binding energy E(complex) − Σ E(part), each APBS's total electrostatic energy of a
    solve with these options (model="pb") on the complex's grid, as a dict {"complex", "parts",
    "energy"} in kJ/mol (and "kT"). complex and each part: a Structure or a file name (charges and
    radii with them)."""
    options = dict(options, model="pb")
    options.setdefault("pb_energy", "total")
    whole = compute_map(complex, grid=grid, **options)
    on_grid = {k: v for k, v in options.items() if k not in ("spacing", "padding", "origin", "dims")}
    energies = [compute_map(p, grid=whole.grid, **on_grid).energy["total"] for p in parts]
    total = whole.energy["total"]
    return {"complex": total["kJ_per_mol"], "parts": [e["kJ_per_mol"] for e in energies],
            "energy": total["kJ_per_mol"] - sum(e["kJ_per_mol"] for e in energies),
            "kT": {"complex": total["kT"], "parts": [e["kT"] for e in energies],
                   "energy": total["kT"] - sum(e["kT"] for e in energies)}}


def map_from_values(values, grid, *, like=None, source="", **options):
    """A Map holding `values` ((nx, ny, nz), any float array) on `grid`, with the physics of the
    map `like` or of the Physics options given (units, dielectric, ...): for writing maps made
    in Python (an average, a difference) with espgrid's writers."""
    return _espgrid.map_from_values(values, grid, like, map_options(**options), source)


def read_map(path, units=None):
    """Reads a map file as an espgrid.Map: any format espgrid writes (.dx, .dx.gz, .mrc/.map/.ccp4,
    .vti) or an APBS .dx, through the program's readers (the checks of `espgrid convert`)."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(2, "No such file or directory", path)
    return _espgrid.read_map(path, units)


def kernels():
    """The kernel registry: one dict per variant (name, backend, role, accuracy, error_bound,
    reproducibility, models, flops_per_evaluation, serial, summary, runnable)."""
    return _espgrid.kernels()


def cuda_available():
    """(True, "") when CUDA kernels can run here, else (False, why not)."""
    return _espgrid.cuda_available()


def average_map(*args, **kwargs):
    """The potential averaged over a trajectory's frames (espgrid.trajectory.average_map)."""
    from .trajectory import average_map as _average_map
    return _average_map(*args, **kwargs)


average_map.__doc__ = "The potential averaged over a trajectory's frames; see espgrid.trajectory.average_map."


def frame_energies(*args, **kwargs):
    """Electrostatic energies per trajectory frame (espgrid.trajectory.frame_energies)."""
    from .trajectory import frame_energies as _frame_energies
    return _frame_energies(*args, **kwargs)


# Map.view and the notebook display of its page (python/espgrid/view.py).
from .view import View, view as _view  # noqa: E402

Map.view = _view


# APBS input files: espgrid.apbs.run("apbs.in") (python/espgrid/apbs.py).
from . import apbs  # noqa: E402,F401
