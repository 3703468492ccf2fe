"""Atomic radii for Poisson–Boltzmann maps of trajectories whose topology carries none.

A PB map needs every atom's radius (it draws the molecular surface); a PSF or TPR gives charges
but no radii. assign_radii() takes them, for an MDAnalysis AtomGroup, from (radii=):

- None (the default): the topology's own radii where it carries them (a PQR's radius column, a
  PRMTOP's RADII section), otherwise "amber";
- "topology": the topology's radii, an error where it has none;
- "amber" or "parse": PDB2PQR's force-field table by residue and atom name
  (espgrid/radius_tables.py, generated from pdb2pqr's AMBER.DAT and PARSE.DAT), with CHARMM's
  and GROMACS' names (HSD, HN, HT1, OT2, TIP3/OH2, ILE CD, methylene H1/H2 for H2/H3) looked up
  under PDB2PQR's; atoms the table lacks (ions, ligands) get Bondi's radius for their element;
- "bondi": Bondi's van der Waals radius by element for every atom (J. Phys. Chem. 68, 441, 1964);
- a PQR file of the same atoms, in the same order (all of the topology's, or the selection's):
  its radius column; each atom's element must match;
- an array of one radius per selected atom (Å).

The result says where the radii came from, for the summary and the map's header.
"""

import os

import numpy as np

import espgrid

# Bondi (1964), Å. Elements missing here and in the table are an error, never a guess.
BONDI = {"H": 1.20, "HE": 1.40, "LI": 1.82, "C": 1.70, "N": 1.55, "O": 1.52, "F": 1.47, "NE": 1.54, "NA": 2.27,
         "MG": 1.73, "SI": 2.10, "P": 1.80, "S": 1.80, "CL": 1.75, "AR": 1.88, "K": 2.75, "NI": 1.63, "CU": 1.40,
         "ZN": 1.39, "GA": 1.87, "AS": 1.85, "SE": 1.90, "BR": 1.85, "KR": 2.02, "PD": 1.63, "AG": 1.72, "CD": 1.58,
         "IN": 1.93, "SN": 2.17, "TE": 2.06, "I": 1.98, "XE": 2.16, "PT": 1.72, "AU": 1.66, "HG": 1.55, "TL": 1.96,
         "PB": 2.02, "U": 1.86}

# Residue names of CHARMM, GROMACS and PDB files under which PDB2PQR's tables may list them.
_RESIDUES = {"HSD": ["HID", "HIS"], "HSE": ["HIE", "HIS"], "HSP": ["HIP", "HI+", "HIS"], "HIS": ["HID", "HIS"],
             "HIE": ["HIS"], "HIP": ["HI+"], "TIP3": ["WAT", "H2O"], "TIP3P": ["WAT", "H2O"], "SOL": ["WAT", "H2O"],
             "HOH": ["WAT", "H2O"], "WAT": ["H2O"], "SPC": ["WAT", "H2O"], "TIP4": ["WAT", "H2O"],
             "CYS2": ["CYX", "CSS"], "CYX": ["CSS"], "ASPP": ["ASH", "AS0"], "ASH": ["AS0"], "GLUP": ["GLH", "GL0"],
             "GLH": ["GL0"], "LSN": ["LYN", "LY0"], "LYN": ["LY0"]}
# Atom names (any residue) and what PDB2PQR's tables call them.
_ATOMS = {"HN": ["H"], "H": ["HN"], "HT1": ["H1", "H"], "HT2": ["H2"], "HT3": ["H3"], "OT1": ["O", "OXT"],
          "OT2": ["OXT", "O2"], "OXT": ["O2"], "OH2": ["O", "OW", "OH2"], "OW": ["O"], "O": ["OW"], "H1": ["HW", "H"],
          "H2": ["HW"], "HW1": ["HW", "H1"], "HW2": ["HW", "H2"], "CD": ["CD1"], "HD1": ["HD11"], "HD2": ["HD12"],
          "HD3": ["HD13"], "HG1": ["HG"]}
_WATERS = {"TIP3", "TIP3P", "SOL", "HOH", "WAT", "SPC", "TIP4", "H2O"}


class RadiusAssignment:
    """radii (Å, one per selected atom, float64) and `description`: where they came from."""

    def __init__(self, radii, description, source):
        self.radii = np.asarray(radii, dtype=np.float64)
        self.description = description
        self.source = source  # "topology", "pqr", "amber", "parse", "bondi" or "given"

    def __repr__(self):
        return f"<RadiusAssignment {len(self.radii)} atoms: {self.description}>"


_parsed = {}


def table(force_field):
    """{residue: {atom: radius}} of PDB2PQR's "amber" or "parse" table."""
    if force_field not in _parsed:
        from espgrid import radius_tables
        rows = radius_tables.TABLES[force_field]
        parsed = {}
        for residue, text in rows.items():
            fields = text.split()
            parsed[residue] = {fields[i]: float(fields[i + 1]) for i in range(0, len(fields), 2)}
        _parsed[force_field] = parsed
    return _parsed[force_field]


