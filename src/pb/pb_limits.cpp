#include "src/pb/pb_limits.h"

#include <omp.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "src/core/errors.h"
#include "src/core/text_format.h"
#include "src/core/thread_count.h"
#include "src/core/units.h"
#include "src/pb/pb_pipeline.h"
#include "src/pb_numerics/pb_geometry.h"

namespace espgrid::pb {
namespace {

// Host bytes per grid point, by phase. Measured 2026-11-27 (peak RSS of `espgrid map
// data/fasciculin2.pqr --model pb`, release build, hypre 2.26): 376 B a point between 290,700 and
// 1,134,216 points (the slope; the 30 MB the program holds anyway is not counted), the same for
// the split formulation and spl2. By the code: espgrid's arrays while hypre runs are the float
// map (4), the coefficient maps (40), the system (48, its fixed values the boundary values, moved in
// since 2026-11-29) and u (8): 100; hypre's staging buffers 72 B a point up to 2^22 points
// (pb_hypre.cpp fills hypre a slab at a time); hypre itself the rest, 196 (its matrix, PCG's vectors
// and PFMG's levels). Rounded up.
constexpr double kEspgridSolveBytes = 104;
// Of espgrid's arrays, those a rank across MPI holds on its planes only (maps_shared): the dielectric
// and accessibility maps (32) and the system's rows (wx, wy, wz, c, rhs: 40). The spread charges,
// the fixed (boundary) values, u and the map stay whole on rank 0 (28, rounded up to 32; the other
// ranks hold the first three on their planes, which the plan does not count).
constexpr double kRankShareBytes = 72;
// While a shared array is zeroed (assign_zeros_resident), all of it is resident for a moment.
constexpr double kRankShareTransientBytes = 8;
constexpr double kSurfaceMapsBytes = 32;  ///< of kSurfaceBytes, the maps a rank holds on its planes
constexpr double kHypreBytes = 200;
// espgrid's multigrid on the CPU instead of hypre: 204 B a point measured the same way (2026-11-28,
// fasciculin-2 at 0.6 and 0.45 A), 191-193 since the boundary values became the system's fixed values
// (2026-11-29, and at 0.35 A); by the code the 104 above, the
// hierarchy's coarse levels (four doubles a point: ~37 B of the fine grid's), their three work vectors (~27) and CG's
// four (32).
constexpr double kCpuMultigridBytes = 96;
constexpr double kHypreStagingBytes = 72;
constexpr double kHypreStagingPoints = double(std::uint64_t{1} << 22);
// The surface phase: the map, the boundary values and the coefficient maps (52), and with the
// sampled surface 2 bytes a fine point (region and ions) and 1 a cell.
constexpr double kSurfaceBytes = 56;
// Open MPI's start (hypre's MPI, once a process): 117 MB more address space after
// MPI_Init_thread, 140 MB at its peak, 7 MB of it resident (measured 2026-11-27, Open MPI 4.1.4,
// isolated singleton: its threads' stacks and shared-memory maps). An address-space limit (ulimit
// -v) binds on it, and a start that fails there ends the process (MPI's errors are fatal then).
constexpr double kMpiStartBytes = 160.0 * 1024 * 1024;
// On a GPU the host holds the map, the boundary values, the Coulomb map or spread charges and, when
// the host builds the coefficients and the multigrid hierarchy, those too (by the code).
constexpr double kGpuHostBytes = 168;
// The device pipeline (pb_pipeline.h pipeline_options) leaves the host the float map and, for
// energies or focusing, φ in double: 12 (docs/pb.md "Memory").
constexpr double kPipelineHostBytes = 12;

double point_count(const GridSpec& grid) { return double(grid.dims[0]) * double(grid.dims[1]) * double(grid.dims[2]); }

}  // namespace

std::uint64_t sampled_surface_points(const GridSpec& grid, const PbOptions& options) {
  if (options.sampling < 2) return 0;
  std::uint64_t points = 1;
  for (int d = 0; d < 3; ++d)
    points *= static_cast<std::uint64_t>(grid.dims[d] - 1) * static_cast<std::uint64_t>(options.sampling) + 1;
  return points;
}

double hypre_bytes(const GridSpec& grid) {
  const double points = point_count(grid);
  return kHypreBytes * points + kHypreStagingBytes * std::min(points, kHypreStagingPoints);
}

double pb_host_bytes(const GridSpec& grid, const PbOptions& options, PbHostPlan plan, double surface_atom_bytes,
                     int ranks, bool maps_shared) {
  const double points = point_count(grid);
  const bool on_gpu = plan == PbHostPlan::Gpu;
  if (on_gpu && pipeline_options(options)) return kPipelineHostBytes * points;  // the precise plan: pb_memory.h
  ranks = std::max(1, ranks);
  // A rank that holds its planes of the maps and rows (pb_coefficients.h maps_held_on_planes): 1/ranks of them.
  const double unshared = maps_shared && plan == PbHostPlan::Hypre ? 1.0 - 1.0 / ranks : 0.0;
  const double transient = unshared > 0 ? kRankShareTransientBytes : 0.0;
  const double surface = (kSurfaceBytes - kSurfaceMapsBytes * unshared + transient) * points +
                         3.0 * double(sampled_surface_points(grid, options)) + surface_atom_bytes;
  const double solve = on_gpu                             ? kGpuHostBytes * points
                       : plan == PbHostPlan::CpuMultigrid ? (kEspgridSolveBytes + kCpuMultigridBytes) * points
                                                          : (kEspgridSolveBytes - kRankShareBytes * unshared) * points +
                                                                hypre_bytes(grid) / ranks + kMpiStartBytes;
  return std::max(surface, solve);
}

void check_pb_fits(const GridSpec& grid, const PbOptions& options, PbHostPlan plan, std::size_t available, int ranks,
                   bool maps_shared) {
  const std::uint64_t fine = sampled_surface_points(grid, options);
  const std::string sampled = "the sampled surface's fine grid (--surface-sampling " +
                              std::to_string(options.sampling) + " on " + describe(grid) + ") of " + with_commas(fine) +
                              " points";
  if (const std::uint64_t limit = max_grid_points_from_environment(); limit != 0 && fine > limit)
    throw UsageError(sampled + " is over the limit of " + with_commas(limit) +
                     " points set by ESPGRID_MAX_GRID_POINTS; use a smaller --surface-sampling or a larger --spacing");
  if (available == 0) available = available_memory_bytes();
  const double needed = pb_host_bytes(grid, options, plan, 0, ranks, maps_shared);
  if (available == 0 || needed <= 0.9 * double(available)) return;
  const bool fine_decides = kSurfaceBytes * point_count(grid) + 3.0 * double(fine) > needed * 0.999;
  throw UsageError(
      "--model pb on a grid of " + describe(grid) + " needs about " + human_bytes(needed) + " of memory" +
      (ranks > 1 ? " on each of its " + std::to_string(ranks) + " MPI ranks" : std::string()) + " (" +
      (fine_decides              ? sampled
       : plan == PbHostPlan::Gpu ? std::string("the host's share of the GPU solve")
       : plan == PbHostPlan::CpuMultigrid
           ? "the system and its multigrid, about " +
                 std::to_string(static_cast<int>(std::lround(needed / point_count(grid)))) + " bytes a point"
           : "the system and hypre's multigrid, about " +
                 std::to_string(static_cast<int>(std::lround((needed - kMpiStartBytes) / point_count(grid)))) +
                 " bytes a point, and Open MPI's start") +
      ") but only " + human_bytes(double(available)) + " is available; use a larger --spacing" +
      (fine ? std::string(", a smaller --surface-sampling") : std::string()) + " or a smaller region");
}

namespace {

/// The atom whose sphere reaches furthest past a face (past > 0: it does), and the padding every
/// sphere would need. On every core (the 1.93 M-atom capsid's passes lie on the process's path),
/// each thread over a contiguous run of atoms; the runs combine in order, so the atom is the one a
/// loop in order finds (the first of the largest reach).
struct FaceReach {
  double past = 0, padding = 0;
  std::size_t atom = 0;
  int axis = 0, side = 0;
};

FaceReach farthest_past_a_face(const Atoms& atoms, const GridSpec& g, int t) {
  const auto n = static_cast<std::int64_t>(atoms.size());
  const BoundingBox box = bounding_box(atoms, t);
  const double* lo = box.lo;
  const double* hi = box.hi;
  std::vector<FaceReach> runs(static_cast<std::size_t>(t));
#pragma omp parallel num_threads(t)
  {
    const int r = omp_get_thread_num(), count = omp_get_num_threads();
    FaceReach w;
    for (std::int64_t i = n * r / count; i < n * (r + 1) / count; ++i) {
      const auto a = static_cast<std::size_t>(i);
      const double radius = atoms.radius[a];
      if (radius <= kNoRadius) continue;
      const double p[3] = {atoms.x[a], atoms.y[a], atoms.z[a]};
      for (int d = 0; d < 3; ++d)
        for (int side = 0; side < 2; ++side) {
          const double face = side ? g.position(d, g.dims[d] - 1) : g.origin[d];
          const double past = radius - std::fabs(p[d] - face);
          w.padding = std::max(w.padding, radius - (side ? hi[d] - p[d] : p[d] - lo[d]));
          if (past > w.past) w.past = past, w.atom = a, w.axis = d, w.side = side;
        }
    }
    runs[static_cast<std::size_t>(r)] = w;
  }
  FaceReach worst;
  for (const FaceReach& w : runs) {
    worst.padding = std::max(worst.padding, w.padding);
    if (w.past > worst.past) worst.past = w.past, worst.atom = w.atom, worst.axis = w.axis, worst.side = w.side;
  }
  return worst;
}

}  // namespace

void check_pb_boundary(const Atoms& atoms, const GridSpec& g, const PbOptions& o, int threads) {
  const int t = threads_to_use(threads);
  const auto n = static_cast<std::int64_t>(atoms.size());
  const FaceReach reach = farthest_past_a_face(atoms, g, t);
  if (reach.past > 0) {
    const std::size_t a = reach.atom;
    const double face = reach.side ? g.position(reach.axis, g.dims[reach.axis] - 1) : g.origin[reach.axis];
    throw UsageError("--model pb: atom " + std::to_string(a + 1) + " (radius " + shortest_text(atoms.radius[a]) +
                     " Å) at (" + short_fixed(atoms.x[a], 3) + ", " + short_fixed(atoms.y[a], 3) + ", " +
                     short_fixed(atoms.z[a], 3) + ") reaches the grid's " + std::string(1, "xyz"[reach.axis]) +
                     " face at " + short_fixed(face, 3) + " Å: the boundary values (Debye-Hückel spheres, APBS bcfl " +
                     "mdh) hold only outside every atom; use a --padding of at least " +
                     short_fixed(std::ceil(reach.padding * 10) / 10, 1) +
                     " Å, or an explicit grid whose faces are a radius away from every atom");
  }
  // Each atom enters the boundary's float32 direct sum with q·e^(κa)/(1 + κa)·k/ε_w (pb_solve.cpp
  // mdh_boundary); keep it well inside float32 (3.4e38), with room for the sum over the atoms.
  const double kappa = pb_kappa(o);
  const double k = coulomb_constant(PotentialUnit::KTPerE, o.temperature) / o.solvent_dielectric;
  // The term grows with |q| and with κa (ka − ln(1 + ka) does): the largest charge and radius bound
  // every atom's, so the atoms are visited one by one (three logarithms each: ~0.1 s of the 1.93 M-atom
  // capsid's) only to name the one that fails.
  double most_charge = 0, most_radius = 0;
#pragma omp parallel for schedule(static) num_threads(t) reduction(max : most_charge, most_radius)
  for (std::int64_t i = 0; i < n; ++i) {
    const auto a = static_cast<std::size_t>(i);
    most_charge = std::max(most_charge, std::fabs(atoms.charge[a]));
    most_radius = std::max(most_radius, atoms.radius[a]);
  }
  const double most_ka = kappa * most_radius;
  if (std::log10(std::max(most_charge, 1e-300) * k) + (most_ka - std::log1p(most_ka)) / std::log(10.0) <= 35) return;
  for (std::size_t a = 0; a < atoms.size(); ++a) {
    const double ka = kappa * atoms.radius[a];
    const double log10_charge =
        std::log10(std::max(std::fabs(atoms.charge[a]), 1e-300) * k) + (ka - std::log1p(ka)) / std::log(10.0);
    if (log10_charge <= 35) continue;
    throw UsageError(
        "--model pb at --temperature " + shortest_text(o.temperature) + " K: atom " + std::to_string(a + 1) +
        " (radius " + shortest_text(atoms.radius[a]) + " Å) enters the boundary's Debye-Hückel sum with about 1e" +
        std::to_string(static_cast<int>(std::floor(log10_charge))) + " kT/e·Å (Debye length " +
        short_scientific(kappa > 0 ? 1 / kappa : 0) + " Å from --temperature, --ionic-strength " +
        shortest_text(pb_ionic_strength(o)) + " M and --solvent-dielectric " + shortest_text(o.solvent_dielectric) +
        "), beyond what the float32 direct sum holds; PB needs a temperature near the solvent's, "
        "not near 0 K");
  }
}

void reserve_for_hypre(const GridSpec& grid) {
  // Address space asked for and given back untouched: with an address-space limit (ulimit -v, a
  // batch system's) or strict overcommit the request fails here, where it can be reported.
  const double bytes = 1.25 * hypre_bytes(grid) + 32.0 * 1024 * 1024;  // hypre's own structures besides
  if (bytes >= double(SIZE_MAX)) throw UsageError("--model pb: the grid is too large for hypre");
  void* volatile block = std::malloc(static_cast<std::size_t>(bytes));
  if (block == nullptr)
    throw Error("--model pb: hypre needs about " + human_bytes(hypre_bytes(grid)) + " for a grid of " + describe(grid) +
                ", and the system does not give it (" + human_bytes(double(available_memory_bytes())) +
                " available); use a larger --spacing or a smaller region");
  std::free(block);
}

}  // namespace espgrid::pb
