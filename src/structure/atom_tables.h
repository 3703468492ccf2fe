// Tables of a value at every atom (`espgrid sample --at-atoms`: each atom's potential): one row
// an atom as CSV, the per-residue means and extremes as CSV, and the structure as PDB records
// with the value in the B-factor column, for colouring by it in any viewer.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "src/structure/structure_reader.h"

namespace espgrid {

/// The files --at-atoms writes, told by the extension: .csv (one row an atom), .pdb/.ent (the
/// value as B-factor). A .pqr is refused: its last fields are charge and radius, it has no
/// B-factor column.
enum class AtomTableFormat { Csv, Pdb };
AtomTableFormat atom_table_format(const std::string& path);

/// One residue's values: consecutive atoms of the same residue (as structure files list them).
struct ResidueValues {
  AtomLabel label;  ///< the residue's fields (its first atom's)
  std::size_t first = 0, atoms = 0;
  double charge = 0;  ///< e
  double mean = 0, min = 0, max = 0;
  std::string min_atom, max_atom;  ///< the names of the atoms with the extremes
};
/// Needs labels (UsageError for a structure without residues: XYZ, arrays without names).
std::vector<ResidueValues> residue_values(const Structure& s, const std::vector<double>& values);

/// "index,name,residue,chain,number,insertion,x,y,z,charge,<column>" and a row an atom; numbers
/// as the shortest text that reads back exactly. Structures without labels name each atom by its
/// element.
std::string atom_values_csv(const Structure& s, const std::vector<double>& values, const std::string& column);
/// "residue,chain,number,insertion,atoms,charge,mean,min,min_atom,max,max_atom".
std::string residue_values_csv(const std::vector<ResidueValues>& residues);
/// REMARK lines, then ATOM/HETATM records with occupancy 1 and B-factor the value (columns 61-66:
/// two decimals where they fit, else one or none; values beyond -99999..999999 are clamped to
/// them and counted in `clamped`), then END.
/// Structures without labels get each atom named by its element, residue UNL 1.
std::string atom_values_pdb(const Structure& s, const std::vector<double>& values,
                            const std::vector<std::string>& remarks, std::size_t* clamped = nullptr);

}  // namespace espgrid
