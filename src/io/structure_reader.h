// Reading charged structures: PQR (APBS whitespace form and PDB2PQR fixed columns) and
// XYZ (plain with a charge column, or extended XYZ with a Properties key).
#pragma once

#include <string>
#include <vector>

#include "src/core/atoms.h"
#include "src/io/text_parsing.h"

namespace espgrid {

/// Pdb and Mmcif carry no charges or radii: PDB2PQR assigns them (io/pdb2pqr_source.h).
enum class StructureFormat { Pqr, Xyz, Pdb, Mmcif };
/// True for the formats whose charges and radii come from PDB2PQR.
inline bool needs_charge_assignment(StructureFormat format) {
  return format == StructureFormat::Pdb || format == StructureFormat::Mmcif;
}

/// Atoms plus the remarks a reader wants the user to see (never silent guesses).
struct Structure {
  Atoms atoms;
  std::vector<std::string> notices;
};

/// "pqr", "xyz", "pdb" or "cif" (any case; "extxyz", "ent", "mmcif" too) to a format; throws
/// UsageError for anything else.
StructureFormat parse_format_name(const std::string& name);
/// The format named by the file's extension (.pqr, .xyz, .extxyz, .pdb, .ent, .cif, .mmcif);
/// throws UsageError when the extension is not one of them, asking for --format.
StructureFormat format_from_extension(const std::string& path);

/// Read a structure from a line source (io/text_parsing.h), to its end.
Structure read_pqr(LineSource& lines);
Structure read_xyz(LineSource& lines);
/// Reads `path` in `format`. Every defect throws InputError("FILE:LINE: ..."); a file
/// with no atoms is a defect too. PDB and mmCIF throw UsageError: they need assign_charges.
Structure read_structure(const std::string& path, StructureFormat format);

/// At most `wanted`, and never more than a quarter of the memory the process may still use:
/// what a reader reserves for the atoms a file's size promises (a 2 GB sparse file promises
/// millions and holds none; the reservation must not be what fails).
std::size_t affordable_atoms(std::size_t wanted);

/// Largest |coordinate| accepted, Å. Keeps squared distances far from float overflow.
inline constexpr double kMaxCoordinate = 1.0e6;
/// Largest |charge| accepted, e: far above any partial or ionic charge, far below values
/// whose sums could overflow float32 (a typo such as 1e39 is an error, not an inf map).
inline constexpr double kMaxCharge = 1.0e3;
/// Largest radius accepted, Å.
inline constexpr double kMaxRadius = 100.0;

}  // namespace espgrid
