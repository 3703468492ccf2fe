#!/usr/bin/python3
"""Charges for the molecules pdb2pqr has no template for, by Open Babel (Debian python3-openbabel).

espgrid runs this program (src/structure/ligand_charges.cpp) on a PDB file holding the heavy atoms
(and any hydrogens) of the residues to charge, which espgrid wrote with clean element columns:

    openbabel_charges.py --ph 7.0 --charges mmff94 ligands.pdb ligands.pqr

It reads the file with Open Babel (bonds from CONECT records where there are any, else from the
distances; bond orders perceived), splits it into molecules (connected atoms, which may span
residues: a glycan), adds hydrogens for the pH (Open Babel's pH model: carboxylates, ammonium
groups, ...), and gives each molecule partial charges: MMFF94's (the default), or Gasteiger's
where asked or where MMFF94 has no atom types for the molecule (a metal, boron). Out:

  * ligands.pqr: one HETATM record an atom, the input's names and residues, added hydrogens
    named H1, H2, ... within their residue (after any H names the residue already has), radius
    0 (espgrid gives Bondi radii by element), element symbol last;
  * on standard output, one line a molecule, tab-separated:
        MOLECULE <first serial> <atoms> <hydrogens added> <formal charge> <charge model> <sum of charges> <note>

Exit 0 when every molecule was charged with charges summing to its formal charge (1e-3 e); 1
with a message on standard error otherwise. Nothing is guessed here: espgrid reports every line.
"""
import argparse
import math
import sys


def fail(message):
    print("openbabel_charges: " + message, file=sys.stderr)
    sys.exit(1)


try:
    from openbabel import openbabel as ob
except ImportError as error:  # the message espgrid shows says which package to install
    fail("cannot import Open Babel's Python module (Debian: apt-get install python3-openbabel): %s" % error)

# Charges whose sum is further than this from the formal charge are a failure of the model.
SUM_TOLERANCE = 1e-3


def read_molecule(path):
    conversion = ob.OBConversion()
    if not conversion.SetInFormat("pdb"):
        fail("Open Babel cannot read PDB files")
    molecule = ob.OBMol()
    if not conversion.ReadFile(molecule, path):
        fail("Open Babel could not read %s" % path)
    return molecule


def charge_with(model_name, molecule):
    """The partial charges of `model_name`, or None with why not."""
    model = ob.OBChargeModel.FindType(model_name)
    if model is None:
        return None, "Open Babel has no %s charge model" % model_name
    if not model.ComputeCharges(molecule):
        return None, "%s has no parameters for this molecule" % model_name.upper()
    charges = [atom.GetPartialCharge() for atom in ob.OBMolAtomIter(molecule)]
    if not all(math.isfinite(q) for q in charges):
        return None, "%s gave charges that are not finite" % model_name.upper()
    formal = sum(atom.GetFormalCharge() for atom in ob.OBMolAtomIter(molecule))
    if abs(sum(charges) - formal) > SUM_TOLERANCE:
        return None, "%s charges sum to %.4f e, not the formal charge %+d" % (model_name.upper(), sum(charges), formal)
    return charges, ""


def position_key(x, y, z):
    return (round(x * 1000), round(y * 1000), round(z * 1000))


def read_labels(path):
    """The name, residue name, chain and residue number (with insertion code) of each atom of the
    PDB file, by position: Open Babel keeps coordinates but loses some residues (an acetate
    came back as UNL), so the labels are taken from the file itself."""
    labels = {}
    with open(path) as pdb:
        for line in pdb:
            if line.startswith(("ATOM  ", "HETATM")):
                key = position_key(float(line[30:38]), float(line[38:46]), float(line[46:54]))
                labels[key] = (line[12:16].strip(), line[17:21].strip(), line[21].strip(), line[22:27].strip())
    return labels


def label_atoms(molecule, labels):
    """Each atom's label: its own where the file has its position, else (an added hydrogen) its
    heavy neighbour's residue with the name H1, H2, ... unused in that residue."""
    out, used, counters = [], {}, {}
    for atom in ob.OBMolAtomIter(molecule):
        label = labels.get(position_key(atom.GetX(), atom.GetY(), atom.GetZ()))
        out.append(label)
        if label:
            used.setdefault(label[1:], set()).add(label[0])
    for i, atom in enumerate(ob.OBMolAtomIter(molecule)):
        if out[i]:
            continue
        parent = next((n for n in ob.OBAtomAtomIter(atom)), None)
        parent_label = out[parent.GetIdx() - 1] if parent is not None else None
        if parent_label is None:
            fail("an added hydrogen has no labelled neighbour (atom %d)" % atom.GetIdx())
        residue = parent_label[1:]
        names = used.setdefault(residue, set())
        n = counters.get(residue, 0) + 1
        while "H%d" % n in names:
            n += 1
        counters[residue] = n
        names.add("H%d" % n)
        out[i] = ("H%d" % n,) + residue
    return out


def pqr_line(serial, atom, label, charge):
    name, resname, chain, number = label
    symbol = ob.GetSymbol(atom.GetAtomicNum())
    return "HETATM %5d %-4s %-4s %s%5s %11.6f %11.6f %11.6f %10.6f %6.4f %s\n" % (
        serial, name, resname, chain + " " if chain else "", number, atom.GetX(), atom.GetY(), atom.GetZ(), charge,
        0.0, symbol)


