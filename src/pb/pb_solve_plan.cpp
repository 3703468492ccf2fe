#include "src/pb/pb_solve_plan.h"

#include <algorithm>
#include <string>

#include "src/core/errors.h"
#include "src/core/process_trace.h"
#include "src/core/thread_count.h"
#include "src/core/units.h"
#include "src/pb/pb_boundary.h"
#include "src/pb/pb_cuda_driver.h"
#include "src/pb/pb_hypre.h"
#include "src/pb/pb_limits.h"
#include "src/pb/pb_pipeline.h"
#include "src/pb/pb_pipeline_driver.h"
#include "src/pb/pb_slabs.h"
#include "src/pb_surface/pb_coefficients.h"
#include "src/physics/physics_options.h"

namespace espgrid::pb {

void check_request(const Atoms& atoms, const GridSpec& grid, const PbOptions& options, const PbRun& run) {
  validate(options);
  pb::check_atoms_have_radii(atoms, options);
  for (int d = 0; d < 3; ++d)
    if (grid.dims[d] < 5)
      throw UsageError("--model pb needs at least 5 grid points along every axis (the faces hold the boundary values)");
  if (!run.atoms_outside) pb::check_atoms_inside(atoms, grid, run.threads);
  // The Debye-Hueckel boundary values hold outside every atom, and their float sums must not
  // overflow (pb_limits.h); a focusing level's atoms may leave its grid by design.
  if (!run.atoms_outside && (options.boundary == PbBoundary::Mdh || options.boundary == PbBoundary::Sdh))
    pb::check_pb_boundary(atoms, grid, options, run.threads);
  const bool focus = options.boundary == PbBoundary::Focus;
  if (focus && (!run.focus_parent || !run.focus_parent->potential))
    throw UsageError("bcfl focus needs the coarser level's solution (PbRun::focus_parent)");
  if (!focus && run.focus_parent)
    throw UsageError("a focusing parent was given for bcfl " + boundary_name(options.boundary) + " (it needs focus)");
}

PbSolver resolve_solver(PbSolver solver, bool across_ranks) {
  std::string cuda_reason;
  const bool have_cuda = pb_solver_may_use_cuda(solver, across_ranks) && cuda_available(&cuda_reason);
  // Across ranks only hypre splits the grid; in one process the multigrid (GPU or CPU) is faster.
  if (solver == PbSolver::Auto)
    solver = across_ranks ? PbSolver::Hypre : have_cuda ? PbSolver::CudaMultigrid : PbSolver::CpuMultigrid;
  if (solver == PbSolver::CudaMultigrid && !have_cuda) throw Error("the CUDA PB solver needs a GPU: " + cuda_reason);
  if (solver == PbSolver::Hypre) {
    std::string reason;
    if (!pb::hypre_available(&reason)) throw Error(reason);
  }
  if (across_ranks && solver != PbSolver::Hypre)
    throw UsageError("a PB solve across MPI ranks runs on hypre (--backend cpu)");
  return solver;
}

SolvePlan plan_solve(const Atoms& atoms, const GridSpec& grid, const PbOptions& options, const PbRun& run) {
  SolvePlan p;
  p.solver = resolve_solver(run.solver, run.across_ranks);
  const PbEnergyLevel level = options.energy.level;
  bool maps_need_coefficients = false, maps_need_potential = false;
  for (const pb::PbMapKind kind : run.maps) {
    maps_need_coefficients = maps_need_coefficients || pb::pb_map_needs_coefficients(kind);
    maps_need_potential = maps_need_potential || pb::pb_map_needs_potential(kind);
  }
  if (p.solver == PbSolver::Hypre && pb::hypre_ranks_build_their_planes(options, maps_need_coefficients))
    p.coefficient_planes = pb::hypre_coefficient_planes(grid, run.across_ranks);
  p.maps_shared = pb::maps_held_on_planes(grid, options, p.coefficient_planes);
  // The other ranks need no whole solution unless it is kept or npbe's Newton steps read it.
  p.solution_to_rank_zero = p.solver == PbSolver::Hypre && run.across_ranks &&
                            options.equation != PbEquation::Nonlinear && !run.keep_potential;
  // Such a rank but 0 makes no map or energy: its rows read its planes of the charges alone, and
  // nothing reads its fixed values once the system is assembled.
  p.share_only = p.solution_to_rank_zero && options.formulation != PbFormulation::Split &&
                 !p.coefficient_planes.covers(grid) && pb::hypre_rank(run.across_ranks) != 0;
  const int ranks = run.across_ranks ? std::max(1, run.ranks) : 1;
  // before anything is allocated; a rank's share against its part of the host
  pb::check_pb_fits(grid, options, pb_host_plan(p.solver), ranks > 1 ? available_memory_bytes(run.ranks_on_host) : 0,
                    ranks, p.maps_shared);
  p.threads = threads_to_use(run.threads);
  const Backend backend = p.solver == PbSolver::CudaMultigrid ? Backend::Cuda : Backend::Cpu;
  p.faces_kernel = &default_kernel(backend);
  p.coulomb_kernel = run.direct_sum ? run.direct_sum : p.faces_kernel;
  if (!p.coulomb_kernel->supports(PairModel::Coulomb))
    throw UsageError("kernel " + std::string(p.coulomb_kernel->name) +
                     " does not compute the Coulomb sum --model pb needs");
  p.dcs.threads = run.threads;
  p.dcs.device = run.device;
  p.dcs.workspace = run.workspace;
  p.split = options.formulation == PbFormulation::Split;
  p.scale =
      coulomb_constant(run.unit, options.temperature) / coulomb_constant(PotentialUnit::KTPerE, options.temperature);
  p.need_potential = level != PbEnergyLevel::None || run.keep_potential || maps_need_potential;
  // The device builds mol/smol/spl2 maps of atoms on the mesh and solves the linear equation; the
  // host builds the rest and keeps its maps for the energy terms and maps that need them.
  const bool host_maps = !pb::surface_on_device(options) || !pb::atoms_on_mesh(atoms, grid, run.threads) ||
                         (options.equation == PbEquation::Nonlinear && level != PbEnergyLevel::None) ||
                         level == PbEnergyLevel::Components || maps_need_coefficients;
  p.all_on_device = p.solver == PbSolver::CudaMultigrid && !host_maps;
  p.host_maps = host_maps;
  p.pipeline = p.all_on_device && pb::pipeline_applies_on_mesh(options);  // host_maps asked atoms_on_mesh
  p.device_energy = p.pipeline && level == PbEnergyLevel::Total && options.charges == PbChargeMethod::Spl2 &&
                    !run.keep_potential && !maps_need_potential && !run.focus_child && !run.energy_partition;
  pb::check_split_plan(grid, run.devices.size(), run.gpu_ranks, p.pipeline, p.need_potential && !p.device_energy);
  return p;
}

/// Whether the check against the GPU's free memory waits until the host has prepared its share (the device
/// pipeline on one GPU: nothing of the grid's size reaches the device before it): the device's context, a
/// process's first ~0.1 s, is then made beside that preparation (`espgrid apbs` and `map` start it early,
/// cuda::warm_up_device). A grid beyond the whole device is still refused first (no context needed).
bool device_check_deferred(const SolvePlan& plan, const PbRun& run) {
  return plan.pipeline && run.devices.size() <= 1 && !run.gpu_ranks && pb_host_plan(plan.solver) == pb::PbHostPlan::Gpu;
}

void check_device_memory(const pb::PbMemoryPlan& memory, const GridSpec& grid, const PbRun& run) {
  std::size_t free = 0, total = 0;
  cuda::pb_device_memory(run.device, free, total);
  pb::check_pb_memory(memory, grid, free, total, "GPU " + std::to_string(run.device), 0);
}

pb::PbMemoryPlan check_memory(const Atoms& atoms, const GridSpec& grid, const PbOptions& options, const PbRun& run,
                              const SolvePlan& plan) {
  pb::PbMemoryRequest r;
  r.where = pb_host_plan(plan.solver);
  const bool gpu = r.where == pb::PbHostPlan::Gpu;
  r.host_maps = plan.host_maps;
  r.pipeline = plan.pipeline;
  r.potential = plan.need_potential && !plan.device_energy;
  r.split = plan.split;
  r.ranks = run.across_ranks ? std::max(1, run.ranks) : 1;
  r.maps_shared = plan.maps_shared;
  const pb::PbMemoryPlan memory = pb::pb_memory_plan(atoms, grid, options, r);
  trace_process("PB solve: memory planned");
  if (plan.pipeline && run.devices.size() > 1) return pb::check_slab_memory(memory, grid, run.devices);
  if (run.gpu_ranks)
    return pb::check_rank_slab_memory(memory, grid, *run.gpu_ranks, run.device, run.ranks_on_device, run.ranks_on_host);
  pb::check_pb_host_memory(memory, grid, run.across_ranks ? run.ranks_on_host : 1);
  if (gpu && !device_check_deferred(plan, run)) check_device_memory(memory, grid, run);
  trace_process("PB solve: the host's memory checked");
  if (gpu && device_check_deferred(plan, run)) {  // the whole device, asked without its context
    const std::size_t total = cuda::pb_device_total_memory(run.device);
    pb::check_pb_memory(memory, grid, total, total, "GPU " + std::to_string(run.device), 0);
  }
  return memory;
}

}  // namespace espgrid::pb
