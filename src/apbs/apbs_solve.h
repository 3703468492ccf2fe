// The one place where the APBS front end meets the Poisson–Boltzmann physics (src/pb/,
// solve_pb): an ELEC block's keywords and one calculation's grid become PbOptions and PbRun,
// and the solve's result becomes what APBS reports: the potential (kept for the next focusing
// level), the energy in kT, per-atom energies and the `write` maps. Nothing else in src/apbs/
// includes src/pb/. A value the solver does not take is refused before anything is solved
// (check_solver_ranges), never approximated.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "src/apbs/apbs_input.h"
#include "src/apbs/apbs_setup.h"
#include "src/core/atoms.h"
#include "src/core/grid.h"
#include "src/pb/pb_energy.h"

namespace espgrid::apbs {

/// Where and how the solves run (`espgrid apbs --backend`, Python's backend=).
struct SolverChoice {
  /// Cpu: espgrid's multigrid on the CPU (the GPU solver's arithmetic); Hypre: hypre's PCG + PFMG.
  enum class Backend { Auto, Cpu, Cuda, Hypre } backend = Backend::Auto;
  int threads = 0;  ///< CPU threads; 0: all cores
  int device = 0;   ///< CUDA device
};
/// Whether a run with `choice` may solve on the GPU (pb_solver_may_use_cuda: a CPU run never starts
/// CUDA's driver).
bool may_use_cuda(const SolverChoice& choice);
/// "auto", "cpu", "cuda" or "hypre" as a SolverChoice::Backend; UsageError naming `option` (the
/// program's "--backend", Python's "backend") otherwise.
SolverChoice::Backend parse_solver_backend(const std::string& text, const std::string& option);

/// APBS's energy components (calcenergy comps; routines.c energyMG), kT: the fixed-charge term
/// as APBS prints it (½ Σ qᵢ φ(rᵢ)), the mobile ions' and the dielectric's.
struct EnergyComponents {
  double fixed_charge = 0;
  double mobile_charge = 0;
  double dielectric = 0;
};

/// What one calculation produced.
struct SolveOutcome {
  GridSpec grid;
  /// φ, kT/e, x fastest, as doubles: a level the next one focuses from (its boundary) or a solve that
  /// returned doubles; otherwise empty and `values` holds it.
  std::vector<double> potential;
  std::vector<float> values;                   ///< φ, kT/e, x fastest, as the solver's map (when `potential` is empty)
  std::optional<double> energy;                ///< APBS's total electrostatic energy, kT (calcenergy total|comps)
  std::optional<EnergyComponents> components;  ///< calcenergy comps
  std::vector<double> atom_energies;           ///< per-atom energies, kT (calcenergy comps; APBS's ½ qᵢ φ(rᵢ))
  std::vector<std::pair<WriteType, std::vector<float>>> maps;  ///< the block's `write` maps other than pot
  std::string summary;                                         ///< the solver's one-line report
  double seconds = 0;
  /// Where the solve's time went (the PB solver's phases, then this adapter's own share), seconds.
  std::vector<std::pair<std::string, double>> phases;
  /// What the physics keeps of this level to focus the next one (the adapter's own type).
  std::shared_ptr<const void> focus_state;
};

/// One calculation to solve.
struct SolveRequest {
  const ElecBlock* elec = nullptr;
  const Calculation* calculation = nullptr;
  const Atoms* atoms = nullptr;          ///< the block's molecule (`mol N`)
  const SolveOutcome* parent = nullptr;  ///< the previous calculation, for bcfl focus
  const GridSpec* next_level = nullptr;  ///< the grid the next calculation focuses onto, if it does
  /// mg-para's coarser levels: the block's global fine box, which APBS's partitions weight every
  /// level's energy by (Vpmg_setPart); unset otherwise.
  std::optional<pb::EnergyBox> energy_partition;
  std::vector<WriteType> maps;  ///< `write` types wanted from this solve (pot included)
  SolverChoice solver;
};

/// Throws ApbsInputError at a block's line when one of its values is outside what the PB solver
/// takes (physics/pb_options.h validate: ranges, electroneutral ions); called before the first
/// solve, so an input that cannot run fully is refused before anything is written.
void check_solver_ranges(const ApbsInput& input);

/// Throws ApbsInputError at the block's line when a calculation that does not focus has an atom of
/// its molecule off its grid or within two spacings of its faces: APBS drops such atoms with a
/// warning; espgrid's solver refuses them (docs/pb.md), so the run stops before it starts.
void check_atoms_on_grid(const ApbsInput& input, const Calculation& calc, int number, const Atoms& atoms);

/// Solves one calculation.
SolveOutcome solve_calculation(const SolveRequest& request);

}  // namespace espgrid::apbs
