"""espgrid inside PyMOL: `import espgrid.pymol` (or the plugin manager's "espgrid" entry) adds

    espgrid OBJECT [, model [, spacing [, limit [, isosurfaces [, padding [, options]]]]]]

which maps the loaded object, loads the map as OBJECT_esp with a ramp OBJECT_esp_ramp on ±limit
(5 kT/e: APBS's and the APBS plugin's customary range) and colours OBJECT's surface by it, red
negative, white neutral, blue positive; isosurfaces=1 adds OBJECT_esp_neg and OBJECT_esp_pos at
∓1 kT/e. The charges: the object's own partial charges when it has any (a PQR, a MOL2), else
pdb2pqr's as `espgrid map` assigns them, with the ligands charged by Open Babel, ions by formal
charge and waters dropped (docs/pymol.md). Any model: debye (the default, at 0.15 M in water),
coulomb, distance or pb. `options` takes further `espgrid map` and read_structure keywords as
"name=value" words: "ionic_strength=0.05 ph=7.4 forcefield=CHARMM surface_sampling=4".

    PyMOL> load 1hpv.pdb
    PyMOL> import espgrid.pymol
    PyMOL> espgrid 1hpv
    PyMOL> espgrid 1hpv, pb, 0.5, isosurfaces=1
"""

import hashlib
import os
import shutil
import tempfile
import time

import numpy as np
from pymol import cmd, CmdException

import espgrid

__all__ = ["espgrid_command"]

# What PyMOL's ramp_new gets: red, white and blue at -limit, 0 and +limit (espgrid view's colours).
RAMP_COLOURS = ["red", "white", "blue"]
# Space around the atoms, Å: the surface PyMOL colours lies within a probe radius (1.4 Å) of the
# atoms, and surface_ramp_above_mode samples up to another probe radius outside it.
DEFAULT_PADDING = {"pb": 10.0}  # PB: its boundary values need the room (docs/pb.md, Padding); others 6 Å
DEFAULT_SPACING = {"pb": 0.5}  # PB: APBS's usual fine grid; the pair models 1 Å (a surface needs no finer)
# The medium of the Debye-Hückel model when not given: water at 0.15 M (README, Pair models).
DEBYE_DEFAULTS = {"dielectric": 78.54, "ionic_strength": 0.15}
# read_structure's keywords, the rest are compute_map's.
STRUCTURE_KEYWORDS = ("forcefield", "ph", "keep_water", "keep_chain", "ligand", "ligand_charges", "pdb2pqr_options",
                      "keep_pqr")

# Structures charged by pdb2pqr, by object name and content: a second map of the same atoms
# (another model, another spacing) does not run pdb2pqr again.
_charged = {}


def _words(options):
    """"a=1 b=x, c=2" -> {"a": "1", "b": "x", "c": "2"}."""
    out = {}
    for word in options.replace(",", " ").split():
        if "=" not in word:
            raise CmdException("espgrid: options are name=value words, got %r" % word)
        name, value = word.split("=", 1)
        out[name.strip().replace("-", "_")] = value.strip()
    return out


def _number_or_text(value):
    try:
        return int(value)
    except ValueError:
        pass
    try:
        return float(value)
    except ValueError:
        return value


def _truth(value):
    return str(value).lower() in ("1", "true", "yes", "on")


def _own_charges(obj, _self):
    """The object's own charges as a Structure (its atoms' partial_charge; radii: a PQR's, which
    PyMOL keeps as elec_radius, else PyMOL's vdw by element, as for a MOL2), or None when every
    charge is 0 (a PDB: pdb2pqr assigns them)."""
    model = _self.get_model(obj, state=-1)
    charges = np.array([a.partial_charge for a in model.atom], dtype=np.float64)
    if len(charges) == 0 or not np.any(charges != 0):
        return None
    positions = np.array([a.coord for a in model.atom], dtype=np.float64)
    radii = np.array([a.elec_radius if a.elec_radius > 0 else a.vdw for a in model.atom], dtype=np.float64)
    numbers = []
    for a in model.atom:
        digits = "".join(c for c in str(a.resi) if c.isdigit() or c == "-")
        numbers.append(int(digits) if digits not in ("", "-") else 0)
    return espgrid.structure_from_arrays(
        positions, charges, radii, names=[a.name for a in model.atom], residue_names=[a.resn for a in model.atom],
        residue_numbers=numbers, chains=[a.chain for a in model.atom],
        name="PyMOL object %s (its own partial charges)" % obj)


def _pdb_text(obj, _self):
    """The object as PDB text, polymer first: PyMOL sorts a chainless ligand before chain A, and
    pdb2pqr, reading the ligand first, then misses the first residue's N-terminus (1HPV: one
    charge short). Records keep their serial numbers, so CONECT still applies."""
    polymer, hetero, other = [], [], []
    for line in _self.get_pdbstr(obj, state=-1).splitlines(keepends=True):
        record = line[:6]
        if record == "ATOM  ":
            polymer.append(line)
        elif record == "HETATM":
            hetero.append(line)
        elif record.strip() not in ("TER", "END", "ENDMDL", "MODEL"):
            other.append(line)
    header = [line for line in other if not line.startswith("CONECT")]
    bonds = [line for line in other if line.startswith("CONECT")]
    return "".join(header + polymer + ["TER\n"] + hetero + bonds + ["END\n"])


