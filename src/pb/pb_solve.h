// espgrid's Poisson–Boltzmann maps: the one entry point (solve_pb) and the steps it is made of,
// public so tests and benchmarks can check each.
//
//   atoms, grid, PbOptions ──► build_coefficients (surface, ion accessibility, spl2 charges)
//                          ──► mdh_boundary: the direct sum of Debye–Hückel spheres onto the six
//                              faces (espgrid's DCS kernels, rotated so each face is one plane)
//                          ──► Split: φ_Coulomb(ε_solute) at every node (the DCS kernels)
//                          ──► assemble_system (pb_system.h) ──► solver: hypre (CPU) or the
//                              CUDA multigrid; the CPU emulation of the latter for tests
//                          ──► φ = boundary values + solution (+ φ_Coulomb), in the map's unit
//
// The narrow API for the rest of espgrid: solve_pb(atoms, grid, options, run) → PbResult.
#pragma once

#include <string>
#include <vector>

#include "src/compute/compute_timing.h"
#include "src/core/atoms.h"
#include "src/core/grid.h"
#include "src/core/units.h"
#include "src/pb/pb_coefficients.h"
#include "src/pb/pb_system.h"
#include "src/pb/pb_system_math.h"
#include "src/physics/pb_options.h"
#include "src/registry/kernel_registry.h"

namespace espgrid {

/// Which solver runs the linear system.
enum class PbSolver {
  Auto,           ///< the CUDA multigrid when a GPU is usable, else hypre
  Hypre,          ///< CPU: hypre PCG + PFMG (needs a build with hypre)
  CudaMultigrid,  ///< GPU: espgrid's multigrid-preconditioned CG
  CpuMultigrid,   ///< CPU emulation of the CUDA solver (tests, benchmarks, machines without hypre)
};
/// "auto", "hypre", "cuda-mg", "cpu-mg".
std::string pb_solver_name(PbSolver solver);
PbSolver parse_pb_solver(const std::string& text);

/// How a PB map is run.
struct PbRun {
  PbSolver solver = PbSolver::Auto;
  int threads = 0;  ///< CPU threads (0: all cores)
  int device = 0;   ///< CUDA device
  /// The direct-sum kernel for φ_Coulomb (Split): any registry row computing Coulomb (an
  /// approximate one is allowed: its error is declared). Null: the solver's backend's default.
  /// The boundary faces always use the backend's default exact kernel (they need Debye–Hückel).
  const KernelVariant* direct_sum = nullptr;
  PotentialUnit unit = PotentialUnit::KTPerE;  ///< unit of PbResult::values
  /// hypre over every rank of MPI_COMM_WORLD (collective: every rank calls solve_pb with the same
  /// atoms, grid and options, and every rank gets the whole map). The coefficient maps and the
  /// direct sums are computed on every rank; only the solve is split (z-planes per rank).
  bool across_ranks = false;
  /// Buffers kept between solves on the same grid (a compute session's: trajectory frames): the
  /// direct sums' (a CUDA kernel's workspace) and the device solve's; null: allocated per solve.
  std::shared_ptr<cuda::DeviceWorkspace> workspace;
  std::shared_ptr<cuda::PbDeviceWorkspace> device_workspace;
};

struct PbResult {
  std::vector<float> values;        ///< the potential in run.unit, x fastest
  pb::SolveReport solve;            ///< the solver's method, iterations and final residual
  std::vector<PhaseTiming> phases;  ///< surface, boundary, coulomb, assemble, setup, solve, combine
  std::string summary;              ///< one line: parameters, solver, iterations, residual
  std::string direct_sum;           ///< the DCS kernel(s) used and where
  std::size_t sas_points = 0;       ///< accessible SAS points (mol, smol)
  double seconds = 0;               ///< all of solve_pb
};

/// The PB map of `atoms` on `grid`. Throws UsageError for bad options or atoms outside the grid,
/// Error when the chosen solver is unavailable (naming why) or fails to converge.
PbResult solve_pb(const Atoms& atoms, const GridSpec& grid, const PbOptions& options, const PbRun& run = {});

namespace pb {

/// Multiple Debye–Hückel boundary values (APBS `bcfl mdh`), kT/e, on the boundary nodes of
/// `grid` (0 inside): Σ q e^(−κ(d − a)) / ((1 + κa) d) · k/ε_w over the atoms (a: atom radius).
/// `kernel` must compute the Debye model (and Coulomb when there is no salt).
std::vector<double> mdh_boundary(const Atoms& atoms, const GridSpec& grid, const PbOptions& options,
                                 const KernelVariant& kernel, const RunOptions& run);
/// φ_Coulomb = k Σ q / (ε_solute r) at every node, kT/e, by `kernel`.
std::vector<double> coulomb_map(const Atoms& atoms, const GridSpec& grid, const PbOptions& options,
                                const KernelVariant& kernel, const RunOptions& run);

/// The linear system of one formulation: Direct takes coefficients.charge (spl2) as the source;
/// Split takes `coulomb` (φ_Coulomb at every node) and solves for the reaction field.
PbSystem assemble_system(const PbCoefficients& coefficients, const std::vector<double>& boundary,
                         const PbOptions& options, PbFormulation formulation, const std::vector<double>* coulomb,
                         int threads = 0);

/// The scalars of the assembly (dims, geometry, mass, source scale, ε_solute, formulation).
AssemblyArgs assembly_args(const GridSpec& grid, const PbOptions& options, bool split);

/// The potential in kT/e at every node from the solver's `u` (interior), the system's boundary
/// values and, for Split, φ_Coulomb.
std::vector<double> combine(const PbSystem& system, const std::vector<double>& u, const std::vector<double>* coulomb);

}  // namespace pb
}  // namespace espgrid
