// Reading charged structures: PQR (APBS whitespace form and PDB2PQR fixed columns) and
// XYZ (plain with a charge column, or extended XYZ with a Properties key).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "src/core/atoms.h"
#include "src/core/text_parsing.h"

namespace espgrid {

/// Pdb and Mmcif carry no charges or radii: PDB2PQR assigns them (structure/pdb2pqr_source.h).
enum class StructureFormat { Pqr, Xyz, Pdb, Mmcif };
/// True for the formats whose charges and radii come from PDB2PQR.
inline bool needs_charge_assignment(StructureFormat format) {
  return format == StructureFormat::Pdb || format == StructureFormat::Mmcif;
}

/// Who an atom is, as PDB and PQR records name it: for per-atom and per-residue tables, files
/// written back and summaries; never used by the physics. Fixed fields (18 bytes an atom, not
/// two strings'), cut to PDB's widths: a longer name is kept to its first four characters.
struct AtomLabel {
  std::array<char, 4> name{};     ///< "CA", "OXT", "HG21"; NUL-padded
  std::array<char, 4> residue{};  ///< "ALA", "HOH", "TIP3"
  std::array<char, 4> chain{};    ///< "A"; empty when the record has none
  std::int32_t number = 0;        ///< the residue's sequence number
  char insertion = 0;             ///< the insertion code, 0 when none

  std::string atom_name() const;
  std::string residue_name() const;
  std::string chain_id() const;
  /// "ALA A 52", "ALA 52A" (no chain): the residue as pdb2pqr's account and summaries name it.
  std::string residue_text() const;
  /// Whether two atoms belong to the same residue (name, chain, number and insertion code).
  bool same_residue(const AtomLabel& other) const;
  static AtomLabel make(std::string_view name, std::string_view residue, std::string_view chain, std::int32_t number,
                        char insertion = 0);
};

/// Atoms plus the remarks a reader wants the user to see (never silent guesses).
struct Structure {
  Atoms atoms;
  std::vector<std::string> notices;
  /// One label an atom (PQR, and PDB/mmCIF through pdb2pqr), or none at all (XYZ, arrays).
  std::vector<AtomLabel> labels;
  bool has_labels() const noexcept { return !labels.empty() && labels.size() == atoms.size(); }
};

/// "pqr", "xyz", "pdb" or "cif" (any case; "extxyz", "ent", "mmcif", "pdbx" too) to a format;
/// throws UsageError for anything else.
StructureFormat parse_format_name(const std::string& name);
/// The format named by the file's extension (.pqr, .xyz, .extxyz, .pdb, .ent, .cif, .mmcif,
/// .pdbx), also under a gzip ending (protein.pdb.gz, 1abc.cif.gz, pdb1abc.ent.gz); throws
/// UsageError when the extension is not one of them (and for standard input, "-"), asking for
/// --format.
StructureFormat format_from_extension(const std::string& path);

/// "-": the structure is read from standard input (with --format; the readers open /dev/stdin).
bool is_standard_input(const std::string& path);
/// Whether the input is read through zlib: a name ending in .gz, a gzip file under any name, and
/// anything that is not a regular file (a pipe, standard input), whose first bytes cannot be
/// looked at before reading; zlib passes text that is not gzip through unchanged.
bool read_through_gzip(const std::string& path);
/// Whether `path` is a regular file that starts as gzip data does (1f 8b), whatever its name.
bool is_gzip_file(const std::string& path);
/// What a structure's by-products are named after: "protein" for protein.pqr, dir/protein.pdb.gz
/// or protein.cif; empty for standard input, for names under /dev and /proc (/dev/stdin,
/// /dev/fd/63 from `<(zcat x.pdb.gz)`) and for anything that is not a regular file.
std::string structure_stem(const std::string& path);
/// The lines of a structure file: "-" is standard input, and gzip data is decompressed
/// (read_through_gzip); a truncated or corrupt gzip stream is an error, never an early end.
std::unique_ptr<LineSource> open_structure_lines(const std::string& path);

/// Read a structure from a line source (core/text_parsing.h), to its end.
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

/// An atom's value as the readers and the Python module check it.
enum class AtomField { Coordinate, Charge, Radius };
/// Why `value` cannot be an atom's `field` ("is not finite", "is negative", "is implausible
/// (over 100 Å)", ...), or an empty view when it can. The one set of checks behind every front
/// end: the PQR and XYZ readers and the Python module's arrays (kMaxCoordinate, kMaxCharge,
/// kMaxRadius).
std::string_view atom_value_problem(AtomField field, double value) noexcept;

}  // namespace espgrid
