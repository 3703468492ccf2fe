#include "src/pb/pb_solve.h"

#include <algorithm>
#include <cmath>
#include <future>
#include <memory>
#include <new>
#include <optional>
#include <system_error>

#include "src/core/bulk_memory.h"
#include "src/core/errors.h"
#include "src/core/stopwatch.h"
#include "src/core/text_format.h"
#include "src/core/thread_count.h"
#include "src/pb/pb_boundary.h"
#include "src/pb/pb_cuda_driver.h"
#include "src/pb/pb_hypre.h"
#include "src/pb/pb_limits.h"
#include "src/pb/pb_memory.h"
#include "src/pb/pb_multigrid.h"
#include "src/pb/pb_nonlinear.h"
#include "src/pb/pb_pipeline.h"
#include "src/pb/pb_pipeline_driver.h"
#include "src/pb/pb_slabs.h"
#include "src/pb_numerics/pb_geometry.h"
#include "src/pb_numerics/pb_system_math.h"
#include "src/pb_surface/pb_charges.h"
#include "src/physics/physics_options.h"

namespace espgrid {

namespace pb {
namespace {

SolveReport solve_cuda(const PbSystem& system, std::vector<double>& u, const PbOptions& o, int device, int threads) {
  const MgSettings settings;
  const Stopwatch setup;
  const std::vector<MgLevel> levels = build_hierarchy(system, settings, threads);
  const double hierarchy_seconds = setup.seconds();
  std::vector<cuda::PbMgLevel> views = device_levels(levels);
  for (std::size_t l = 0; l < levels.size(); ++l) {
    views[l].wx = levels[l].wx.data();
    views[l].wy = levels[l].wy.data();
    views[l].wz = levels[l].wz.data();
    views[l].c = levels[l].c.data();
  }
  cuda::PbMgRun run;
  run.smoothing = settings.smoothing;
  run.coarsest_sweeps = settings.coarsest_sweeps;
  run.tolerance = o.tolerance;
  run.max_iterations = o.max_iterations;
  run.device = device;
  u.assign(system.size(), 0.0);
  const cuda::PbMgResult r =
      cuda::solve_pb_multigrid(views.data(), static_cast<int>(views.size()), system.rhs.data(), u.data(), run);
  SolveReport report;
  report.method = "espgrid multigrid-preconditioned CG (CUDA, double precision)";
  report.device = r.device;
  report.iterations = r.iterations;
  report.setup_seconds = hierarchy_seconds + r.upload_seconds;
  report.solve_seconds = r.solve_seconds + r.download_seconds;
  report.relative_residual = relative_residual(system, u, threads);
  report.converged = r.own_residual <= o.tolerance;
  return report;
}

}  // namespace
}  // namespace pb

namespace {

using pb::PbCoefficients;
using pb::PbSystem;

/// The checks that need no computation: options, atoms, the grid, focusing's inputs.
void check_request(const Atoms& atoms, const GridSpec& grid, const PbOptions& options, const PbRun& run) {
  validate(options);
  pb::check_atoms_have_radii(atoms, options);
  for (int d = 0; d < 3; ++d)
    if (grid.dims[d] < 5)
      throw UsageError("--model pb needs at least 5 grid points along every axis (the faces hold the boundary values)");
  if (!run.atoms_outside) pb::check_atoms_inside(atoms, grid);
  // The Debye-Hueckel boundary values hold outside every atom, and their float sums must not
  // overflow (pb_limits.h); a focusing level's atoms may leave its grid by design.
  if (!run.atoms_outside && (options.boundary == PbBoundary::Mdh || options.boundary == PbBoundary::Sdh))
    pb::check_pb_boundary(atoms, grid, options);
  const bool focus = options.boundary == PbBoundary::Focus;
  if (focus && (!run.focus_parent || !run.focus_parent->potential))
    throw UsageError("bcfl focus needs the coarser level's solution (PbRun::focus_parent)");
  if (!focus && run.focus_parent)
    throw UsageError("a focusing parent was given for bcfl " + boundary_name(options.boundary) + " (it needs focus)");
}

/// Which solver runs, where the direct sums run, and whether the GPU does everything.
struct SolvePlan {
  PbSolver solver = PbSolver::Auto;
  const KernelVariant* faces_kernel = nullptr;    ///< the boundary's direct sums (mdh)
  const KernelVariant* coulomb_kernel = nullptr;  ///< split: φ_Coulomb
  RunOptions dcs;                                 ///< how the direct sums run
  bool split = false;
  bool all_on_device = false;         ///< the GPU builds the maps, assembles, solves and combines
  bool pipeline = false;              ///< ... from the atoms alone (pb_pipeline.h)
  bool device_energy = false;         ///< the pipeline sums the spl2 energy itself (no φ comes back)
  bool host_maps = false;             ///< the host builds the coefficient maps
  bool need_potential = false;        ///< φ in double kT/e is needed (energies, maps, keep_potential)
  pb::PlaneRange coefficient_planes;  ///< the host's maps: a rank's share where only hypre reads them
  double scale = 1;                   ///< kT/e → run.unit
  int threads = 1;
};

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
  pb::check_pb_fits(grid, options, pb_host_plan(p.solver));  // before anything is allocated
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
  const PbEnergyLevel level = options.energy.level;
  bool maps_need_coefficients = false, maps_need_potential = false;
  for (const pb::PbMapKind kind : run.maps) {
    maps_need_coefficients = maps_need_coefficients || pb::pb_map_needs_coefficients(kind);
    maps_need_potential = maps_need_potential || pb::pb_map_needs_potential(kind);
  }
  p.need_potential = level != PbEnergyLevel::None || run.keep_potential || maps_need_potential;
  // The device builds mol/smol/spl2 maps of atoms on the mesh and solves the linear equation; the
  // host builds the rest and keeps its maps for the energy terms and maps that need them.
  const bool host_maps = !pb::surface_on_device(options) || !pb::atoms_on_mesh(atoms, grid) ||
                         (options.equation == PbEquation::Nonlinear && level != PbEnergyLevel::None) ||
                         level == PbEnergyLevel::Components || maps_need_coefficients;
  p.all_on_device = p.solver == PbSolver::CudaMultigrid && !host_maps;
  p.host_maps = host_maps;
  p.pipeline = p.all_on_device && pb::pipeline_applies(atoms, grid, options);
  p.device_energy = p.pipeline && level == PbEnergyLevel::Total && options.charges == PbChargeMethod::Spl2 &&
                    !run.keep_potential && !maps_need_potential && !run.focus_child && !run.energy_partition;
  if (p.solver == PbSolver::Hypre && options.equation != PbEquation::Nonlinear && level != PbEnergyLevel::Components &&
      !maps_need_coefficients)
    p.coefficient_planes = pb::hypre_coefficient_planes(grid, run.across_ranks);
  pb::check_split_plan(grid, run.devices.size(), run.gpu_ranks, p.pipeline, p.need_potential && !p.device_energy);
  return p;
}

/// The direct sums (the boundary values; split: the Coulomb part) and their times.
struct DirectSums {
  std::vector<double> boundary, coulomb;
  double boundary_seconds = 0, coulomb_seconds = 0;
};

/// The boundary values at the face nodes (boundary_nodes' order: the device pipeline's, no grid-sized
/// array on the host), or with `whole_grid` at every node (0 inside); mdh's bands fill `r`.
std::vector<double> boundary_values(const Atoms& atoms, const GridSpec& grid, const PbOptions& options,
                                    const PbRun& run, const SolvePlan& plan, bool whole_grid, pb::FaceSumReport* r) {
  if (options.boundary == PbBoundary::Mdh && plan.faces_kernel->backend != Backend::Cuda) {  // the grid kernels
    const pb::FaceSumShare share = pb::hypre_face_sum_share(plan.solver == PbSolver::Hypre && run.across_ranks);
    std::vector<double> full = pb::mdh_boundary(atoms, grid, options, *plan.faces_kernel, plan.dcs, r, &share);
    return whole_grid ? full : pb::face_values(full, grid);
  }
  const auto face_values = [&]() -> std::vector<double> {
    switch (options.boundary) {
      case PbBoundary::Zero:
        return std::vector<double>(pb::boundary_nodes(grid).size(), 0.0);
      case PbBoundary::Sdh:
        return pb::sdh_face_values(atoms, grid, options, plan.threads);
      case PbBoundary::Mdh:
        return pb::mdh_face_values(atoms, grid, options, run.device, r);
      case PbBoundary::Focus:
        return pb::focus_face_values(grid, run.focus_parent->grid, *run.focus_parent->potential, plan.threads);
    }
    throw Error("internal error: unknown PB boundary condition");
  };
  std::vector<double> faces = face_values();
  return whole_grid ? pb::on_the_faces(grid, faces) : faces;
}

DirectSums direct_sums(const Atoms& atoms, const GridSpec& grid, const PbOptions& options, const PbRun& run,
                       const SolvePlan& plan, pb::FaceSumReport* report) {
  DirectSums sums;
  Stopwatch clock;
  sums.boundary = boundary_values(atoms, grid, options, run, plan, true, report);
  sums.boundary_seconds = clock.seconds();
  if (plan.split) {
    clock.restart();
    sums.coulomb = pb::coulomb_map(atoms, grid, options, *plan.coulomb_kernel, plan.dcs);
    sums.coulomb_seconds = clock.seconds();
  }
  return sums;
}

/// What the solve leaves for the energies and maps.
struct Solved {
  std::vector<double> phi;                       ///< kT/e, every node (when plan.need_potential)
  std::vector<double> charge;                    ///< the spread charges, e (direct formulation)
  std::unique_ptr<PbCoefficients> coefficients;  ///< the host-built maps (host path)
  std::optional<double> fixed_charge;            ///< the device pipeline's Σ φ·q, kT (instead of φ)
  double device_peak_bytes = 0;                  ///< the device pipeline's peak
};

void record_phase(PbResult& result, const char* name, double seconds) { result.phases.push_back({name, seconds}); }

/// Whether the check against the GPU's free memory waits until the host has prepared its share (the device
/// pipeline on one GPU: nothing of the grid's size reaches the device before it): the device's context, a
/// process's first ~0.1 s, is then made beside that preparation (`espgrid apbs` and `map` start it early,
/// cuda::warm_up_device). A grid beyond the whole device is still refused first (no context needed).
bool device_check_deferred(const SolvePlan& plan, const PbRun& run) {
  return plan.pipeline && run.devices.size() <= 1 && !run.gpu_ranks && pb_host_plan(plan.solver) == pb::PbHostPlan::Gpu;
}

/// The plan's GPU share against what `run.device` has free (pb_memory.h).
void check_device_memory(const pb::PbMemoryPlan& memory, const GridSpec& grid, const PbRun& run) {
  std::size_t free = 0, total = 0;
  cuda::pb_device_memory(run.device, free, total);
  pb::check_pb_memory(memory, grid, free, total, "GPU " + std::to_string(run.device), 0);
}

/// The device pipeline (pb_pipeline.h): the GPU builds everything from the atoms, while the
/// boundary's direct sum runs on a thread of its own (also on the GPU) and only the face values
/// travel.
void solve_with_device_pipeline(const Atoms& atoms, const GridSpec& grid, const PbOptions& options, const PbRun& run,
                                const SolvePlan& plan, const pb::PbMemoryPlan& memory, PbResult& result,
                                Solved& solved) {
  double boundary_seconds = 0;
  std::future<std::vector<double>> faces = std::async(std::launch::async, [&] {
    const Stopwatch clock;
    std::vector<double> values = boundary_values(atoms, grid, options, run, plan, false, &result.boundary);
    boundary_seconds = clock.seconds();
    return values;
  });
  pb::PipelineRequest request;
  request.device = run.device;
  request.devices = run.devices;
  request.ranks = run.gpu_ranks;
  request.workspace = run.device_workspace.get();
  request.unit_scale = plan.scale;
  request.fixed_charge = plan.device_energy;
  request.potential = plan.need_potential && !plan.device_energy;
  request.faces = [&faces] { return faces.get(); };  // rethrows the sum's error, if any
  if (device_check_deferred(plan, run)) request.before_device = [&] { check_device_memory(memory, grid, run); };
  pb::PipelineSolve s = pb::solve_with_pipeline(atoms, grid, options, request, result.values);
  result.sas_points = s.sas_points;
  result.first_plane = s.first_plane;
  result.solve = s.solve;
  pb::add_boundary_phases(result.phases, boundary_seconds, result.boundary);
  for (const PhaseTiming& phase : s.phases) result.phases.push_back(phase);
  solved.phi = std::move(s.potential);
  solved.fixed_charge = s.fixed_charge;
  solved.device_peak_bytes = s.device_peak_bytes;
  // φ came back for energies or maps the device does not sum: they need the spread charges too
  // (the host's spreading is the device's, bit for bit: pb_pipeline_inputs.cu is built without FMA).
  if (!solved.phi.empty() && !plan.split) solved.charge = pb::spread_charges(atoms, grid, options.charges);
}

/// The GPU: maps, system, hierarchy, solve and combination on the device; the host prepares the
/// inputs (SAS neighbour lists or spline rows, spread charges, the levels' shape) while the direct
/// sums run on a thread of their own (on one H200 the 47k-atom 161³ map spent 157 ms in the sums,
/// most of it the device's first use, and 125 ms in the host inputs, one after the other).
void solve_on_device(const Atoms& atoms, const GridSpec& grid, const PbOptions& options, const PbRun& run,
                     const SolvePlan& plan, const pb::PbMemoryPlan& memory, PbResult& result, Solved& solved) {
  if (plan.pipeline) return solve_with_device_pipeline(atoms, grid, options, run, plan, memory, result, solved);
  std::future<DirectSums> sums_beside =
      std::async(std::launch::async, [&] { return direct_sums(atoms, grid, options, run, plan, &result.boundary); });
  Stopwatch clock;
  const std::unique_ptr<pb::DeviceSurfaceInputs> inputs =
      pb::device_surface_inputs(atoms, grid, options, run.device, plan.threads);
  if (!plan.split) solved.charge = pb::spread_charges(atoms, grid, options.charges);
  const pb::MgSettings settings;
  const std::vector<pb::MgLevel> shape = pb::hierarchy_shape(
      {static_cast<long>(grid.dims[0]), static_cast<long>(grid.dims[1]), static_cast<long>(grid.dims[2])}, settings);
  const std::vector<cuda::PbMgLevel> levels = pb::device_levels(shape);
  cuda::PbDeviceSolveInput in;
  in.surface = inputs->input;
  in.assembly = pb::assembly_args(grid, options, plan.split);
  in.levels = levels.data();
  in.level_count = static_cast<int>(levels.size());
  in.run.smoothing = settings.smoothing;
  in.run.coarsest_sweeps = settings.coarsest_sweeps;
  in.run.tolerance = options.tolerance;
  in.run.max_iterations = options.max_iterations;
  in.run.device = run.device;
  in.unit_scale = plan.scale;
  in.workspace = run.device_workspace.get();
  cuda::PbNewtonInput newton;
  if (options.equation == PbEquation::Nonlinear) {  // npbe: Newton's steps on the device too
    newton.ions = pb::boltzmann_species(options);
    newton.settings = pb::newton_settings(options);
    in.nonlinear = &newton;
  }
  assign_poisoned(result.values, grid.point_count());  // every node written, or NaN; faulted in by several cores
  in.values = result.values.data();
  if (plan.need_potential) {
    assign_poisoned(solved.phi, grid.point_count());
    in.potential = solved.phi.data();
  }
  record_phase(result, "host inputs (beside the direct sums)", clock.seconds());
  clock.restart();
  const DirectSums sums = sums_beside.get();  // rethrows the sums' error, if any
  in.charge = plan.split ? nullptr : solved.charge.data();
  in.coulomb = plan.split ? sums.coulomb.data() : nullptr;
  in.boundary = sums.boundary.data();
  pb::add_boundary_phases(result.phases, sums.boundary_seconds, result.boundary);
  if (plan.split) record_phase(result, "coulomb", sums.coulomb_seconds);
  record_phase(result, "waiting for the direct sums", clock.seconds());
  cuda::PbDeviceSolveResult r;
  cuda::solve_pb_on_device(in, r);
  result.sas_points = r.sas_points;
  result.solve.method =
      "espgrid multigrid-preconditioned CG (CUDA, double precision; surface, assembly and hierarchy on the device)";
  if (in.nonlinear) result.solve.method = pb::newton_method(result.solve.method, r.newton, r.clipped_nodes);
  result.solve.device = r.device;
  result.solve.iterations = r.iterations;
  result.solve.relative_residual = r.relative_residual;
  result.solve.setup_seconds = r.surface_seconds + r.assemble_seconds;
  result.solve.solve_seconds = r.solve_seconds;
  result.solve.converged = r.own_residual <= options.tolerance;
  record_phase(result, "device surface", r.surface_seconds);
  record_phase(result, "device assembly and hierarchy", r.assemble_seconds);
  record_phase(result, "device solve", r.solve_seconds);
  record_phase(result, "device call (all, with copies)", r.wall_seconds);
}

/// The host builds the maps and the system; hypre, the CPU emulation or (the hybrid path) the CUDA
/// multigrid solves; npbe goes to pb::solve_nonlinear.
void solve_on_host(const Atoms& atoms, const GridSpec& grid, const PbOptions& options, const PbRun& run,
                   const SolvePlan& plan, PbResult& result, Solved& solved) {
  const DirectSums sums = direct_sums(atoms, grid, options, run, plan, &result.boundary);
  pb::add_boundary_phases(result.phases, sums.boundary_seconds, result.boundary);
  if (plan.split) record_phase(result, "coulomb", sums.coulomb_seconds);
  Stopwatch clock;
  solved.coefficients = std::make_unique<PbCoefficients>(
      pb::build_coefficients_on_planes(atoms, grid, options, !plan.split, plan.coefficient_planes, plan.threads));
  const PbCoefficients& coefficients = *solved.coefficients;
  record_phase(result, "surface", clock.seconds());
  result.sas_points = coefficients.sas_points;
  clock.restart();
  PbSystem system = pb::assemble_system(coefficients, sums.boundary, options, options.formulation,
                                        plan.split ? &sums.coulomb : nullptr, plan.threads);
  record_phase(result, "assemble", clock.seconds());
  std::vector<double> u;
  if (options.equation == PbEquation::Nonlinear) {  // npbe: src/pb/pb_nonlinear.h
    result.solve = pb::solve_nonlinear(system, u, options, plan.split ? &sums.coulomb : nullptr, plan.solver,
                                       plan.threads, run.across_ranks, run.device);
  } else if (plan.solver == PbSolver::Hypre) {
    result.solve =
        pb::solve_hypre(system, u, options.tolerance, options.max_iterations, plan.threads, run.across_ranks);
  } else if (plan.solver == PbSolver::CpuMultigrid) {
    result.solve =
        pb::solve_multigrid_cpu(system, u, options.tolerance, options.max_iterations, pb::MgSettings{}, plan.threads);
  } else {
    result.solve = pb::solve_cuda(system, u, options, run.device, plan.threads);
  }
  record_phase(result, "solver setup", result.solve.setup_seconds);
  record_phase(result, "solve", result.solve.solve_seconds);
  if (!result.solve.converged) return;
  clock.restart();
  solved.phi = pb::combine(system, u, plan.split ? &sums.coulomb : nullptr, plan.threads);
  result.values.resize(solved.phi.size());
  for (std::size_t i = 0; i < solved.phi.size(); ++i) result.values[i] = static_cast<float>(solved.phi[i] * plan.scale);
  if (!plan.split) solved.charge = coefficients.charge;
  record_phase(result, "combine", clock.seconds());
}

/// Energies, maps and the potential, from what the solve left.
void report(const Atoms& atoms, const GridSpec& grid, const PbOptions& options, const PbRun& run, const SolvePlan& plan,
            PbResult& result, Solved& solved) {
  Stopwatch clock;
  pb::EnergyInputs in;
  in.threads = plan.threads;
  in.atoms = &atoms;
  in.grid = &grid;
  in.options = &options;
  in.potential = &solved.phi;
  in.charge = plan.split ? nullptr : &solved.charge;
  in.coefficients = solved.coefficients.get();
  if (run.energy_partition) in.partition = &*run.energy_partition;
  const PbEnergyLevel level = options.energy.level;
  const pb::PbEnergyTerms from_coarser = run.focus_parent ? run.focus_parent->outside : pb::PbEnergyTerms{};
  if (level != PbEnergyLevel::None) {  // the GPU paths keep no potential when no energy is asked for
    result.energy = solved.fixed_charge
                        ? pb::energy_from_fixed_charge(options, level, *solved.fixed_charge, from_coarser)
                        : pb::apbs_energy(in, level, from_coarser);
    if (run.focus_child) result.energy.outside_child = pb::energy_outside(in, *run.focus_child, from_coarser);
  }
  for (const pb::PbMapKind kind : run.maps) {
    pb::PbMapInputs m;
    m.atoms = &atoms;
    m.grid = &grid;
    m.options = &options;
    m.potential = &solved.phi;
    if (solved.coefficients) {
      solved.coefficients->charge = solved.charge;
      m.coefficients = solved.coefficients.get();
    }
    m.threads = plan.threads;
    result.maps.push_back(pb::pb_map(kind, m));
  }
  if (run.keep_potential) result.potential = std::move(solved.phi);
  if (level != PbEnergyLevel::None || !run.maps.empty()) record_phase(result, "energies and maps", clock.seconds());
}

/// The memory this plan needs, checked against what the device and the host have free (pb_memory.h);
/// the device's share later where device_check_deferred.
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
  const pb::PbMemoryPlan memory = pb::pb_memory_plan(atoms, grid, options, r);
  if (plan.pipeline && run.devices.size() > 1) return pb::check_slab_memory(memory, grid, run.devices);
  if (run.gpu_ranks)
    return pb::check_rank_slab_memory(memory, grid, *run.gpu_ranks, run.device, run.ranks_on_device, run.ranks_on_host);
  pb::check_pb_host_memory(memory, grid, run.across_ranks ? run.ranks_on_host : 1);
  if (gpu && !device_check_deferred(plan, run)) check_device_memory(memory, grid, run);
  if (gpu && device_check_deferred(plan, run)) {  // the whole device, asked without its context
    const std::size_t total = cuda::pb_device_total_memory(run.device);
    pb::check_pb_memory(memory, grid, total, total, "GPU " + std::to_string(run.device), 0);
  }
  return memory;
}

}  // namespace

