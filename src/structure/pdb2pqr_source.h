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
// entered in the interrupt handler's table (os/atomic_output_file.h), so a signal, an exception
// or an interrupt from Python ends the programs and removes the folder.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/os/temporary_folder.h"
#include "src/structure/ligand_charges.h"
#include "src/structure/pdb2pqr_account.h"
#include "src/structure/structure_reader.h"

namespace espgrid {

/// How PDB2PQR assigns charges and radii, and what is done with what it leaves out.
struct ChargeAssignment {
  std::string force_field = "AMBER";  ///< pdb2pqr --ff: AMBER, CHARMM, PARSE, TYL06, PEOEPB or SWANSON
  /// pH for the titratable residues, through PROPKA (pdb2pqr --titration-state-method propka
  /// --with-ph), and for the ligands' hydrogens; none: PDB2PQR's standard protonation states and
  /// kDefaultLigandPh for ligands.
  std::optional<double> ph;
  bool keep_water = false;  ///< false: pdb2pqr --drop-water, and other waters it leaves out dropped
  bool keep_chain = false;  ///< pdb2pqr --keep-chain (chain IDs in its PQR)
  std::string ligand_mol2;  ///< pdb2pqr --ligand FILE.mol2: pdb2pqr charges that ligand itself
  LigandChargeModel ligand_charges = LigandChargeModel::Mmff94;  ///< the ligands pdb2pqr leaves out
  std::vector<std::string> pdb2pqr_options;  ///< more of pdb2pqr's own options (kPdb2pqrPassThrough)
};

/// pdb2pqr's options --pdb2pqr-options may pass on (the others are espgrid's own options, or
/// would write files espgrid does not keep, or change what it reads), and whether each takes a
/// value.
inline constexpr std::array<std::pair<std::string_view, bool>, 8> kPdb2pqrPassThrough = {{{"--nodebump", false},
                                                                                          {"--noopt", false},
                                                                                          {"--neutraln", false},
                                                                                          {"--neutralc", false},
                                                                                          {"--assign-only", false},
                                                                                          {"--ffout", true},
                                                                                          {"--userff", true},
                                                                                          {"--usernames", true}}};
/// Splits --pdb2pqr-options' words and checks each against kPdb2pqrPassThrough; UsageError
/// naming the word and what to use instead.
std::vector<std::string> parse_pdb2pqr_options(const std::string& words);

/// PDB2PQR's force fields (its --ff choices, pdb2pqr 3.x).
inline constexpr std::array<std::string_view, 6> kPdb2pqrForceFields = {"AMBER", "CHARMM", "PARSE",
                                                                        "TYL06", "PEOEPB", "SWANSON"};

/// Throws UsageError unless the force field is one of PDB2PQR's, the pH is within 0..14 and the
/// --ligand file is a readable .mol2. Needs no program: callers check before anything runs.
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
  ~AssignedStructure() = default;  ///< the temporary folder (and the PQR in it unless kept) goes with it
  AssignedStructure(AssignedStructure&& other) noexcept = default;
  AssignedStructure& operator=(AssignedStructure&& other) noexcept = default;
  AssignedStructure(const AssignedStructure&) = delete;
  AssignedStructure& operator=(const AssignedStructure&) = delete;

  /// The atoms of PDB2PQR's PQR, then those charged here (ligands, ions), labelled; notices: what
  /// is not in the map, PDB2PQR's warnings.
  Structure structure;
  std::string version;         ///< PDB2PQR's version as it reports it ("3.5.2"), or "unknown"
  std::string command;         ///< the equivalent command line, PQR named after the input (command_for)
  std::string converted_with;  ///< mmCIF input: "gemmi 0.5.7", the PDB conversion; else empty
  ChargeAssignment assignment;
  Pdb2pqrAccount account;  ///< atoms in and out, and what was left out
  /// How each residue pdb2pqr's templates did not cover was treated, in input order (waters last).
  std::vector<ResidueCharging> charging;
  std::string template_residues;  ///< "198 residues (ALA 12, ARG 8, ...)": what pdb2pqr's templates charged
  double template_charge = 0;     ///< their total charge, e
  std::string log;                ///< everything PDB2PQR printed (stdout and stderr), kept with keep()

  /// "pdb2pqr 3.5.2, AMBER force field, standard protonation states" for summaries and headers
  /// ("; 1 ligand by Open Babel (MMFF94)" where there are).
  std::string describe() const;
  /// The summary's lines after the charges line, as (tag, text): the atoms in and out, pdb2pqr's
  /// residues, then every residue its templates did not cover and how it was charged, the side
  /// chains it flipped. `espgrid map` and `sample` print them; Python's Structure.charging.
  std::vector<std::pair<std::string, std::string>> report() const;
  /// The equivalent command line writing the PQR to `pqr_path` (where keep() puts it):
  /// "pdb2pqr30 --ff AMBER boxb.pdb out/boxb.pqr", after the steps before PDB2PQR (gunzip, gemmi).
  std::string command_for(const std::string& pqr_path) const;
  /// Where keep() puts PDB2PQR's log for a PQR at `pqr_path`: its .pqr ending replaced by .log,
  /// as PDB2PQR names its own log (out/boxb.pqr -> out/boxb.log), else ".log" appended.
  static std::string log_path_for(const std::string& pqr_path);
  /// Writes the PQR (pdb2pqr's, with the atoms charged here appended) to `destination` and the
  /// log to log_path_for(destination), each atomically
  /// (os/atomic_output_file.h); an error names the file and the reason (a full disk: "No space
  /// left on device") and leaves neither.
  void keep(const std::string& destination) const;

 private:
  friend AssignedStructure assign_charges(const std::string&, StructureFormat, const ChargeAssignment&,
                                          const std::function<void()>&);
  std::shared_ptr<TemporaryFolder> folder_;  ///< the temporary folder, removed with the last owner
  std::string pqr_text_;                     ///< the PQR keep() writes
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
