// PDB and mmCIF structures, which carry no charges or radii: PDB2PQR (Debian `pdb2pqr`, the
// program `pdb2pqr30`) assigns them from a force field, and its PQR is read with the PQR
// reader. This is the structure source behind `espgrid map protein.pdb` and the Python
// module's read_structure("protein.pdb").
//
// PDB2PQR runs as a separate program in a private temporary folder; nothing appears beside the
// input or the map unless keep() copies the PQR out, so a failure leaves no file behind.
// An mmCIF file is first converted to PDB with gemmi (Debian `gemmi`): PDB2PQR 3.5's own
// mmCIF reader writes the coordinates one column early and then reads them back with the PDB
// column rules, which fails on most real files and can drop a coordinate's minus sign
// silently (Electrostatics/pdb2pqr issues 445 and 467).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "src/io/structure_reader.h"

namespace espgrid {

/// How PDB2PQR assigns charges and radii.
struct ChargeAssignment {
  std::string force_field = "AMBER";  ///< pdb2pqr --ff: AMBER, CHARMM, PARSE, TYL06, PEOEPB or SWANSON
  /// pH for the titratable residues, through PROPKA (pdb2pqr --titration-state-method propka
  /// --with-ph); none: PDB2PQR's standard protonation states, no pKa calculation.
  std::optional<double> ph;
};

/// Throws UsageError unless the force field is a plain name and the pH is within 0..14.
/// Needs no program: callers check before anything runs.
void check_charge_assignment(const ChargeAssignment& assignment);
/// The assignment the CLI's --forcefield/--ph and the Python module's forcefield=/ph= ask
/// for: the force field upper-cased (PDB2PQR's names are), then checked.
ChargeAssignment make_charge_assignment(std::string force_field, std::optional<double> ph);

/// The programs, as run: $ESPGRID_PDB2PQR or `pdb2pqr30` on the PATH, and $ESPGRID_GEMMI or
/// `gemmi` on the PATH (only for mmCIF).
std::string pdb2pqr_program();
std::string gemmi_program();

/// A structure whose charges and radii PDB2PQR assigned. Owns the temporary folder with the
/// PQR until it is destroyed.
class AssignedStructure {
 public:
  AssignedStructure() = default;
  ~AssignedStructure();  ///< removes the temporary folder (and the PQR in it unless kept)
  AssignedStructure(AssignedStructure&& other) noexcept;
  AssignedStructure& operator=(AssignedStructure&& other) noexcept;
  AssignedStructure(const AssignedStructure&) = delete;
  AssignedStructure& operator=(const AssignedStructure&) = delete;

  Structure structure;         ///< the atoms of PDB2PQR's PQR; notices: PDB2PQR's warnings
  std::string version;         ///< PDB2PQR's version as it reports it ("3.5.2"), or "unknown"
  std::string command;         ///< the equivalent command line: pdb2pqr30 --ff AMBER IN OUT.pqr
  std::string converted_with;  ///< mmCIF input: "gemmi 0.5.7", the PDB conversion; else empty
  ChargeAssignment assignment;

  /// "pdb2pqr 3.5.2, AMBER force field, standard protonation states" for summaries and headers.
  std::string describe() const;
  /// Copies the PQR to `destination`, atomically (io/atomic_output_file.h).
  void keep(const std::string& destination) const;

 private:
  friend AssignedStructure assign_charges(const std::string&, StructureFormat, const ChargeAssignment&);
  std::string folder_;  ///< the temporary folder, removed by the destructor
  std::string pqr_;     ///< PDB2PQR's PQR inside it
};

/// Runs PDB2PQR on `input` (a PDB file, or an mmCIF file converted with gemmi first) and
/// reads the PQR it writes. Throws Error when the input is missing, when a program is not
/// installed (saying which package to install), or when a program fails (with its own
/// messages); nothing is written outside the temporary folder, which is removed.
AssignedStructure assign_charges(const std::string& input, StructureFormat format, const ChargeAssignment& assignment);

/// What PDB2PQR printed, sorted out (exposed for tests): the version from its banner
/// ("PDB2PQR v3.5.2"), its distinct WARNING lines, and, for a failure, its CRITICAL and ERROR
/// lines and the exception that ended it.
struct Pdb2pqrLog {
  std::string version;
  std::vector<std::string> warnings;
  std::vector<std::string> failure;
};
Pdb2pqrLog parse_pdb2pqr_log(const std::string& output);

}  // namespace espgrid
