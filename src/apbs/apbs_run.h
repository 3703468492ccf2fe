// `espgrid apbs FILE.in` as a library call: an APBS input file run as APBS 3.4.1 runs it.
//
//   read_apbs_input (apbs_input.h) ─► load_molecules (apbs_molecules.h) ─► plan_calculations
//   (apbs_setup.h: NOsh's grids) ─► every block's values in the solver's ranges and every output
//   path checked ─► each calculation solved in order (apbs_solve.h, the previous one as the focusing
//   parent) ─► energies (kJ/mol), PRINT sums ─► the `write` files, each written to a temporary
//   file and all renamed into place only when every calculation has succeeded.
//
// Everything that can be known before solving (the file's grammar, the molecules, the grids,
// the solver's ranges, the outputs' directories) is checked first, so a bad input
// leaves nothing behind.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "src/apbs/apbs_dx.h"
#include "src/apbs/apbs_input.h"
#include "src/apbs/apbs_molecules.h"
#include "src/apbs/apbs_setup.h"
#include "src/apbs/apbs_solve.h"

namespace espgrid::apbs {

struct ApbsRunOptions {
  /// Where relative paths in the input resolve and where files are written; empty: the working
  /// directory, as APBS.
  std::string directory;
  SolverChoice solver;
  bool write_files = true;  ///< false: compute and report, write nothing (Python's write=False)
  bool keep_maps = false;   ///< keep each written map's values in the result (Python)
  /// Check everything (the input, molecules, grids, supported physics, outputs) and report the
  /// calculations' grids without solving or writing anything (`espgrid apbs --dry-run`).
  bool dry_run = false;
  /// Called once the last calculation is solved, before its files are written (optional): the
  /// command line lets the GPU go there (cuda::release_device), beside the writing.
  std::function<void()> after_last_solve;
};

/// One solve, as APBS reports a "CALCULATION #n".
struct CalculationResult {
  int number = 0;  ///< 1-based, APBS's numbering
  Calculation calculation;
  std::optional<double> energy;                          ///< total electrostatic energy, kJ/mol
  std::optional<EnergyComponents> components;            ///< kJ/mol (calcenergy comps)
  std::vector<double> atom_energies;                     ///< kJ/mol (calcenergy comps)
  std::vector<std::pair<WriteType, std::string>> files;  ///< written by this calculation
  std::string solver;                                    ///< the solver's one-line report
  double seconds = 0;
  std::vector<std::pair<std::string, double>> phases;  ///< where the solve's time went, seconds
};

/// An ELEC block's result: its finest calculation's.
struct ElecResult {
  std::string name;
  std::optional<double> energy;       ///< kJ/mol
  std::vector<double> atom_energies;  ///< kJ/mol per atom (calcenergy comps)
  int calculation = 0;                ///< its result's calculation number
};

/// A PRINT statement's sum.
struct PrintResult {
  std::string expression;  ///< APBS's echo: "1 (solvated) - 2 (reference)"
  double energy = 0;       ///< kJ/mol
  bool deprecated_energy = false;
};

/// A written map.
struct ApbsMap {
  std::string path;
  WriteType type = WriteType::Pot;
  std::size_t elec = 0;
  GridSpec grid;              ///< the file's grid
  std::vector<float> values;  ///< x fastest (ApbsRunOptions::keep_maps; else empty)
};

struct ApbsResult {
  ApbsInput input;
  std::vector<CalculationResult> calculations;
  std::vector<ElecResult> elecs;
  std::vector<PrintResult> prints;
  std::vector<ApbsMap> maps;
  std::vector<std::string> notices;
  double seconds = 0;
};

/// What a front end hears while the input runs.
class ApbsObserver {
 public:
  virtual ~ApbsObserver() = default;
  virtual void notice(const std::string& /*text*/) {}
  virtual void molecules_loaded(const ApbsInput& /*input*/, const std::vector<Molecule>& /*molecules*/) {}
  /// Everything is checked; `plan` is about to be solved.
  virtual void starting(const ApbsInput& /*input*/, const CalculationPlan& /*plan*/) {}
  virtual void calculation_done(const ApbsInput& /*input*/, const CalculationResult& /*result*/) {}
};

/// Runs the APBS input file `path`. Throws ApbsInputError for a defect of the input (or an
/// unsupported keyword), InputError for one of a molecule or parameter file, Error when a solve
/// or a write fails; no output file exists then.
ApbsResult run_apbs(const std::string& path, const ApbsRunOptions& options = {}, ApbsObserver* observer = nullptr);

/// kT at `temperature` (K) in kJ/mol: APBS reports energies as E·k_B·T·N_A/1000.
double kilojoules_per_kt(double temperature);

}  // namespace espgrid::apbs
