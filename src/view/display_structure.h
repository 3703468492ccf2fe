// The structure as the page's viewer library draws it: PDB text (atom and residue names,
// chains, elements and positions), from which the library finds bonds and secondary structure
// for sticks and a cartoon. The physics never reads any of this; it only dresses the picture.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "src/core/atoms.h"

namespace espgrid {

/// The names a PDB record gives an atom, for drawing.
struct DisplayLabel {
  std::string name;     ///< "CA"
  std::string residue;  ///< "THR"
  char chain = ' ';
  char insertion = ' ';
  std::int32_t residue_number = 0;
  bool hetero = false;  ///< HETATM
};

/// The labels of a PQR file's atoms in the order the PQR reader reads them (first MODEL only),
/// or nullopt when a record's names cannot be told apart or the count is not `expected_atoms`
/// (then the page draws atoms without residues: no cartoon). Never throws for the file's
/// content: the reader has already judged it.
std::optional<std::vector<DisplayLabel>> read_pqr_labels(const std::string& path, std::size_t expected_atoms);

/// PDB ATOM/HETATM records of `atoms` (with `labels` when given, else HETATM records named by
/// element in one residue "MOL"), fixed columns as the viewer library reads them. Serial and
/// residue numbers wrap at PDB's 5 and 4 digits (bonds come from distances, not serials).
/// Coordinates must fit %8.3f (|x| < 10⁴ Å): `skipped` counts the atoms that do not, left out.
std::string display_pdb(const Atoms& atoms, const std::vector<DisplayLabel>* labels, std::size_t* skipped = nullptr);

}  // namespace espgrid
