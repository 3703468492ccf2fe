// espgrid's Poisson–Boltzmann maps: the one entry point (solve_pb) and the steps it is made of,
// public so tests and benchmarks can check each.
//
//   atoms, grid, PbOptions ──► build_coefficients (surface, ion accessibility; pb_coefficients.h)
//                              and spread_charges (chgm spl0/spl2/spl4; pb_charges.h)
//                          ──► boundary values (pb_boundary.h): zero, sdh, mdh (the direct sum of
//                              Debye–Hückel spheres onto the six faces by espgrid's DCS kernels) or
//                              focus (a coarser level's potential, PbRun::focus_parent)
//                          ──► Split: φ_Coulomb(ε_solute) at every node (the DCS kernels)
//                          ──► assemble_system (pb_system.h) ──► solver: hypre (CPU) or the
//                              CUDA multigrid; the CPU emulation of the latter for tests; npbe:
//                              pb::solve_nonlinear
//                          ──► φ = boundary values + solution (+ φ_Coulomb), in the map's unit
//                          ──► energies (pb_energy.h) and APBS's `write` maps (pb_maps.h) on request
//
// The narrow API for the rest of espgrid: solve_pb(atoms, grid, options, run) → PbResult.
#pragma once

#include <functional>
#include <future>
#include <optional>
#include <string>
#include <vector>

#include "src/compute/compute_timing.h"
#include "src/core/atoms.h"
#include "src/core/errors.h"
#include "src/core/grid.h"
#include "src/core/units.h"
#include "src/pb/pb_cuda_driver.h"
#include "src/pb/pb_energy.h"
#include "src/pb/pb_face_sums.h"
#include "src/pb/pb_limits.h"
#include "src/pb/pb_maps.h"
#include "src/pb/pb_rank_link.h"
#include "src/pb/pb_system.h"
#include "src/pb_numerics/pb_system_math.h"
#include "src/pb_surface/pb_coefficients.h"
#include "src/physics/pb_options.h"
#include "src/registry/kernel_registry.h"