def _candidates(residue, atom):
    """(residue, atom) names to look up, in order: as given, then aliases, then PDB2PQR's
    terminal residues (N-/C- prefixed), then a hydrogen's last digit one higher (CHARMM numbers
    methylene hydrogens 1, 2 where Amber has 2, 3)."""
    residues = [residue] + _RESIDUES.get(residue, [])
    residues += [p + r for r in list(residues) for p in ("N", "C")]
    atoms = [atom] + _ATOMS.get(atom, [])
    if residue in _WATERS:
        atoms += ["OW", "O"] if atom.startswith("O") else ["HW", "H1"]
    if atom.startswith("H") and atom[-1:].isdigit() and atom[-1] != "9":
        atoms.append(atom[:-1] + str(int(atom[-1]) + 1))
    return [(r, a) for a in atoms for r in residues]


def element_of(group_atom):
    """The element (upper case) of an MDAnalysis atom: the topology's, else MDAnalysis's guess from its name."""
    element = getattr(group_atom, "element", None) if _has(group_atom, "element") else None
    if element:
        return str(element).upper()
    from MDAnalysis.topology.guessers import guess_atom_element
    return str(guess_atom_element(group_atom.name)).upper()


def _has(atom, attribute):
    try:
        getattr(atom, attribute)
        return True
    except (AttributeError, Exception):  # MDAnalysis's NoDataError is an AttributeError; be safe
        return False


def _label(atom):
    return f"{atom.name} {atom.resname} {atom.resid}"


def _bondi(atom, why):
    element = element_of(atom)
    if element not in BONDI:
        raise espgrid.UsageError(f"atom {atom.index} ({_label(atom)}) {why}, and its element {element!r} has no "
                                 "Bondi radius: give radii (a PQR of the same atoms, or an array)")
    return BONDI[element]


def _from_table(group, force_field, label):
    from espgrid import radius_tables
    rows = table(force_field)
    radii = np.empty(len(group))
    fallback = []
    for i, atom in enumerate(group):
        for residue, name in _candidates(atom.resname, atom.name):
            radius = rows.get(residue, {}).get(name)
            if radius is not None:
                radii[i] = radius
                break
        else:
            radii[i] = _bondi(atom, f"is not in the {label} table")
            fallback.append(atom)
    found = len(group) - len(fallback)
    description = f"{label} table ({radius_tables.SOURCES[force_field]}) for {found:,} atoms"
    if fallback:
        kinds = []
        for atom in fallback:
            kind = f"{atom.resname} {atom.name}"
            if kind not in kinds:
                kinds.append(kind)
        shown = ", ".join(kinds[:6]) + (f", ... ({len(kinds)} kinds)" if len(kinds) > 6 else "")
        description += f"; Bondi by element for {len(fallback):,} ({shown})"
    return RadiusAssignment(radii, description, force_field)


def prmtop_radii(path):
    """The RADII section of an AMBER PRMTOP (one radius per atom, Å) and its RADIUS_SET line, or
    (None, None) when the file has no such section."""
    opener = open
    if path.endswith(".gz"):
        import gzip
        opener = gzip.open
    values, radius_set, section = [], None, None
    with opener(path, "rt") as f:
        for line in f:
            if line.startswith("%FLAG"):
                section = line.split()[1] if len(line.split()) > 1 else None
                continue
            if line.startswith("%FORMAT") or line.startswith("%COMMENT"):
                continue
            if section == "RADII":
                values.extend(line[i:i + 16] for i in range(0, len(line.rstrip("\n")), 16))
            elif section == "RADIUS_SET" and radius_set is None and line.strip():
                radius_set = line.strip()
    if not values:
        return None, None
    try:
        return np.array([float(v) for v in values if v.strip()]), radius_set
    except ValueError as e:
        raise espgrid.InputError(f"{path}: the RADII section holds a value that is not a number ({e})") from e


def _without_gz(path):
    text = path.lower()
    return text[:-3] if text.endswith(".gz") else text


def _topology_radii(group):
    """(radii, description) the topology carries, or (None, None)."""
    universe = group.universe
    path = getattr(universe, "filename", None)
    if isinstance(path, str) and _without_gz(path).endswith((".prmtop", ".parm7", ".top")):
        radii, radius_set = prmtop_radii(path)
        if radii is not None:
            if len(radii) != len(universe.atoms):
                raise espgrid.InputError(f"{path}: the RADII section holds {len(radii)} values for "
                                         f"{len(universe.atoms)} atoms")
            what = f"{os.path.basename(path)}'s RADII section" + (f" ({radius_set})" if radius_set else "")
            return radii[group.ix], f"the topology, {what}"
    try:
        radii = np.asarray(group.radii, dtype=np.float64)
    except AttributeError:  # NoDataError: no radii in this topology
        return None, None
    if isinstance(path, str) and _without_gz(path).endswith(".pqr"):
        return radii, f"the topology, {os.path.basename(path)}'s radius column"
    return radii, "the topology's radii"


