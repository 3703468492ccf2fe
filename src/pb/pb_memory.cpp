#include "src/pb/pb_memory.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <sys/resource.h>

#include "src/core/errors.h"
#include "src/core/text_format.h"
#include "src/pb/pb_hypre.h"
#include "src/pb/pb_multigrid.h"
#include "src/pb/pb_pipeline.h"
#include "src/pb/pb_pipeline_driver.h"
#include "src/pb_numerics/pb_pipeline_math.h"
#include "src/pb_surface/pb_coefficients.h"

namespace espgrid::pb {
namespace {

constexpr double kPi = 3.14159265358979323846;

// Bytes a grid point, by the code (each array named where it is allocated). Device pipeline
// (kernels/pb/pb_pipeline.cu): the node codes, then the solver's u, r, z, p, q; while the surface is
// built, the codes and 4 flag bytes.
constexpr double kPipelineSolve = 4 + 40;
constexpr double kPipelineSurface = 4 + 4;
// The all-on-device path (kernels/pb/pb_multigrid.cu solve_pb_on_device): ε on three faces and λ
// (32), smol's unsmoothed copy (24); the assembly's boundary, charges, operator and rhs beside the
// maps (88); the solve: operator 32, level 0's x, b, r 24, CG 40, rhs 8, boundary 8, charges 8,
// the float map 4.
constexpr double kMapsSurface = 32, kMapsSmooth = 24, kMapsAssembly = 88, kMapsSolve = 124 + 4;
// Hybrid (solve_pb_multigrid): every level's operator and V-cycle vectors (56), CG 40.
constexpr double kHybridDevice = 56 + 40;
// A coarse level's point: operator 32 and V-cycle vectors 24; the device pipeline's V-cycle stores them in
// float (kernels/pb/pb_lean_solver.cuh: 16 + 12; in double with ESPGRID_PB_FLOAT_CYCLE=0).
constexpr double kCoarseLevel = 56;
double pipeline_coarse_level() { return cuda::pb_float_cycle() ? 28 : kCoarseLevel; }
// The host's share. Pipeline: the map in PbResult and in the MapResult (4 + 4). All-on-device:
// those, the boundary values and the charges (or Coulomb map), 8 + 8. Hybrid: the coefficient maps
// (40), the system (48, the boundary values its fixed ones), the hierarchy's copy of level 0 (32), u (8),
// φ (8), the maps (8). CPU: pb_limits.h's pb_host_bytes (its constants say what they count and what was measured).
constexpr double kHostPipeline = 8, kHostMaps = 8 + 16, kHostHybrid = 144;
/// The host's surface phase: the coefficient maps (40), the boundary (8), the map (8).
constexpr double kHostSurface = 56;
constexpr double kPotential = 8;  ///< φ in double, on either side
/// Accessible SAS points an atom, to size the host's points: measured 120 on fasciculin-2 (906
/// atoms), 66 on the actin dimer, 60 on AChBP (with their hydrogens, sdens 10, srad 1.4); rounded up.
constexpr double kSasPointsPerAtom = 130;
/// Atom density used to size the SAS neighbour lists (a protein with its hydrogens holds ~0.1 atoms
/// per Å³; rounded up).
constexpr double kAtomDensity = 0.12;

double coarse_points(const GridSpec& grid) {
  const std::vector<MgLevel> shape = hierarchy_shape(
      {static_cast<long>(grid.dims[0]), static_cast<long>(grid.dims[1]), static_cast<long>(grid.dims[2])});
  double points = 0;
  for (std::size_t l = 1; l < shape.size(); ++l) points += static_cast<double>(shape[l].size());
  return points;
}

/// The SAS neighbour-list entries: each atom's neighbours within 2(r_max + probe), at protein density.
double neighbour_pairs(const Atoms& atoms, const PbOptions& o) {
  const double reach = 2 * (max_radius(atoms) + o.probe_radius);
  const double per_atom = std::min(double(atoms.size()), kAtomDensity * 4.0 / 3.0 * kPi * reach * reach * reach);
  return per_atom * double(atoms.size());
}

double face_points(const GridSpec& g) {
  const double n0 = double(g.dims[0]), n1 = double(g.dims[1]), n2 = double(g.dims[2]);
  return 2 * n0 * n1 + (n2 - 2) * (2 * n0 + 2 * (n1 - 2));
}

/// The host's SAS work where the host carves a mol/smol surface (pb_coefficients.cpp mol_dielectric,
/// pb_sas.cpp), by the code: at most kSasBatchAtoms atoms' points at once (sas_batches), 48 B a point at the
/// peak (each atom's points and their concatenation; the cells' sorted copy is 40), at
/// kSasPointsPerAtom; 4 B a neighbour pair and ~56 B an atom of lists; and for every atom of the
/// structure the per-atom vectors and cell list (56 B). The points' cells of one probe radius: 16 B
/// a cell over the batch's share of the box. Measured (2026-11-28, this VM): the 1.93 M-atom capsid at
/// 4 A on the CPU peaks at 1.5 GiB resident in all against 10.4 GiB before the batches.
double host_sas_bytes(const Atoms& atoms, const GridSpec& g, const PbOptions& o) {
  const bool carved =
      o.probe_radius > kNoRadius && !uniform_medium(o) && (o.surface == PbSurface::Mol || o.surface == PbSurface::Smol);
  if (!carved || atoms.empty()) return 0;
  const double n = double(atoms.size()), batch = std::min(n, double(kSasBatchAtoms));
  double box = 1;
  for (int d = 0; d < 3; ++d) box *= double(g.dims[d] - 1) * g.spacing[d] + 2 * o.probe_radius;
  const double cells = box / (o.probe_radius * o.probe_radius * o.probe_radius) * (batch / n);
  return batch * (kSasPointsPerAtom * 48 + 4 * neighbour_pairs(atoms, o) / n + 56) + 56 * n + 16 * cells;
}

/// The device pipeline's peak: the surface phase or the solve phase.
double pipeline_device(const Atoms& atoms, const GridSpec& g, const PbOptions& o) {
  const double n = double(g.point_count()), a = double(atoms.size()), c = coarse_points(g);
  const AtomCells cells = sas_cell_geometry(atoms, o);
  const double cell_count = double(cells.n[0]) * double(cells.n[1]) * double(cells.n[2]);
  const double atom_arrays = 40 * a;  // x, y, z, radius, charge
  const double binning = 24 * a;      // keys, sorted keys, order, scratch (transient)
  const double reference = 24.0 * double(reference_sphere_request(atoms, o));
  const double surface = kPipelineSurface * n + atom_arrays + 4 * (cell_count + a) + binning + 16 * a +
                         4 * neighbour_pairs(atoms, o) + reference;
  const double bin_nodes = double(charge_bin_nodes(o.charges == PbChargeMethod::Spl4 ? 2 : 1));
  const double solve = kPipelineSolve * n + pipeline_coarse_level() * c + 8 * face_points(g) + atom_arrays +
                       4 * (n / (bin_nodes * bin_nodes * bin_nodes) + a) + 3 * 8 * kPatterns;
  return std::max(surface, solve);
}

}  // namespace

std::string memory_path_name(PbMemoryPath path) {
  switch (path) {
    case PbMemoryPath::Pipeline:
      return "device pipeline";
    case PbMemoryPath::DeviceMaps:
      return "maps and solve on the device";
    case PbMemoryPath::Hybrid:
      return "maps on the host, solve on the device";
    case PbMemoryPath::Host:
      return "CPU solve";
  }
  return "?";
}

std::string PbMemoryPlan::describe() const {
  const auto per_point = [&](double bytes) {
    return std::to_string(static_cast<long>(std::lround(bytes / std::max(points, 1.0)))) + " B a point";
  };
  std::string text = "about ";
  if (path != PbMemoryPath::Host)
    text += human_bytes(device_bytes) + " on the GPU (" + per_point(device_bytes) + ") and ";
  return text + human_bytes(host_bytes) + " on the host (" + per_point(host_bytes) + "; " + memory_path_name(path) +
         ")";
}

std::string PbMemoryPlan::summary(double device_peak_bytes) const {
  std::string text = "memory: estimated " + describe();
  if (device_peak_bytes > 0) text += ", GPU peak " + human_bytes(device_peak_bytes);
  return text + ", host peak " + human_bytes(host_peak_bytes()) + " (resident, the whole process)";
}

PbMemoryPlan pb_memory_plan(const Atoms& atoms, const GridSpec& g, const PbOptions& o, const PbMemoryRequest& r) {
  PbMemoryPlan plan;
  const double n = double(g.point_count()), c = coarse_points(g);
  plan.points = n;
  const double potential = r.potential ? kPotential * n : 0.0;
  if (r.where != PbHostPlan::Gpu) {
    plan.path = PbMemoryPath::Host;
    plan.host_bytes = pb_host_bytes(g, o, r.where, host_sas_bytes(atoms, g, o), r.ranks, r.maps_shared) + potential;
  } else if (r.host_maps) {
    plan.path = PbMemoryPath::Hybrid;
    plan.device_bytes = kHybridDevice * n + kCoarseLevel * c;
    plan.host_bytes = std::max(kHostHybrid * n + 32 * c, kHostSurface * n + host_sas_bytes(atoms, g, o)) + potential;
  } else if (r.pipeline) {
    plan.path = PbMemoryPath::Pipeline;
    plan.device_bytes = pipeline_device(atoms, g, o);
    plan.host_bytes = kHostPipeline * n + potential + 16 * face_points(g);
  } else {
    plan.path = PbMemoryPath::DeviceMaps;
    const double surface = (kMapsSurface + (o.surface == PbSurface::Smol ? kMapsSmooth : 0.0)) * n +
                           4 * neighbour_pairs(atoms, o) + 40 * double(atoms.size());
    plan.device_bytes = std::max({surface, kMapsAssembly * n, kMapsSolve * n + kCoarseLevel * c + potential});
    // The neighbour lists, made on the host (pb_sas.cpp): per atom while they are gathered, then CSR.
    plan.host_bytes =
        kHostMaps * n + potential + 8 * neighbour_pairs(atoms, o) + 56 * double(atoms.size()) + (r.split ? 4 * n : 0.0);
  }
  return plan;
}

PbMemoryPlan pb_memory_plan(const Atoms& atoms, const GridSpec& grid, const PbOptions& o, PbHostPlan where, int ranks) {
  PbMemoryRequest r;
  r.where = where;
  r.ranks = ranks;
  r.split = o.formulation == PbFormulation::Split;
  r.host_maps = !surface_on_device(o) || !atoms_on_mesh(atoms, grid) || o.equation == PbEquation::Nonlinear ||
                o.energy.level == PbEnergyLevel::Components;
  r.pipeline = where == PbHostPlan::Gpu && !r.host_maps && pipeline_applies_on_mesh(o);  // host_maps asked the atoms
  // hypre's ranks build their planes of the maps unless an answer needs them whole (solve_pb's plan).
  r.maps_shared =
      where == PbHostPlan::Hypre && ranks > 1 && hypre_ranks_build_their_planes(o, false) && surface_built_by_planes(o);
  // The pipeline sums the spl2 energy itself; elsewhere an energy brings φ back in double.
  r.potential = o.energy.level != PbEnergyLevel::None && !(r.pipeline && o.charges == PbChargeMethod::Spl2);
  return pb_memory_plan(atoms, grid, o, r);
}

void check_pb_memory(const PbMemoryPlan& plan, const GridSpec& grid, std::size_t device_free, std::size_t device_total,
                     const std::string& device_name, std::size_t host_available, int ranks_on_host) {
  const auto per_point = [&](double bytes) {
    return std::to_string(static_cast<long>(std::lround(bytes / std::max(plan.points, 1.0)))) + " bytes a point";
  };
  // The CUDA context, cub's scratch and fragmentation: keep some of the free memory unasked for.
  const double reserve = std::max(256.0 * 1024 * 1024, 0.03 * double(device_total));
  if (plan.path != PbMemoryPath::Host && device_free > 0 && plan.device_bytes > double(device_free) - reserve)
    throw UsageError("--model pb on a grid of " + describe(grid) + " needs about " + human_bytes(plan.device_bytes) +
                     " of GPU memory (" + per_point(plan.device_bytes) + ", " + memory_path_name(plan.path) +
                     "), but " + device_name + " has " +
                     (device_free == device_total  // the whole device, before its context (pb_solve.cpp)
                          ? human_bytes(double(device_total)) + " in all"
                          : human_bytes(double(device_free)) + " free of " + human_bytes(double(device_total))) +
                     "; use a larger --spacing, a smaller region (--padding or --dims), or --backend cpu");
  if (host_available > 0 && plan.host_bytes > 0.9 * double(host_available) && ranks_on_host > 1) {
    const std::string ranks = std::to_string(ranks_on_host);
    throw UsageError("--model pb on a grid of " + describe(grid) + " needs about " + human_bytes(plan.host_bytes) +
                     " of host memory on each MPI rank (" + per_point(plan.host_bytes) + ", " +
                     memory_path_name(plan.path) + "), and " + ranks +
                     " ranks share this host, each of which can count on " + human_bytes(double(host_available)) +
                     "; use fewer ranks on a host, a larger --spacing or a smaller region (--padding or --dims)");
  }
  if (host_available > 0 && plan.host_bytes > 0.9 * double(host_available))
    throw UsageError("--model pb on a grid of " + describe(grid) + " needs about " + human_bytes(plan.host_bytes) +
                     " of host memory (" + per_point(plan.host_bytes) + ", " + memory_path_name(plan.path) +
                     "), but only " + human_bytes(double(host_available)) +
                     " is available; use a larger --spacing or a smaller region (--padding or --dims)" +
                     (plan.path == PbMemoryPath::Host ? ", or a GPU (--backend cuda)" : ""));
}

void check_pb_host_memory(const PbMemoryPlan& plan, const GridSpec& grid, int ranks_on_host) {
  ranks_on_host = std::max(1, ranks_on_host);
  check_pb_memory(plan, grid, 0, 0, "", available_memory_bytes(ranks_on_host), ranks_on_host);
}

void throw_out_of_memory_part_way(const GridSpec& grid, const PbMemoryPlan& plan) {
  throw Error("--model pb on a grid of " + describe(grid) + " ran out of memory part-way (estimated " +
              plan.describe() + ", " + human_bytes(double(available_memory_bytes())) +
              " available now); use a larger --spacing or a smaller region (--padding or --dims)");
}

double host_peak_bytes() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return double(usage.ru_maxrss) * 1024.0;  // Linux: KiB
}

}  // namespace espgrid::pb
