// The molecules an APBS input's READ section loads, as APBS 3.4.1 loads them (routines.c
// loadMolecules, valist.c, vparam.c): paths relative to the working directory, PQR files with
// their own charges and radii, and APBS's whitespace-separated "PDB" (ATOM serial name resName
// [chain] resSeq x y z ...) whose charges and radii come from a flat parameter file (`parm flat`,
// lines "RESIDUE ATOM CHARGE RADIUS EPSILON", names matched without regard to case). A PQR read
// with a parameter file takes the file's charges and radii too, as in APBS.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "src/apbs/apbs_input.h"
#include "src/core/atoms.h"

namespace espgrid::apbs {

struct Molecule {
  Atoms atoms;
  std::string path;                ///< as opened
  std::array<double, 3> center{};  ///< the middle of the atoms' bounding box, Å (APBS's centre)
};

/// `path` as APBS opens it: relative paths from the working directory, or from `base` when it
/// is not empty (Python's run(path, directory=...)).
std::string resolve_path(const std::string& path, const std::string& base);

/// Loads every molecule of `input` in order. Defects of a molecule or parameter file are
/// InputError "FILE:LINE: ..."; a missing file names the READ line that asked for it. Reader
/// notices are appended to `notices`.
std::vector<Molecule> load_molecules(const ApbsInput& input, const std::string& base,
                                     std::vector<std::string>& notices);

/// Per (residue, atom) charges (e) and radii (Å) from a flat parameter file.
struct AtomParameters {
  struct Entry {
    std::string residue, atom;  ///< upper case
    double charge = 0, radius = 0;
  };
  std::vector<Entry> entries;
  std::string path;
  /// The entry for `residue`/`atom` (any case), or null.
  const Entry* find(const std::string& residue, const std::string& atom) const;
};
AtomParameters read_flat_parameters(const std::string& path);
/// The same from the file's text (`path` names it in messages).
AtomParameters parse_flat_parameters(const std::string& text, const std::string& path);

/// APBS's whitespace PDB/PQR atoms from `text` (`file` names it in messages): positions, and
/// with `parameters` the charges and radii from them, else (PQR) from the two fields after z.
Atoms read_apbs_atoms(const std::string& text, const std::string& file, bool pqr, const AtomParameters* parameters);

}  // namespace espgrid::apbs