namespace espgrid {

/// Which solver runs the linear system.
enum class PbSolver {
  Auto,           ///< across MPI ranks hypre; else the CUDA multigrid when a GPU is usable, else the CPU's
  Hypre,          ///< CPU: hypre PCG + PFMG (needs a build with hypre); the one that splits a grid over ranks
  CudaMultigrid,  ///< GPU: espgrid's multigrid-preconditioned CG
  CpuMultigrid,   ///< CPU: the same multigrid-preconditioned CG (the GPU's arithmetic), OpenMP
};
/// "auto", "hypre", "cuda-mg", "cpu-mg" (test traces; users choose with --backend and --pb-solver).
inline std::string pb_solver_name(PbSolver solver) {
  constexpr const char* kNames[] = {"auto", "hypre", "cuda-mg", "cpu-mg"};  // PbSolver's order
  return kNames[static_cast<int>(solver)];
}
/// Whether `solver` may be CUDA's (Auto in one process, or the CUDA multigrid): only such a solve asks
/// for CUDA, whose driver's start maps much address space that an address-space limit on a CPU
/// solve (ulimit -v) would have to hold.
inline bool pb_solver_may_use_cuda(PbSolver solver, bool across_ranks) {
  return (solver == PbSolver::Auto && !across_ranks) || solver == PbSolver::CudaMultigrid;
}
/// Where a chosen solver runs, for the host memory it needs (pb_limits.h); Auto is not chosen yet.
inline pb::PbHostPlan pb_host_plan(PbSolver solver) {
  if (solver == PbSolver::Auto) throw Error("internal error: pb_host_plan of an unresolved solver");
  return solver == PbSolver::CudaMultigrid  ? pb::PbHostPlan::Gpu
         : solver == PbSolver::CpuMultigrid ? pb::PbHostPlan::CpuMultigrid
                                            : pb::PbHostPlan::Hypre;
}

/// A coarser level's solution for `bcfl focus` (APBS mg-auto's focusing): the fine level's face
/// values are interpolated from it, and its energy outside the fine domain is added to the fine
/// level's energies.
struct PbFocusParent {
  GridSpec grid;                                   ///< the coarser level's grid (must contain the fine one)
  const std::vector<double>* potential = nullptr;  ///< its φ, kT/e, x fastest (its PbResult::potential)
  pb::PbEnergyTerms outside;  ///< its PbResult::energy.outside_child (solved with focus_child = this level's grid)
};

/// How a PB map is run.
struct PbRun {
  PbSolver solver = PbSolver::Auto;
  int threads = 0;  ///< CPU threads (0: all cores)
  int device = 0;   ///< CUDA device
  /// Several CUDA devices: the grid split over them by z-planes, a slab each in this order (a
  /// device may repeat: several slabs on one GPU). The device pipeline only (mol/smol, lpbe, atoms
  /// on the mesh, no host maps); other plans are refused. `device` still runs the direct sums.
  std::vector<int> devices;
  /// When valid, the device's context being made on another thread (`espgrid map` starts it
  /// beside the input's reading): waited after the checks, before the device's first use.
  std::shared_future<void> device_ready;
  /// The direct-sum kernel for φ_Coulomb (Split): any registry row computing Coulomb (an
  /// approximate one is allowed: its error is declared). Null: the solver's backend's default.
  /// The boundary faces always use the backend's default exact kernel (they need Debye–Hückel).
  const KernelVariant* direct_sum = nullptr;
  PotentialUnit unit = PotentialUnit::KTPerE;  ///< unit of PbResult::values
  /// hypre over every rank of MPI_COMM_WORLD (collective: every rank calls solve_pb with the same
  /// atoms, grid and options, and every rank gets the whole map). Each rank builds the coefficient
  /// maps and the system of its z-planes only (pb::hypre_coefficient_planes), unless something after the
  /// solve reads the whole maps (npbe, energy components, the coefficient write maps); the
  /// boundary's banded face sums are shared out among the ranks (the split's Coulomb map is not).
  bool across_ranks = false;
  /// With across_ranks: the ranks (hypre's share of its matrix and levels is 1/ranks a rank) and how
  /// many of them share this host's memory (the memory check divides MemAvailable among them).
  int ranks = 1;
  int ranks_on_host = 1;
  /// The grid split over MPI ranks with a GPU each (a z-slab a rank on `device`, one multigrid-
  /// preconditioned CG over them: the device pipeline's, pb_rank_link.h); collective like across_ranks.
  /// Only rank 0 gets the whole map (the others their planes); φ in double, energies from it and maps
  /// from the coefficients are refused (the spl2 total energy is summed on the devices).
  const pb::PbRankLink* gpu_ranks = nullptr;
  int ranks_on_device = 1;  ///< with gpu_ranks: the ranks sharing this rank's GPU (its memory check)
  /// `bcfl focus`: the coarser level (required then, refused otherwise).
  const PbFocusParent* focus_parent = nullptr;
  /// Compute the energy over this grid outside `focus_child` (the next finer level's grid) into
  /// PbResult::energy.outside_child, for that level's PbFocusParent. Needs options.energy.level.
  const GridSpec* focus_child = nullptr;
  /// Atoms outside the grid, or within two spacings of its faces, are allowed (a focusing level
  /// whose domain holds part of the molecule): as in APBS, an atom off the grid draws no surface
  /// and adds no spread charge and no energy of this level (the charge methods' margins in
  /// pb_charges.h; mol/smol's SAS points of every atom still carve the surface). Off: such atoms
  /// are refused, naming the first.
  bool atoms_outside = false;
  /// APBS's mg-para partition for the energy (pb::EnergyInputs::partition): the block's global
  /// fine box on its coarser levels; unset: the whole grid counts.
  std::optional<pb::EnergyBox> energy_partition;
  /// Also return φ in double kT/e (PbResult::potential): a focusing parent's, or for energies
  /// computed by the caller.
  bool keep_potential = false;
  /// APBS's `write` maps of this solve, in this order (PbResult::maps). Maps from the coefficient
  /// maps (charge, kappa, diel*) make a GPU solve build its coefficients on the host (hybrid path).
  std::vector<pb::PbMapKind> maps;
  /// Buffers kept between solves on the same grid (a compute session's: trajectory frames): the
  /// direct sums' (a CUDA kernel's workspace) and the device solve's; null: allocated per solve.
  std::shared_ptr<cuda::DeviceWorkspace> workspace;
  std::shared_ptr<cuda::PbDeviceWorkspace> device_workspace;
  /// Where the map's values go instead of PbResult::values (then left empty): the caller's map, so
  /// that with planes_solved it can write the map's file while the device copies the map back.
  std::vector<float>* map_values = nullptr;
  /// With map_values: called as runs of the map's planes are final there, with the solve's report
  /// (method, iterations, residual, whether it converged; an unconverged solve throws after). Only the
  /// device pipeline in one process calls it, from its threads, possibly at once, each plane once;
  /// with other solvers the map is whole on return.
  std::function<void(const pb::SolveReport& solve, long first_plane, long count)> planes_solved;
};

struct PbResult {
  std::vector<float> values;  ///< the potential in run.unit, x fastest
  long first_plane = 0;       ///< values' first z-plane (gpu_ranks, ranks other than 0: theirs alone)
  /// A rank other than 0 of a solve across ranks: rank 0 holds the map; this one its planes of the
  /// values (gpu_ranks) or none (hypre), and no potential, energies needing it or write maps.
  bool share_only = false;
  pb::SolveReport solve;              ///< the solver's method, iterations and final residual
  std::vector<PhaseTiming> phases;    ///< surface, boundary, coulomb, assemble, setup, solve, combine
  std::string summary;                ///< one line: parameters, solver, iterations, residual
  std::string direct_sum;             ///< the DCS kernel(s) used and where
  pb::FaceSumReport boundary;         ///< mdh by distance bands: its measured error and terms (rounds 0: exact)
  std::size_t sas_points = 0;         ///< accessible SAS points (mol, smol)
  double seconds = 0;                 ///< all of solve_pb
  std::vector<double> potential;      ///< φ in double kT/e, x fastest (run.keep_potential; else empty)
  pb::PbEnergy energy;                ///< options.energy.level's energies (level None: none)
  std::vector<pb::PbMapValues> maps;  ///< run.maps, in that order
};

/// The PB map of `atoms` on `grid`. Throws UsageError for bad options or atoms outside the grid,
/// Error when the chosen solver is unavailable (naming why) or fails to converge.
PbResult solve_pb(const Atoms& atoms, const GridSpec& grid, const PbOptions& options, const PbRun& run = {});

/// Energies built from several solves on one grid (the grid and run as given; each solve asks
/// for the total energy), kT. Solvation: solvated − reference, the reference being `options` with
/// the solvent dielectric set to the solute's and no ions. Binding: E(complex) − Σ E(part), every
/// part solved on the complex's grid with the same options (atoms outside it allowed).
struct PbSolvation {
  PbResult solvated, reference;
  double energy = 0;  ///< kT
};
PbSolvation solvation_energy(const Atoms& atoms, const GridSpec& grid, const PbOptions& options, const PbRun& run = {});
struct PbBinding {
  PbResult complex;
  std::vector<PbResult> parts;
  double energy = 0;  ///< kT
};
PbBinding binding_energy(const Atoms& complex, const std::vector<Atoms>& parts, const GridSpec& grid,
                         const PbOptions& options, const PbRun& run = {});

}  // namespace espgrid
