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
#include "src/core/process_trace.h"
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
#include "src/pb/pb_solve_plan.h"
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
using pb::SolvePlan;  // pb_solve_plan.h: the checks, the plan and its memory

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
    if (whole_grid) return full;  // moved: `whole_grid ? full : ...` copied the grid-sized array
    return pb::face_values(full, grid);
  }
  const auto face_values = [&]() -> std::vector<double> {
    switch (options.boundary) {
      case PbBoundary::Zero:
        return std::vector<double>(pb::boundary_nodes(grid).size(), 0.0);
      case PbBoundary::Sdh:
        return pb::sdh_face_values(atoms, grid, options, plan.threads);
      case PbBoundary::Mdh:
        return pb::mdh_face_values(atoms, grid, options, run.device, r, plan.threads);
      case PbBoundary::Focus:
        return pb::focus_face_values(grid, run.focus_parent->grid, *run.focus_parent->potential, plan.threads);
    }
    throw Error("internal error: unknown PB boundary condition");
  };
  std::vector<double> faces = face_values();
  if (whole_grid) return pb::on_the_faces(grid, faces);
  return faces;  // moved (a conditional expression would copy it)
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

/// The device pipeline (pb_pipeline.h): the GPU builds everything from the atoms, while the
/// boundary's direct sum runs on a thread of its own (also on the GPU) and only the face values
/// travel.
void solve_with_device_pipeline(const Atoms& atoms, const GridSpec& grid, const PbOptions& options, const PbRun& run,
                                const SolvePlan& plan, const pb::PbMemoryPlan& memory, PbResult& result,
                                Solved& solved) {
  double boundary_seconds = 0;
  std::future<std::vector<double>> faces = std::async(std::launch::async, [&] {
    trace_process("boundary: started (beside the device's surface)");
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
  if (pb::device_check_deferred(plan, run)) request.before_device = [&] { pb::check_device_memory(memory, grid, run); };
  if (run.map_values && run.planes_solved) request.planes_copied = run.planes_solved;
  pb::PipelineSolve s =
      pb::solve_with_pipeline(atoms, grid, options, request, run.map_values ? *run.map_values : result.values);
  result.sas_points = s.sas_points;
  result.first_plane = s.first_plane;
  result.share_only = run.gpu_ranks && run.gpu_ranks->rank != 0;
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
  DirectSums sums = direct_sums(atoms, grid, options, run, plan, &result.boundary);
  pb::add_boundary_phases(result.phases, sums.boundary_seconds, result.boundary);
  if (plan.split) record_phase(result, "coulomb", sums.coulomb_seconds);
  Stopwatch clock;
  solved.coefficients = std::make_unique<PbCoefficients>(pb::build_coefficients_on_planes(
      atoms, grid, options, !plan.split && !plan.share_only, plan.coefficient_planes, plan.threads));
  if (plan.share_only)
    solved.coefficients->charge = pb::spread_charges_on_planes(
        atoms, grid, options.charges, plan.coefficient_planes.first, plan.coefficient_planes.end);
  const PbCoefficients& coefficients = *solved.coefficients;
  record_phase(result, "surface", clock.seconds());
  result.sas_points = coefficients.sas_points;
  clock.restart();
  PbSystem system = pb::assemble_system(coefficients, std::move(sums.boundary), options, options.formulation,
                                        plan.split ? &sums.coulomb : nullptr, plan.threads);
  if (plan.share_only) {  // the fixed values are read by combine() alone, which such a rank does not run
    const std::size_t plane = grid.dims[0] * grid.dims[1];
    const auto at = [&](long k) { return plane * static_cast<std::size_t>(std::max(0L, k)); };
    release_outside(system.fixed, at(plan.coefficient_planes.first - 1), at(plan.coefficient_planes.end + 1));
  }
  record_phase(result, "assemble", clock.seconds());
  std::vector<double> u;
  if (options.equation == PbEquation::Nonlinear) {  // npbe: src/pb/pb_nonlinear.h
    result.solve = pb::solve_nonlinear(system, u, options, plan.split ? &sums.coulomb : nullptr, plan.solver,
                                       plan.threads, run.across_ranks, run.device);
  } else if (plan.solver == PbSolver::Hypre) {
    result.solve =
        pb::solve_hypre(system, u, options.tolerance, options.max_iterations, plan.threads, run.across_ranks,
                        plan.solution_to_rank_zero ? pb::HypreSolution::RankZero : pb::HypreSolution::EveryRank);
  } else if (plan.solver == PbSolver::CpuMultigrid) {
    result.solve =
        pb::solve_multigrid_cpu(system, u, options.tolerance, options.max_iterations, pb::MgSettings{}, plan.threads);
  } else {
    result.solve = pb::solve_cuda(system, u, options, run.device, plan.threads);
  }
  record_phase(result, "solver setup", result.solve.setup_seconds);
  record_phase(result, "solve", result.solve.solve_seconds);
  if (!result.solve.converged) return;
  if (!result.solve.solution_whole) {  // rank 0 makes the map; this rank holds its planes of u alone
    result.share_only = true;
    return;
  }
  clock.restart();
  solved.phi = pb::combine(system, u, plan.split ? &sums.coulomb : nullptr, plan.threads);
  result.values.resize(solved.phi.size());
  for (std::size_t i = 0; i < solved.phi.size(); ++i) result.values[i] = static_cast<float>(solved.phi[i] * plan.scale);
  if (!plan.split) solved.charge = coefficients.charge;
  record_phase(result, "combine", clock.seconds());
}

/// Energies, maps and the potential, from what the solve left (on a rank's share: the energy the
/// device pipeline summed over the ranks, nothing else).
void report(const Atoms& atoms, const GridSpec& grid, const PbOptions& options, const PbRun& run, const SolvePlan& plan,
            PbResult& result, Solved& solved) {
  if (result.share_only && !solved.fixed_charge) return;
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

}  // namespace

PbResult solve_pb(const Atoms& atoms, const GridSpec& grid, const PbOptions& options, const PbRun& run) {
  const Stopwatch total;
  PbResult result;
  pb::check_request(atoms, grid, options, run);
  trace_process("PB solve: the request checked (atoms, grid, boundary)");
  const SolvePlan plan = pb::plan_solve(atoms, grid, options, run);
  trace_process("PB solve: planned");
  record_phase(result, "checks and solver choice", total.seconds());
  const Stopwatch memory_clock;
  const pb::PbMemoryPlan memory = pb::check_memory(atoms, grid, options, run, plan);
  trace_process("PB solve: memory checked");
  record_phase(result,
               pb::device_check_deferred(plan, run)
                   ? "memory check (the host's; the GPU's after the host's preparation)"
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
  if (run.map_values && !result.values.empty()) *run.map_values = std::move(result.values);
  result.seconds = total.seconds();
  return result;
}

}  // namespace espgrid
