// How solve_pb (pb_solve.h) takes a request: the checks that need no computation, the plan (which
// solver and which path: the device pipeline, all on the device, the host's maps; the planes a rank
// builds) and the memory that plan needs, checked before anything of the grid's size is allocated.
#pragma once

#include "src/core/atoms.h"
#include "src/core/grid.h"
#include "src/pb/pb_memory.h"
#include "src/pb/pb_solve.h"
#include "src/physics/pb_options.h"

namespace espgrid::pb {

/// The checks that need no computation: options, atoms, the grid, focusing's inputs.
void check_request(const Atoms& atoms, const GridSpec& grid, const PbOptions& options, const PbRun& run);

/// Which solver runs, where the direct sums run, and whether the GPU does everything.
struct SolvePlan {
  PbSolver solver = PbSolver::Auto;
  const KernelVariant* faces_kernel = nullptr;    ///< the boundary's direct sums (mdh)
  const KernelVariant* coulomb_kernel = nullptr;  ///< split: φ_Coulomb
  RunOptions dcs;                                 ///< how the direct sums run
  bool split = false;
  bool all_on_device = false;          ///< the GPU builds the maps, assembles, solves and combines
  bool pipeline = false;               ///< ... from the atoms alone (pb_pipeline.h)
  bool device_energy = false;          ///< the pipeline sums the spl2 energy itself (no φ comes back)
  bool host_maps = false;              ///< the host builds the coefficient maps
  bool need_potential = false;         ///< φ in double kT/e is needed (energies, maps, keep_potential)
  pb::PlaneRange coefficient_planes;   ///< the host's maps: a rank's share where only hypre reads them
  bool solution_to_rank_zero = false;  ///< hypre across ranks returns u to rank 0 alone (it makes the map)
  /// ... and this rank is not 0: it makes no map or energy, so it spreads the charges of
  /// coefficient_planes alone and keeps only those planes of the fixed values once assembled
  bool share_only = false;
  bool maps_shared = false;  ///< ... held on those planes only (pb_coefficients.h maps_held_on_planes)
  double scale = 1;          ///< kT/e → run.unit
  int threads = 1;
};

/// The solver `solver` resolves to (Auto: hypre across ranks, else the GPU's multigrid where a GPU is
/// usable, else the CPU's), refusing what cannot run here.
PbSolver resolve_solver(PbSolver solver, bool across_ranks);
/// The plan of one request; refuses a grid beyond the host's memory before anything is allocated.
SolvePlan plan_solve(const Atoms& atoms, const GridSpec& grid, const PbOptions& options, const PbRun& run);

/// Whether the check against the GPU's free memory waits until the host has prepared its share (see the .cpp).
bool device_check_deferred(const SolvePlan& plan, const PbRun& run);
/// The plan's GPU share against what `run.device` has free (pb_memory.h).
void check_device_memory(const PbMemoryPlan& memory, const GridSpec& grid, const PbRun& run);
/// The memory this plan needs, checked against what the device and the host have free (pb_memory.h);
/// the device's share later where device_check_deferred.
PbMemoryPlan check_memory(const Atoms& atoms, const GridSpec& grid, const PbOptions& options, const PbRun& run,
                          const SolvePlan& plan);

}  // namespace espgrid::pb