def _read_pqr(path):
    """The PQR's atoms as MDAnalysis reads them (names, residues, radii); InputError naming the file."""
    import warnings
    import MDAnalysis as mda
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return mda.Universe(path, format="PQR", topology_format="PQR").atoms
    except Exception as e:  # MDAnalysis raises many kinds
        raise espgrid.InputError(f"{path}: MDAnalysis cannot read this PQR: {str(e).strip() or type(e).__name__}") from e


def _residues(atoms):
    """Consecutive runs of atoms of one residue: [(resid, resname, [atoms])]."""
    runs = []
    for atom in atoms:
        key = (atom.resid, atom.resname, getattr(atom, "segid", ""))
        if not runs or runs[-1][0] != key:
            runs.append((key, []))
        runs[-1][1].append(atom)
    return runs


def _match_by_name(universe_atoms, pqr, path):
    """For each of the topology's atoms, the index of the PQR atom of the same residue (the n-th
    residue of each, in order) with the same name, or one of its names in PDB2PQR's tables (PDB2PQR
    renames CHARMM's atoms and reorders them within residues)."""
    mine, theirs = _residues(universe_atoms), _residues(pqr)
    if len(mine) != len(theirs):
        raise espgrid.UsageError(f"{path} holds {len(pqr)} atoms in {len(theirs)} residues, the topology "
                                 f"{len(universe_atoms)} atoms in {len(mine)}: not the same atoms, so its radii "
                                 "cannot be matched")
    index = np.empty(len(universe_atoms), dtype=np.int64)
    for (key, atoms), (_, others) in zip(mine, theirs):
        free = {a.name: a.ix for a in others}
        pending = []
        for atom in atoms:  # exact names first, so an alias never takes another atom's own name
            if atom.name in free:
                index[atom.ix] = free.pop(atom.name)
            else:
                pending.append(atom)
        for atom in pending:
            # Its names in the tables, then a free atom of the same name but for the numbering
            # (CHARMM's HB1, HB2 are a PDB's HB2, HB3: equivalent atoms, the same radius).
            stem = atom.name.rstrip("0123456789")
            names = [n for _, n in _candidates(atom.resname, atom.name)]
            names += sorted(n for n in free if n.rstrip("0123456789") == stem and n != stem)
            for name in names:
                if name in free:
                    index[atom.ix] = free.pop(name)
                    break
            else:
                raise espgrid.UsageError(f"{path} has no atom matching the topology's atom {atom.index} "
                                         f"({_label(atom)}) in its residue {others[0].resname} {others[0].resid}: "
                                         "radii come from a PQR of the same atoms")
    return index


def _from_pqr(group, path):
    universe = group.universe
    pqr = _read_pqr(path)
    radii = np.asarray(pqr.radii, np.float64)
    if len(pqr) == len(universe.atoms):
        base = universe.atoms
    elif len(pqr) == len(group):
        base = group
    else:
        raise espgrid.UsageError(f"{path} holds {len(pqr)} atoms, but the topology has {len(universe.atoms)} and the "
                                 f"selection {len(group)}: radii come from a PQR of the same atoms")
    same_order = all(element_of(a) == element_of(b) for a, b in zip(base, pqr))
    how = "in the same order"
    if same_order:
        index = np.arange(len(base))
    else:
        index = _match_by_name(base, pqr, path)
        how = "matched by residue and atom name"
    position = np.searchsorted(base.ix, group.ix)  # each selected atom's place in `base`
    return RadiusAssignment(radii[index[position]], f"{os.path.basename(path)}'s radius column ({how})", "pqr")


def assign_radii(group, radii=None):
    """A RadiusAssignment for the MDAnalysis AtomGroup `group` (see the module's docstring)."""
    if radii is None or (isinstance(radii, str) and radii == "topology"):
        found, description = _topology_radii(group)
        if found is not None:
            return RadiusAssignment(found, description, "topology")
        if radii == "topology":
            raise espgrid.UsageError("radii='topology', but the topology carries no radii (a PSF or TPR has none): "
                                     "use 'amber', 'parse', 'bondi' or a PQR of the same atoms")
        return _from_table(group, "amber", "AMBER")
    if isinstance(radii, (str, os.PathLike)):
        text = os.fspath(radii)
        if text.lower() in ("amber", "parse"):
            return _from_table(group, text.lower(), text.upper())
        if text.lower() == "bondi":
            return RadiusAssignment([_bondi(a, "needs a radius") for a in group],
                                    f"Bondi by element for {len(group):,} atoms", "bondi")
        if not os.path.exists(text):
            raise espgrid.UsageError(f"radii {text!r} is neither 'topology', 'amber', 'parse', 'bondi' nor an existing "
                                     "PQR file")
        return _from_pqr(group, text)
    values = np.asarray(radii, dtype=np.float64)
    if values.shape != (len(group),):
        raise espgrid.UsageError(f"radii hold {values.size} values for {len(group)} selected atoms")
    return RadiusAssignment(values, f"given for {len(group):,} atoms", "given")