def _charged_structure(obj, structure_options, _self):
    """The object as pdb2pqr (and Open Babel, for ligands) charges it, from its PDB text."""
    text = _pdb_text(obj, _self)
    key = (obj, hashlib.sha1(text.encode()).hexdigest(), tuple(sorted(structure_options.items())))
    if key in _charged:
        return _charged[key]
    folder = tempfile.mkdtemp(prefix="espgrid-pymol-")
    try:
        path = os.path.join(folder, obj + ".pdb")
        with open(path, "w") as pdb:
            pdb.write(text)
        _charged[key] = espgrid.read_structure(path, **structure_options)
        return _charged[key]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _load_map(phi, name, _self):
    """Loads the map's values as a PyMOL map object (no file: a chempy Brick)."""
    from chempy.brick import Brick
    brick = Brick.from_numpy(np.asarray(phi, dtype=np.float64), phi.spacing, phi.origin)
    _self.delete(name)
    _self.load_brick(brick, name)


def espgrid_command(selection, model="debye", spacing="", limit="5", isosurfaces="0", padding="", options="",
                    quiet="1", _self=cmd):
    """espgrid OBJECT [, model [, spacing [, limit [, isosurfaces [, padding [, options]]]]]]: maps
    OBJECT's electrostatic potential with espgrid and colours its surface by it (module docstring)."""
    start = time.monotonic()
    obj = str(selection).strip()
    if obj not in _self.get_object_list():
        raise CmdException("espgrid: %r is not a loaded molecular object (objects: %s)" %
                           (obj, ", ".join(_self.get_object_list()) or "none"))
    model = str(model).strip().lower() or "debye"
    words = {k: _number_or_text(v) for k, v in _words(str(options)).items()}
    structure_options = {k: words.pop(k) for k in list(words) if k in STRUCTURE_KEYWORDS}
    for switch in ("keep_water", "keep_chain"):
        if switch in structure_options:
            structure_options[switch] = _truth(structure_options[switch])
    map_options = dict(DEBYE_DEFAULTS) if model == "debye" else {}
    map_options.update(words)
    map_options["model"] = model
    map_options["spacing"] = float(spacing) if str(spacing).strip() else DEFAULT_SPACING.get(model, 1.0)
    map_options["padding"] = float(padding) if str(padding).strip() else DEFAULT_PADDING.get(model, 6.0)
    limit = float(limit)
    try:
        structure = _own_charges(obj, _self)
        charges_from = "the object's own partial charges"
        if structure is None:
            structure = _charged_structure(obj, structure_options, _self)
            charges_from = structure.charges_from
        elif structure_options:
            raise CmdException("espgrid: %s has its own charges; %s apply to pdb2pqr's" %
                               (obj, ", ".join(sorted(structure_options))))
        phi = espgrid.compute_map(structure, **map_options)
    except (espgrid.Error, ValueError, TypeError) as error:
        raise CmdException("espgrid: %s" % error)
    name, ramp = obj + "_esp", obj + "_esp_ramp"
    _load_map(phi, name, _self)
    _self.ramp_new(ramp, name, [-limit, 0.0, limit], RAMP_COLOURS)
    surface = "(%s) and not solvent" % obj
    _self.set("surface_color", ramp, obj)
    _self.set("surface_ramp_above_mode", 1, obj)
    _self.show("surface", surface)
    for level, suffix, colour in ((-1.0, "_neg", "red"), (1.0, "_pos", "blue")):
        _self.delete(name + suffix)
        if _truth(isosurfaces):
            _self.isosurface(name + suffix, name, level)
            _self.color(colour, name + suffix)
    lo, hi = phi.range
    print(" espgrid: %s: %s map %s, %.3g to %.3g %s; charges: %s; surface coloured by %s on +-%g %s (%.2f s)" %
          (name, phi.model, "x".join(map(str, phi.shape)), lo, hi, phi.units, charges_from, ramp, limit, phi.units,
           time.monotonic() - start))
    # What pdb2pqr left to espgrid (ligands, ions), always; the rest when quiet=0.
    for tag, text in (structure.report or []):
        if tag in ("ligand", "ion", "left out") or not _truth(quiet):
            print(" espgrid: %-9s %s" % (tag, text))
    return phi


cmd.extend("espgrid", espgrid_command)
cmd.auto_arg[0]["espgrid"] = [cmd.object_sc, "object", ", "]
cmd.auto_arg[1]["espgrid"] = [lambda: cmd.Shortcut(["debye", "coulomb", "distance", "pb"]), "model", ", "]
