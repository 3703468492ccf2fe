#include "src/pb/pb_solve.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <future>
#include <limits>
#include <memory>

#include "src/compute/point_sum_inputs.h"
#include "src/compute/prepared_problem.h"
#include "src/core/errors.h"
#include "src/core/stopwatch.h"
#include "src/core/text_format.h"
#include "src/pb/pb_cuda_driver.h"
#include "src/pb/pb_geometry.h"
#include "src/pb/pb_hypre.h"
#include "src/pb/pb_limits.h"
#include "src/pb/pb_multigrid.h"
#include "src/pb/pb_system_math.h"
#include "src/physics/physics_options.h"

namespace espgrid {

std::string pb_solver_name(PbSolver solver) {
  switch (solver) {
    case PbSolver::Auto:
      return "auto";
    case PbSolver::Hypre:
      return "hypre";
    case PbSolver::CudaMultigrid:
      return "cuda-mg";
    case PbSolver::CpuMultigrid:
      return "cpu-mg";
  }
  return "?";
}

PbSolver parse_pb_solver(const std::string& text) {
  for (const PbSolver s : {PbSolver::Auto, PbSolver::Hypre, PbSolver::CudaMultigrid, PbSolver::CpuMultigrid})
    if (text == pb_solver_name(s)) return s;
  throw UsageError("--pb-solver must be auto, hypre, cuda-mg or cpu-mg, got '" + text + "'");
}

namespace pb {
namespace {

int thread_count(int threads) { return threads > 0 ? threads : omp_get_max_threads(); }

/// The sum of `kernel` with `physics` over `atoms` on `grid`, as doubles (the kernels write floats).
std::vector<double> direct_sum(const Atoms& atoms, const GridSpec& grid, const PhysicsOptions& physics,
                               const KernelVariant& kernel, const RunOptions& run) {
  const PreparedProblem problem = PreparedProblem::for_physics(atoms, grid, physics);
  std::vector<float> out(grid.point_count(), std::numeric_limits<float>::quiet_NaN());
  RunOptions r = run;
  r.progress = nullptr;
  r.planes_done = nullptr;
  kernel.run(problem.view(out.data()), r);
  return {out.begin(), out.end()};
}

/// The atoms with their axes permuted (new axis d = old axis perm[d]) and charges replaced.
Atoms permuted(const Atoms& atoms, const int perm[3], const std::vector<double>& charges) {
  Atoms out;
  out.reserve(atoms.size());
  const std::vector<double>* axes[3] = {&atoms.x, &atoms.y, &atoms.z};
  for (std::size_t a = 0; a < atoms.size(); ++a)
    out.push_back((*axes[perm[0]])[a], (*axes[perm[1]])[a], (*axes[perm[2]])[a], charges[a], atoms.radius[a]);
  return out;
}

}  // namespace

namespace {

/// The linear indices of the grid's boundary nodes (every node on one of the six faces), once each.
std::vector<std::size_t> boundary_nodes(const GridSpec& grid) {
  const std::int64_t n0 = grid.dims[0], n1 = grid.dims[1], n2 = grid.dims[2];
  std::vector<std::size_t> out;
  out.reserve(static_cast<std::size_t>(2 * (n0 * n1 + n1 * n2 + n0 * n2)));
  for (std::int64_t l = 0; l < n2; ++l)
    for (std::int64_t j = 0; j < n1; ++j) {
      const bool whole_row = l == 0 || l == n2 - 1 || j == 0 || j == n1 - 1;
      for (std::int64_t i = 0; i < n0; i += (whole_row || i == n0 - 1) ? 1 : n0 - 1)
        out.push_back(static_cast<std::size_t>(i + n0 * (j + n1 * l)));
    }
  return out;
}

}  // namespace

std::vector<double> mdh_boundary(const Atoms& atoms, const GridSpec& grid, const PbOptions& o,
                                 const KernelVariant& kernel, const RunOptions& run) {
  // APBS bcfl mdh: every atom a Debye–Hückel sphere of its own radius a in the solvent:
  // φ = k q e^(−κ(d − a)) / (ε_w (1 + κa) d). The factor e^(κa)/(1 + κa) goes into the charge, and
  // the rest is espgrid's `debye` pair model in the solvent dielectric (`coulomb` without salt).
  const double kappa = pb_kappa(o);
  std::vector<double> q(atoms.size());
  for (std::size_t a = 0; a < atoms.size(); ++a)
    q[a] = atoms.charge[a] * (kappa > 0 ? std::exp(kappa * atoms.radius[a]) / (1.0 + kappa * atoms.radius[a]) : 1.0);
  PhysicsOptions physics;
  physics.unit = PotentialUnit::KTPerE;
  physics.temperature = o.temperature;
  physics.dielectric = o.solvent_dielectric;
  physics.model = kappa > 0 ? PairModel::Debye : PairModel::Coulomb;
  physics.ionic_strength = kappa > 0 ? o.ionic_strength : 0.0;
  const long n[3] = {static_cast<long>(grid.dims[0]), static_cast<long>(grid.dims[1]), static_cast<long>(grid.dims[2])};
  std::vector<double> fixed(grid.point_count(), 0.0);
  if (kernel.backend == Backend::Cuda) {
    // On a GPU every face node at once, through the point kernel: a face is a grid of one plane,
    // too few points for the map kernels to fill the device (on an H200 the six faces of a 161³
    // grid took 114 ms through cuda-dualpipe for ~4 ms of terms).
    const auto faces = boundary_nodes(grid);
    std::array<double, 3> centre;
    for (int d = 0; d < 3; ++d)
      centre[d] = grid.origin[d] + 0.5 * grid.spacing[d] * static_cast<double>(grid.dims[d] - 1);
    std::vector<double> points(3 * faces.size());
    for (std::size_t f = 0; f < faces.size(); ++f) {
      const std::size_t idx = faces[f];
      const auto i = static_cast<std::int64_t>(idx % static_cast<std::size_t>(n[0]));
      const auto j = static_cast<std::int64_t>((idx / static_cast<std::size_t>(n[0])) % static_cast<std::size_t>(n[1]));
      const auto l = static_cast<std::int64_t>(idx / static_cast<std::size_t>(n[0] * n[1]));
      points[3 * f] = grid.position(0, i);
      points[3 * f + 1] = grid.position(1, j);
      points[3 * f + 2] = grid.position(2, l);
    }
    const PointSumInputs inputs(atoms.x, atoms.y, atoms.z, q, coulomb_factor(physics), points, centre);
    std::vector<float> values(faces.size());
    cuda::potential_at_points(inputs.problem(physics.model, pair_parameters(physics), values.data()), run.device,
                              nullptr);
    for (std::size_t f = 0; f < faces.size(); ++f) fixed[faces[f]] = values[f];
    return fixed;
  }
  // Each pair of faces normal to axis d is a plane of the other two axes: sum on it as a grid of
  // one z-plane (the kernels' fast layout) with the atoms' axes permuted to match.
  for (int d = 0; d < 3; ++d) {
    const int u = d == 0 ? 1 : 0, v = d == 2 ? 1 : 2;  // the face's axes, u fastest
    const int perm[3] = {u, v, d};
    const Atoms turned = permuted(atoms, perm, q);
    for (int side = 0; side < 2; ++side) {
      GridSpec face;
      face.dims = {grid.dims[u], grid.dims[v], 1};
      face.spacing = {grid.spacing[u], grid.spacing[v], grid.spacing[d]};
      face.origin = {grid.origin[u], grid.origin[v], grid.position(d, side ? grid.dims[d] - 1 : 0)};
      const std::vector<double> values = direct_sum(turned, face, physics, kernel, run);
      const long fixed_index = side ? n[d] - 1 : 0;
      for (long b = 0; b < n[v]; ++b)
        for (long a = 0; a < n[u]; ++a) {
          long idx[3];
          idx[u] = a;
          idx[v] = b;
          idx[d] = fixed_index;
          fixed[static_cast<std::size_t>(idx[0] + n[0] * (idx[1] + n[1] * idx[2]))] =
              values[static_cast<std::size_t>(a + n[u] * b)];
        }
    }
  }
  return fixed;
}

std::vector<double> coulomb_map(const Atoms& atoms, const GridSpec& grid, const PbOptions& o,
                                const KernelVariant& kernel, const RunOptions& run) {
  PhysicsOptions physics;
  physics.unit = PotentialUnit::KTPerE;
  physics.temperature = o.temperature;
  physics.dielectric = o.solute_dielectric;
  physics.model = PairModel::Coulomb;
  return direct_sum(atoms, grid, physics, kernel, run);
}

AssemblyArgs assembly_args(const GridSpec& g, const PbOptions& o, bool split) {
  AssemblyArgs a;
  for (int d = 0; d < 3; ++d) a.n[d] = static_cast<long>(g.dims[d]);
  const double hx = g.spacing[0], hy = g.spacing[1], hz = g.spacing[2];
  a.geo[0] = hy * hz / hx;
  a.geo[1] = hx * hz / hy;
  a.geo[2] = hx * hy / hz;
  const double kappa = pb_kappa(o);
  a.mass = o.solvent_dielectric * kappa * kappa * (hx * hy * hz);  // APBS zkappa2 · volume
  a.zmagic = source_scale(o.temperature);
  a.eps_p = o.solute_dielectric;
  a.split = split;
  return a;
}

PbSystem assemble_system(const PbCoefficients& coef, const std::vector<double>& boundary, const PbOptions& o,
                         PbFormulation formulation, const std::vector<double>* coulomb, int threads) {
  threads = thread_count(threads);
  const GridSpec& g = coef.grid;
  const bool split = formulation == PbFormulation::Split;
  if (split && (!coulomb || coulomb->size() != g.point_count()))
    throw Error("internal error: the split formulation needs the Coulomb map");
  if (!split && coef.charge.size() != g.point_count())
    throw Error("internal error: the direct formulation needs the spread charges");
  PbSystem s;
  s.grid = g;
  const std::size_t size = g.point_count();
  s.wx.assign(size, 0.0);
  s.wy.assign(size, 0.0);
  s.wz.assign(size, 0.0);
  s.c.assign(size, 0.0);
  s.rhs.assign(size, 0.0);
  s.fixed.assign(size, 0.0);
  AssemblyArgs a = assembly_args(g, o, split);
  a.eps_x = coef.eps_x.data();
  a.eps_y = coef.eps_y.data();
  a.eps_z = coef.eps_z.data();
  a.accessibility = coef.accessibility.data();
  a.charge = split ? nullptr : coef.charge.data();
  a.coulomb = split ? coulomb->data() : nullptr;
  a.boundary = boundary.data();
  a.wx = s.wx.data();
  a.wy = s.wy.data();
  a.wz = s.wz.data();
  a.c = s.c.data();
  a.rhs = s.rhs.data();
  const long* n = a.n;
#pragma omp parallel for schedule(static) num_threads(threads)
  for (long k = 0; k < n[2]; ++k)
    for (long j = 0; j < n[1]; ++j)
      for (long i = 0; i < n[0]; ++i) {
        assemble_coefficients(a, i, j, k);
        if (s.on_boundary(i, j, k))
          s.fixed[static_cast<std::size_t>(i + n[0] * (j + n[1] * k))] =
              boundary[static_cast<std::size_t>(i + n[0] * (j + n[1] * k))];
      }
#pragma omp parallel for schedule(static) num_threads(threads)
  for (long k = 0; k < n[2]; ++k)
    for (long j = 0; j < n[1]; ++j)
      for (long i = 0; i < n[0]; ++i) assemble_rhs(a, i, j, k);
  return s;
}

std::vector<double> combine(const PbSystem& s, const std::vector<double>& u, const std::vector<double>* coulomb) {
  std::vector<double> phi(s.size());
  const long n[3] = {static_cast<long>(s.grid.dims[0]), static_cast<long>(s.grid.dims[1]),
                     static_cast<long>(s.grid.dims[2])};
#pragma omp parallel for schedule(static)
  for (long k = 0; k < n[2]; ++k)
    for (long j = 0; j < n[1]; ++j)
      for (long i = 0; i < n[0]; ++i)
        phi[static_cast<std::size_t>(i + n[0] * (j + n[1] * k))] =
            combined_value(n, s.fixed.data(), u.data(), coulomb ? coulomb->data() : nullptr, i, j, k);
  return phi;
}

namespace {

SolveReport solve_cuda(const PbSystem& system, std::vector<double>& u, const PbOptions& o, int device, int threads) {
  const MgSettings settings;
  const Stopwatch setup;
  const std::vector<MgLevel> levels = build_hierarchy(system, settings, threads);
  const double hierarchy_seconds = setup.seconds();
  std::vector<cuda::PbMgLevel> views(levels.size());
  for (std::size_t l = 0; l < levels.size(); ++l) {
    cuda::PbMgLevel& v = views[l];
    for (int d = 0; d < 3; ++d) {
      v.n[d] = levels[l].n[static_cast<std::size_t>(d)];
      v.coarsened[d] = levels[l].axes[static_cast<std::size_t>(d)].coarsened;
      v.fine_of[d] = levels[l].axes[static_cast<std::size_t>(d)].fine_of.data();
      v.coarse_lo[d] = levels[l].axes[static_cast<std::size_t>(d)].coarse_lo.data();
      v.mid[d] = levels[l].axes[static_cast<std::size_t>(d)].mid.data();
    }
    v.wx = levels[l].wx.data();
    v.wy = levels[l].wy.data();
    v.wz = levels[l].wz.data();
    v.c = levels[l].c.data();
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

PbResult solve_pb(const Atoms& atoms, const GridSpec& grid, const PbOptions& options, const PbRun& run) {
  using namespace pb;
  const Stopwatch total;
  validate(options);
  if (atoms.empty()) throw UsageError("--model pb needs at least one atom");
  if (*std::max_element(atoms.radius.begin(), atoms.radius.end()) <= pb::kNoRadius)
    throw UsageError(
        "--model pb needs atomic radii (they draw the molecular surface), and every atom's radius is 0: "
        "give a PQR with its radius column (or, from Python, radii=)");
  for (int d = 0; d < 3; ++d)
    if (grid.dims[d] < 5)
      throw UsageError("--model pb needs at least 5 grid points along every axis (the faces hold the boundary values)");
  check_atoms_inside(atoms, grid);
  check_pb_boundary(atoms, grid, options);
  const int threads = thread_count(run.threads);
  // The solver, and with it where the direct sums run.
  PbSolver solver = run.solver;
  std::string cuda_reason;
  const bool have_cuda = cuda_available(&cuda_reason);
  if (solver == PbSolver::Auto) {
    std::string hypre_reason;
    if (have_cuda)
      solver = PbSolver::CudaMultigrid;
    else if (hypre_available(&hypre_reason))
      solver = PbSolver::Hypre;
    else
      throw Error("--model pb has no solver here: no usable GPU (" + cuda_reason + ") and " + hypre_reason);
  }
  if (solver == PbSolver::CudaMultigrid && !have_cuda) throw Error("the CUDA PB solver needs a GPU: " + cuda_reason);
  if (solver == PbSolver::Hypre) {
    std::string reason;
    if (!hypre_available(&reason)) throw Error(reason);
  }
  check_pb_fits(grid, options, solver == PbSolver::CudaMultigrid);
  if (run.across_ranks && solver != PbSolver::Hypre)
    throw UsageError("a PB solve across MPI ranks runs on hypre (--backend cpu)");
  const Backend backend = solver == PbSolver::CudaMultigrid ? Backend::Cuda : Backend::Cpu;
  const KernelVariant& faces_kernel = default_kernel(backend);
  const KernelVariant& coulomb_kernel = run.direct_sum ? *run.direct_sum : faces_kernel;
  if (!coulomb_kernel.supports(PairModel::Coulomb))
    throw UsageError("kernel " + std::string(coulomb_kernel.name) +
                     " does not compute the Coulomb sum --model pb needs");
  RunOptions dcs;
  dcs.threads = run.threads;
  dcs.device = run.device;

  PbResult result;
  auto phase = [&](const char* name, const Stopwatch& clock) { result.phases.push_back({name, clock.seconds()}); };
  Stopwatch clock;
  const bool split = options.formulation == PbFormulation::Split;
  const double scale =
      coulomb_constant(run.unit, options.temperature) / coulomb_constant(PotentialUnit::KTPerE, options.temperature);
  const bool all_on_device = solver == PbSolver::CudaMultigrid && surface_on_device(options);
  // The direct sums (boundary values; the Coulomb part when split) run on the GPU. On the all-GPU
  // path they run on a thread of their own while the host prepares the device's inputs, which
  // need no GPU: on one H200 the 47k-atom 161³ map spent 157 ms in the sums (most of it the
  // device's first use) and 125 ms in the host inputs, one after the other.
  struct DirectSums {
    std::vector<double> boundary, coulomb;
    double boundary_seconds = 0, coulomb_seconds = 0;
  };
  auto direct_sums = [&] {
    DirectSums sums;
    Stopwatch sum_clock;
    sums.boundary = mdh_boundary(atoms, grid, options, faces_kernel, dcs);
    sums.boundary_seconds = sum_clock.seconds();
    if (split) {
      sum_clock.restart();
      sums.coulomb = coulomb_map(atoms, grid, options, coulomb_kernel, dcs);
      sums.coulomb_seconds = sum_clock.seconds();
    }
    return sums;
  };
  std::future<DirectSums> sums_beside;
  DirectSums sums;
  if (all_on_device) {
    sums_beside = std::async(std::launch::async, direct_sums);
  } else {
    sums = direct_sums();
    result.phases.push_back({"boundary", sums.boundary_seconds});
    if (split) result.phases.push_back({"coulomb", sums.coulomb_seconds});
  }
  const std::vector<double>& boundary = sums.boundary;
  const std::vector<double>& coulomb = sums.coulomb;
  if (all_on_device) {
    // The GPU: the maps, the system, the hierarchy, the solve and the combination on the device;
    // the host prepares the inputs (SAS neighbour lists or spline rows, spl2 charges, the levels'
    // shape) and gets the float map back.
    clock.restart();
    const std::unique_ptr<DeviceSurfaceInputs> inputs =
        device_surface_inputs(atoms, grid, options, run.device, threads);
    std::vector<double> charge;
    if (!split) charge = spl2_charges(atoms, grid);
    const MgSettings settings;
    const std::vector<MgLevel> shape = hierarchy_shape(
        {static_cast<long>(grid.dims[0]), static_cast<long>(grid.dims[1]), static_cast<long>(grid.dims[2])}, settings);
    std::vector<cuda::PbMgLevel> levels(shape.size());
    for (std::size_t l = 0; l < shape.size(); ++l)
      for (int d = 0; d < 3; ++d) {
        const MgAxis& axis = shape[l].axes[static_cast<std::size_t>(d)];
        levels[l].n[d] = shape[l].n[static_cast<std::size_t>(d)];
        levels[l].coarsened[d] = l > 0 && axis.coarsened;
        levels[l].fine_of[d] = axis.fine_of.data();
        levels[l].coarse_lo[d] = axis.coarse_lo.data();
        levels[l].mid[d] = axis.mid.data();
      }
    cuda::PbDeviceSolveInput in;
    in.surface = inputs->input;
    in.assembly = assembly_args(grid, options, split);
    in.levels = levels.data();
    in.level_count = static_cast<int>(levels.size());
    in.run.smoothing = settings.smoothing;
    in.run.coarsest_sweeps = settings.coarsest_sweeps;
    in.run.tolerance = options.tolerance;
    in.run.max_iterations = options.max_iterations;
    in.run.device = run.device;
    in.unit_scale = scale;
    result.values.assign(grid.point_count(), 0.0f);
    in.values = result.values.data();
    phase("host inputs (beside the direct sums)", clock);
    clock.restart();
    sums = sums_beside.get();  // rethrows the sums' error, if any
    in.charge = split ? nullptr : charge.data();
    in.coulomb = split ? coulomb.data() : nullptr;
    in.boundary = boundary.data();
    result.phases.push_back({"boundary", sums.boundary_seconds});
    if (split) result.phases.push_back({"coulomb", sums.coulomb_seconds});
    phase("waiting for the direct sums", clock);
    cuda::PbDeviceSolveResult r;
    cuda::solve_pb_on_device(in, r);
    result.sas_points = r.sas_points;
    result.solve.method =
        "espgrid multigrid-preconditioned CG (CUDA, double precision; surface, assembly and "
        "hierarchy on the device)";
    result.solve.device = r.device;
    result.solve.iterations = r.iterations;
    result.solve.relative_residual = r.relative_residual;
    result.solve.setup_seconds = r.surface_seconds + r.assemble_seconds;
    result.solve.solve_seconds = r.solve_seconds;
    result.solve.converged = r.own_residual <= options.tolerance;
    result.phases.push_back({"device surface", r.surface_seconds});
    result.phases.push_back({"device assembly and hierarchy", r.assemble_seconds});
    result.phases.push_back({"device solve", r.solve_seconds});
    result.phases.push_back({"device call (all, with copies)", r.wall_seconds});
  } else {
    clock.restart();
    // With the sampled surface (or a uniform medium) the maps come from the host, also for the GPU.
    const PbCoefficients coefficients = build_coefficients(atoms, grid, options, !split, threads);
    phase("surface", clock);
    result.sas_points = coefficients.sas_points;
    clock.restart();
    const PbSystem system =
        assemble_system(coefficients, boundary, options, options.formulation, split ? &coulomb : nullptr, threads);
    phase("assemble", clock);
    std::vector<double> u;
    switch (solver) {
      case PbSolver::Hypre:
        result.solve = solve_hypre(system, u, options.tolerance, options.max_iterations, threads, run.across_ranks);
        break;
      case PbSolver::CpuMultigrid:
        result.solve = solve_multigrid_cpu(system, u, options.tolerance, options.max_iterations, MgSettings{}, threads);
        break;
      case PbSolver::CudaMultigrid:
        result.solve = solve_cuda(system, u, options, run.device, threads);
        break;
      case PbSolver::Auto:
        break;
    }
    result.phases.push_back({"solver setup", result.solve.setup_seconds});
    result.phases.push_back({"solve", result.solve.solve_seconds});
    if (result.solve.converged) {
      clock.restart();
      const std::vector<double> phi = combine(system, u, split ? &coulomb : nullptr);
      result.values.resize(phi.size());
      for (std::size_t i = 0; i < phi.size(); ++i) result.values[i] = static_cast<float>(phi[i] * scale);
      phase("combine", clock);
    }
  }
  if (!result.solve.converged)
    throw Error("the PB solver (" + result.solve.method + ") did not reach the relative residual " +
                short_scientific(options.tolerance) + " in " + std::to_string(options.max_iterations) +
                " iterations (it reached " + short_scientific(result.solve.relative_residual) +
                "); raise --pb-max-iterations or --pb-tolerance");
  result.direct_sum = "boundary " + std::string(faces_kernel.name) +
                      (split ? ", Coulomb part " + std::string(coulomb_kernel.name) : std::string());
  result.summary = describe(options) + "; " + result.solve.method + ": " + std::to_string(result.solve.iterations) +
                   " iterations, relative residual " + short_scientific(result.solve.relative_residual) +
                   " (tolerance " + short_scientific(options.tolerance) + ")";
  result.seconds = total.seconds();
  return result;
}

}  // namespace espgrid
