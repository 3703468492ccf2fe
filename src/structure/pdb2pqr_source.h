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
//
// Every way out cleans up: the folder and the programs (each in a process group of its own) are
// entered in the interrupt handler's table (os/interrupt_cleanup.h), so a signal, an exception
// or an interrupt from Python ends the programs and removes the folder.
#pragma once

#include <array>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/os/temporary_folder.h"
#include "src/structure/structure_reader.h"

namespace espgrid {

/// How PDB2PQR assigns charges and radii.
struct ChargeAssignment {
  std::string force_field = "AMBER";  ///< pdb2pqr --ff: AMBER, CHARMM, PARSE, TYL06, PEOEPB or SWANSON
  /// pH for the titratable residues, through PROPKA (pdb2pqr --titration-state-method propka
  /// --with-ph); none: PDB2PQR's standard protonation states, no pKa calculation.
  std::optional<double> ph;
};

/// PDB2PQR's force fields (its --ff choices, pdb2pqr 3.x).
inline constexpr std::array<std::string_view, 6> kPdb2pqrForceFields = {"AMBER", "CHARMM", "PARSE",
                                                                        "TYL06", "PEOEPB", "SWANSON"};

/// Throws UsageError unless the force field is one of PDB2PQR's and the pH is within 0..14.
/// Needs no program: callers check before anything runs.
void check_charge_assignment(const ChargeAssignment& assignment);
/// The assignment the CLI's --forcefield/--ph and the Python module's forcefield=/ph= ask
/// for: the force field upper-cased (PDB2PQR's names are), then checked.
ChargeAssignment make_charge_assignment(std::string force_field, std::optional<double> ph);

/// The programs, as run: $ESPGRID_PDB2PQR or `pdb2pqr30` on the PATH, and $ESPGRID_GEMMI or
/// `gemmi` on the PATH (only for mmCIF).
std::string pdb2pqr_program();
std::string gemmi_program();

/// What PDB2PQR made of the structure: atoms in and out, and the input's heavy atoms its PQR
/// lacks (ligands, ions and residues it has no parameters for are left out without an error).
/// Hydrogens are not compared: PDB2PQR rebuilds them.
struct Pdb2pqrAccount {
  /// An input residue with heavy atoms left out.
  struct Residue {
    std::string name;          ///< "NAG B 501" (residue, chain, number and insertion code as in the input)
    std::size_t left_out = 0;  ///< its heavy atoms missing from the PQR
    std::size_t heavy = 0;     ///< its heavy atoms in the input
  };
  std::size_t input_atoms = 0;       ///< ATOM/HETATM atoms of the first model (alternate locations once)
  std::size_t input_hydrogens = 0;   ///< of them, hydrogen (H, D)
  std::size_t output_atoms = 0;      ///< atoms in PDB2PQR's PQR
  std::size_t output_hydrogens = 0;  ///< of them, hydrogen
  std::size_t left_out_atoms = 0;    ///< input heavy atoms at no position of the PQR's atoms
  std::vector<Residue> left_out;     ///< their residues, in input order

  /// "NAG B 501 (3 of 3 heavy atoms), ZN C 601 (1 of 1)", at most `most` residues named.
  std::string left_out_text(std::size_t most = 10) const;
};

/// Counts what PDB2PQR kept: `pdb` is the PDB text it read, `pqr` the atoms of its PQR. An input
/// heavy atom is kept when a PQR atom sits at its coordinates to 0.001 Å (PDB2PQR copies them;
/// it renames atoms and residues and drops chain IDs, so names cannot be compared).
Pdb2pqrAccount account_for_atoms(const std::string& pdb, const Atoms& pqr);
/// The same, reading the PDB text line by line from `pdb` (a file as large as it comes).
Pdb2pqrAccount account_for_atoms(std::istream& pdb, const Atoms& pqr);

/// A structure whose charges and radii PDB2PQR assigned. Owns the temporary folder with the
/// PQR until it is destroyed.
class AssignedStructure {
 public:
  AssignedStructure() = default;
  ~AssignedStructure() = default;  ///< the temporary folder (and the PQR in it unless kept) goes with it
  AssignedStructure(AssignedStructure&& other) noexcept = default;
  AssignedStructure& operator=(AssignedStructure&& other) noexcept = default;
  AssignedStructure(const AssignedStructure&) = delete;
  AssignedStructure& operator=(const AssignedStructure&) = delete;

  Structure structure;         ///< the atoms of PDB2PQR's PQR; notices: what it left out, its warnings
  std::string version;         ///< PDB2PQR's version as it reports it ("3.5.2"), or "unknown"
  std::string command;         ///< the equivalent command line, PQR named after the input (command_for)
  std::string converted_with;  ///< mmCIF input: "gemmi 0.5.7", the PDB conversion; else empty
  ChargeAssignment assignment;
  Pdb2pqrAccount account;  ///< atoms in and out, and what was left out
  std::string log;         ///< everything PDB2PQR printed (stdout and stderr), kept with keep()

  /// "pdb2pqr 3.5.2, AMBER force field, standard protonation states" for summaries and headers.
  std::string describe() const;
  /// The equivalent command line writing the PQR to `pqr_path` (where keep() puts it):
  /// "pdb2pqr30 --ff AMBER boxb.pdb out/boxb.pqr", after the steps before PDB2PQR (gunzip, gemmi).
  std::string command_for(const std::string& pqr_path) const;
  /// Where keep() puts PDB2PQR's log for a PQR at `pqr_path`: its .pqr ending replaced by .log,
  /// as PDB2PQR names its own log (out/boxb.pqr -> out/boxb.log), else ".log" appended.
  static std::string log_path_for(const std::string& pqr_path);
  /// Copies the PQR to `destination` and the log to log_path_for(destination), each atomically
  /// (os/atomic_output_file.h); an error names the file and the reason (a full disk: "No space
  /// left on device") and leaves neither.
  void keep(const std::string& destination) const;

 private:
  friend AssignedStructure assign_charges(const std::string&, StructureFormat, const ChargeAssignment&,
                                          const std::function<void()>&);
  std::shared_ptr<TemporaryFolder> folder_;  ///< the temporary folder, removed with the last owner
  std::string pqr_;                          ///< PDB2PQR's PQR inside it
  std::string pqr_name_;                     ///< its name there, as `command` shows it
  std::string command_prefix_;               ///< the steps before PDB2PQR, "... && "
  std::string command_options_;              ///< "pdb2pqr30 --ff AMBER boxb.pdb "
};

/// Runs PDB2PQR on `input` (a PDB file, or an mmCIF file converted with gemmi first; "-" is
/// standard input; gzip data and pipes are copied into the temporary folder first) and reads
/// the PQR it writes. Throws Error when the input is missing, when a program is not installed
/// (saying which package to install), or when a program fails (with its own messages, and an
/// explanation where they are known to mislead); nothing is written outside the temporary
/// folder, which is removed. `waiting` is called every 20 ms at most while a program runs; if it
/// throws (Python's Ctrl-C), the program is ended and the folder removed.
AssignedStructure assign_charges(const std::string& input, StructureFormat format, const ChargeAssignment& assignment,
                                 const std::function<void()>& waiting = nullptr);

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
