// Everything pdb2pqr leaves out of a PDB file, charged or accounted for: ligands by Open Babel
// (Debian python3-openbabel, through src/structure/openbabel_charges.py: hydrogens for the pH,
// MMFF94 or Gasteiger charges; espgrid gives Bondi radii), ions by the formal charge of their
// PDB component (structure/pdb_records.h), waters dropped unless kept. Each residue's treatment
// is reported (ResidueCharging), so the summary names every one of them.
//
// Open Babel runs in the background while pdb2pqr runs (LigandCharging): the residues pdb2pqr
// has no template for are known from their names before it starts. Residues it leaves out that
// were not foreseen are charged in a second run after it.
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "src/structure/pdb2pqr_account.h"
#include "src/structure/pdb_records.h"
#include "src/structure/structure_reader.h"

namespace espgrid {

/// How ligands are charged: Open Babel's MMFF94 charges (Gasteiger's for a molecule MMFF94 has no
/// types for), Gasteiger's, or not at all (left out of the map, as pdb2pqr leaves them).
enum class LigandChargeModel { Mmff94, Gasteiger, None };
/// "mmff94", "gasteiger" or "none" (any case); UsageError otherwise.
LigandChargeModel parse_ligand_charge_model(const std::string& text);
std::string ligand_charge_model_name(LigandChargeModel model);

/// The pH ligands get hydrogens for when none is given (pdb2pqr's standard states are pH 7's).
inline constexpr double kDefaultLigandPh = 7.0;

/// The command that charges ligands: $ESPGRID_OPENBABEL_CHARGES (a program taking the script's
/// arguments), else Debian's /usr/bin/python3 (or python3 on the PATH) running
/// openbabel_charges.py from the source tree or PREFIX/share/espgrid. Error naming what is missing.
std::vector<std::string> openbabel_charges_command();

/// What happened to one residue pdb2pqr's templates did not cover (or one molecule of several
/// residues, a glycan).
struct ResidueCharging {
  enum class Way { OpenBabel, Ion, Dropped, LeftOut };
  Way way = Way::LeftOut;
  std::string residues;             ///< "478 200"; several: "NAG B 1 + NAG B 2"; waters: "80 waters (HOH)"
  std::size_t atoms = 0;            ///< atoms added to the structure
  std::size_t hydrogens_added = 0;  ///< of them, hydrogens Open Babel added
  int formal_charge = 0;            ///< e
  double charge = 0;                ///< the sum of its atoms' charges, e
  std::string how;                  ///< the rest of its summary line
  /// "478 200: Open Babel 3.1.1, MMFF94 charges, ..., 70 atoms, formal charge 0 (charges sum to +0.0000 e)".
  std::string text() const;
};

/// Open Babel charging the molecules of some residues in a child program, started at once and
/// running in the background; result() waits. The destructor stops a program still running.
class LigandCharging {
 public:
  struct Molecule {
    std::vector<std::size_t> atoms;  ///< indices into result().structure
    std::size_t hydrogens_added = 0;
    int formal_charge = 0;
    std::string model;  ///< "mmff94" or "gasteiger"
    std::string note;   ///< why Gasteiger's charges were used, or the oxoacid rule
  };
  struct Result {
    Structure structure;  ///< every atom charged, labelled, Bondi radii
    std::vector<Molecule> molecules;
    std::string version;  ///< Open Babel's
  };
  /// Writes the atoms (with their CONECT bonds among `bonds`) to `folder`/NAME.pdb and starts
  /// the program there. Nothing runs when `atoms` is empty.
  LigandCharging(const std::vector<PdbAtom>& atoms, const std::vector<std::pair<long, long>>& bonds,
                 const std::filesystem::path& folder, const std::string& name, double ph, LigandChargeModel model);
  ~LigandCharging();
  LigandCharging(const LigandCharging&) = delete;
  LigandCharging& operator=(const LigandCharging&) = delete;
  bool started() const noexcept { return future_.valid(); }
  /// Waits; throws Error with the program's messages when it failed. `waiting` is called while it
  /// runs (Python's Ctrl-C).
  const Result& result(const std::function<void()>& waiting = nullptr);

 private:
  std::filesystem::path folder_;
  std::string name_;
  std::shared_ptr<std::atomic<bool>> stop_ = std::make_shared<std::atomic<bool>>(false);
  std::future<std::pair<int, std::string>> future_;  ///< exit (or -1 for a signal) and output
  std::optional<Result> result_;
};

/// The residues a PDB file holds that pdb2pqr has no template for, by name, and that are
/// neither water nor a lone ion: what Open Babel is started on before pdb2pqr runs.
std::vector<PdbAtom> ligand_candidates(const std::vector<PdbAtom>& input);

/// What to do with what pdb2pqr left out (`account`): the atoms to add to its structure and a
/// report line for each residue. `charged`: Open Babel's results so far (the background run and
/// any later one); `charge_more` is called with residues nobody charged yet that Open Babel
/// should, and returns its result for them.
struct Completion {
  Structure added;  ///< labelled atoms to append to pdb2pqr's
  std::vector<ResidueCharging> residues;
};
Completion complete_structure(
    const std::vector<PdbAtom>& input, const Pdb2pqrAccount& account, bool keep_water, LigandChargeModel model,
    double ph, std::vector<const LigandCharging::Result*> charged,
    const std::function<const LigandCharging::Result*(const std::vector<PdbAtom>&)>& charge_more);

/// PQR records for `added` (whitespace-separated, charges to 6 decimals: what the kept PQR
/// appends to pdb2pqr's), numbered from `first_serial`.
std::string pqr_records(const Structure& added, std::size_t first_serial);

}  // namespace espgrid