PbResult solve_pb(const Atoms& atoms, const GridSpec& grid, const PbOptions& options, const PbRun& run) {
  const Stopwatch total;
  PbResult result;
  check_request(atoms, grid, options, run);
  const SolvePlan plan = plan_solve(atoms, grid, options, run);
  record_phase(result, "checks and solver choice", total.seconds());
  const Stopwatch memory_clock;
  const pb::PbMemoryPlan memory = check_memory(atoms, grid, options, run, plan);
  record_phase(result,
               device_check_deferred(plan, run) ? "memory check (the host's; the GPU's after the host's preparation)"
                                                : "memory check (a GPU's first: its context)",
               memory_clock.seconds());
  if (run.device_ready.valid() && pb_host_plan(plan.solver) == pb::PbHostPlan::Gpu) {  // made beside the checks
    const Stopwatch waiting;
    run.device_ready.wait();
    record_phase(result, "waiting for the device's context (made beside the input's reading)", waiting.seconds());
  }
  Solved solved;
  try {
    if (plan.all_on_device)
      solve_on_device(atoms, grid, options, run, plan, memory, result, solved);
    else
      solve_on_host(atoms, grid, options, run, plan, result, solved);
  } catch (const std::bad_alloc&) {
    pb::throw_out_of_memory_part_way(grid, memory);
  } catch (const std::system_error& e) {  // a thread whose stack found no room
    if (e.code() != std::errc::resource_unavailable_try_again && e.code() != std::errc::not_enough_memory) throw;
    pb::throw_out_of_memory_part_way(grid, memory);
  }
  if (!result.solve.converged)
    throw Error("the PB solver (" + result.solve.method + ") did not reach the relative residual " +
                short_scientific(options.tolerance) + " in " + std::to_string(options.max_iterations) +
                " iterations (it reached " + short_scientific(result.solve.relative_residual) +
                "); raise --pb-max-iterations or --pb-tolerance");
  report(atoms, grid, options, run, plan, result, solved);
  result.direct_sum = options.boundary == PbBoundary::Mdh
                          ? "boundary " + std::string(plan.faces_kernel->name) + pb::describe(result.boundary)
                          : "boundary " + boundary_name(options.boundary) + " (no sum)";
  if (plan.split) result.direct_sum += ", Coulomb part " + std::string(plan.coulomb_kernel->name);
  result.summary = describe(options) + "; " + result.solve.method + ": " + std::to_string(result.solve.iterations) +
                   " iterations, relative residual " + short_scientific(result.solve.relative_residual) +
                   " (tolerance " + short_scientific(options.tolerance) + "); " +
                   memory.summary(solved.device_peak_bytes);
  result.seconds = total.seconds();
  return result;
}

}  // namespace espgrid
