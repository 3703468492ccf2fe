// The atoms of a PDB file as PDB's fixed columns give them, and what kind of residue each belongs
// to: what pdb2pqr's force fields have templates for (amino acids, nucleotides, water), water by
// any of its usual names, and the ions the PDB's Chemical Component Dictionary names. Used to
// account for what pdb2pqr left out and to charge it (structure/ligand_charges.h).
#pragma once

#include <array>
#include <cstddef>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/core/atoms.h"
#include "src/structure/structure_reader.h"

namespace espgrid {

/// One ATOM/HETATM record of a PDB file.
struct PdbAtom {
  AtomLabel label;
  ElementSymbol element;  ///< columns 77-78 when they hold a symbol, else from the atom name (pdb_element)
  double x = 0, y = 0, z = 0;
  std::vector<std::array<double, 3>> alternates;  ///< the positions of its other alternate locations
  std::size_t line = 0;                           ///< 1-based
  long serial = 0;                                ///< columns 7-11 (0 when not a number)
  bool hydrogen() const;
};

/// The atoms of the first model (what pdb2pqr reads), each once: of an atom's alternate
/// locations the first. Records whose coordinates are not numbers are skipped (pdb2pqr itself
/// refuses the file then, with its own message).
std::vector<PdbAtom> read_pdb_atoms(const std::string& text);
/// The same, line by line from a stream (a file may be larger than memory: REMARKs, models).
std::vector<PdbAtom> read_pdb_atoms(std::istream& in);

/// The bonds the CONECT records list, as pairs of serial numbers (each bond once).
std::vector<std::pair<long, long>> read_pdb_bonds(const std::string& text);
std::vector<std::pair<long, long>> read_pdb_bonds(std::istream& in);

/// The element of a PDB record: columns 77-78 when they hold an element symbol (old files have
/// other data there: 1HPV has "17"), else PDB's rule for the name field (columns 13-16): the
/// symbol is right-justified in columns 13-14 (" CA " is carbon, "CA  " calcium), with a leading
/// digit dropped ("1HB " hydrogen).
ElementSymbol pdb_element(std::string_view line);

/// A PDB ATOM/HETATM record for `label` at (x, y, z) with `element`, occupancy 1, B-factor
/// `b_factor` (columns as PDB's format defines them, 80 characters and a newline).
std::string pdb_atom_record(bool hetatm, std::size_t serial, const AtomLabel& label, double x, double y, double z,
                            double b_factor, ElementSymbol element);

/// Residue names pdb2pqr's AMBER, CHARMM and PARSE templates cover: the amino acids with their
/// protonation variants, nucleotides, water. Other residues are left out by pdb2pqr.
bool pdb2pqr_knows_residue(std::string_view residue_name);
/// Water by any of its usual residue names (HOH, WAT, DOD, H2O, TIP3, SOL, ...).
bool is_water_residue(std::string_view residue_name);

/// An ion by formal charge: its residue name in the PDB's Chemical Component Dictionary, its
/// charge, and the radius espgrid gives it.
struct IonCharge {
  std::string_view residue;  ///< "ZN", "NA", "IOD"
  std::string_view name;     ///< "zinc", "sodium", "iodide"
  int charge = 0;            ///< e
  double radius = 0;         ///< Å
  std::string_view radius_source;
};
/// The ion a single-atom residue is: by its residue name (the PDB's component, whose definition
/// fixes the charge: FE is Fe³⁺, FE2 Fe²⁺), else nothing.
std::optional<IonCharge> ion_by_residue(std::string_view residue_name, ElementSymbol element);

}  // namespace espgrid