def formal_charge(molecule):
    return sum(atom.GetFormalCharge() for atom in ob.OBMolAtomIter(molecule))


# Open Babel's pH model has no rule for the free inorganic oxoacids (its sulfate and phosphate
# rules need an ester's carbon), so it makes sulfate and phosphate neutral acids. Their pKa
# values (CRC Handbook of Chemistry and Physics, 25 °C): a proton stays on while pH < pKa.
# Nitric acid too: Open Babel leaves nitrate protonated.
OXOACID_PKA = {16: (-3.0, 1.99), 15: (2.15, 7.20, 12.35), 6: (6.35, 10.33), 7: (-1.4,)}
OXOACID_OXYGENS = {16: 4, 15: 4, 6: 3, 7: 3}  # sulfate, phosphate, carbonate, nitrate
OXOACID_DOUBLE_BONDS = {16: 2, 15: 1, 6: 1, 7: 1}  # S(=O)2(O)2, P(=O)(O)3, C(=O)(O)2, N+(=O)(O)2


def free_oxoacid(molecule):
    """The central atom of a lone sulfate, phosphate, carbonate or nitrate (one S, P, C or N bonded to its
    terminal oxygens only, nothing else in the molecule), or None."""
    atoms = list(ob.OBMolAtomIter(molecule))
    centres = [a for a in atoms if a.GetAtomicNum() in OXOACID_PKA]
    if len(centres) != 1 or len(atoms) != 1 + OXOACID_OXYGENS[centres[0].GetAtomicNum()]:
        return None
    centre = centres[0]
    others = [a for a in atoms if a.GetIdx() != centre.GetIdx()]
    if not all(a.GetAtomicNum() == 8 and a.GetExplicitDegree() == 1 for a in others):
        return None
    return centre if centre.GetExplicitDegree() == len(others) else None


def protonate_oxoacid(molecule, centre, ph):
    """Gives a lone oxoacid the protons its pKa values leave at `ph` (H2PO4- below pH 7.2, HPO4
    2- above; sulfate 2-; bicarbonate below pH 10.3): the singly bonded oxygens without a
    proton carry -1 (nitrate's nitrogen +1). Then adds those hydrogens without Open Babel's pH
    model."""
    element = centre.GetAtomicNum()
    protons = sum(1 for pka in OXOACID_PKA[element] if ph < pka)
    if element == 7:
        centre.SetFormalCharge(1)  # N(+)(=O)(O-)O-: nitrogen takes no second double bond
    # The bond orders as the structure formula has them (perception may put a second N=O).
    oxygens = list(ob.OBAtomAtomIter(centre))
    for i, oxygen in enumerate(oxygens):
        molecule.GetBond(oxygen, centre).SetBondOrder(2 if i < OXOACID_DOUBLE_BONDS[element] else 1)
    single = oxygens[OXOACID_DOUBLE_BONDS[element]:]
    for oxygen in single[:max(0, len(single) - protons)]:
        oxygen.SetFormalCharge(-1)
        oxygen.SetImplicitHCount(0)
    molecule.AddHydrogens(False, False)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ph", type=float, required=True)
    parser.add_argument("--charges", choices=("mmff94", "gasteiger"), required=True)
    parser.add_argument("input")
    parser.add_argument("output")
    args = parser.parse_args()
    ob.obErrorLog.SetOutputLevel(0)  # its warnings about PDB columns are not the user's concern
    whole = read_molecule(args.input)
    if whole.NumAtoms() == 0:
        fail("%s holds no atoms" % args.input)
    lines, report = [], []
    serial = 0
    labels = read_labels(args.input)
    for molecule in whole.Separate():
        before = molecule.NumAtoms()
        note = ""
        centre = free_oxoacid(molecule)
        if centre is not None:
            protonate_oxoacid(molecule, centre, args.ph)
            note = "protons from the oxoacid's pKa values at pH %g" % args.ph
        else:
            molecule.AddHydrogens(False, True, args.ph)
        atom_labels = label_atoms(molecule, labels)
        added = molecule.NumAtoms() - before
        formal = formal_charge(molecule)
        charges, why = charge_with(args.charges, molecule)
        model = args.charges
        if charges is None and args.charges == "mmff94":
            charges, why_not = charge_with("gasteiger", molecule)
            model, note = "gasteiger", "; ".join(filter(None, (note, why + ": Gasteiger's instead")))
            if charges is None:
                fail("a molecule of %d atoms could not be charged: %s; %s" % (molecule.NumAtoms(), why, why_not))
        elif charges is None:
            fail("a molecule of %d atoms could not be charged: %s" % (molecule.NumAtoms(), why))
        first = serial + 1
        for atom, label, charge in zip(ob.OBMolAtomIter(molecule), atom_labels, charges):
            serial += 1
            lines.append(pqr_line(serial, atom, label, charge))
        report.append("MOLECULE\t%d\t%d\t%d\t%+d\t%s\t%.6f\t%s" % (first, molecule.NumAtoms(), added, formal, model,
                                                                  sum(charges), note))
    with open(args.output, "w") as out:
        out.writelines(lines)
        out.write("END\n")
    print("VERSION\t" + ob.OBReleaseVersion())
    print("\n".join(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
