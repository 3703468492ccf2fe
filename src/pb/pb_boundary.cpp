#include "src/pb/pb_boundary.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>

#include "src/compute/point_sum_inputs.h"
#include "src/compute/points_cuda_driver.h"
#include "src/compute/prepared_problem.h"
#include "src/core/errors.h"
#include "src/core/process_trace.h"
#include "src/core/text_format.h"
#include "src/core/thread_count.h"
#include "src/core/units.h"
#include "src/pb/pb_face_sums.h"
#include "src/pb_numerics/pb_geometry.h"
#include "src/pb_numerics/pb_pipeline_math.h"
#include "src/physics/physics_options.h"

namespace espgrid::pb {
namespace {

/// The atoms (or those of `subset`) with their axes permuted (new axis d = old axis perm[d]) and
/// charges replaced.
Atoms permuted(const Atoms& atoms, const int perm[3], const std::vector<double>& charges,
               const std::vector<std::uint32_t>* subset = nullptr) {
  Atoms out;
  const std::vector<double>* axes[3] = {&atoms.x, &atoms.y, &atoms.z};
  const auto add = [&](std::size_t a) {
    out.push_back((*axes[perm[0]])[a], (*axes[perm[1]])[a], (*axes[perm[2]])[a], charges[a], atoms.radius[a]);
  };
  out.reserve(subset ? subset->size() : atoms.size());
  if (subset)
    for (const std::uint32_t a : *subset) add(a);
  else
    for (std::size_t a = 0; a < atoms.size(); ++a) add(a);
  return out;
}

/// APBS's VSMALL, Å: how far a focusing level may stick out of its parent (rounding).
constexpr double kFocusSlack = 1e-9;

}  // namespace

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

std::vector<double> coulomb_map(const Atoms& atoms, const GridSpec& grid, const PbOptions& o,
                                const KernelVariant& kernel, const RunOptions& run) {
  PhysicsOptions physics;
  physics.unit = PotentialUnit::KTPerE;
  physics.temperature = o.temperature;
  physics.dielectric = o.solute_dielectric;
  physics.model = PairModel::Coulomb;
  return direct_sum(atoms, grid, physics, kernel, run);
}

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

std::vector<double> on_the_faces(const GridSpec& grid, const std::vector<double>& face_values) {
  std::vector<double> full(grid.point_count(), 0.0);
  const std::vector<std::size_t> nodes = boundary_nodes(grid);
  if (face_values.size() != nodes.size())
    throw Error("internal error: " + std::to_string(face_values.size()) + " face values for " +
                std::to_string(nodes.size()) + " face nodes");
  for (std::size_t f = 0; f < nodes.size(); ++f) full[nodes[f]] = face_values[f];
  return full;
}

namespace {

/// APBS bcfl mdh: every atom a Debye–Hückel sphere of its own radius a in the solvent:
/// φ = k q e^(−κ(d − a)) / (ε_w (1 + κa) d). The factor e^(κa)/(1 + κa) goes into the charge
/// (`charges`), and the rest is espgrid's `debye` pair model in the solvent dielectric (`coulomb`
/// without salt): the returned physics.
PhysicsOptions mdh_physics(const Atoms& atoms, const PbOptions& o, std::vector<double>& charges) {
  const double kappa = pb_kappa(o);
  charges.resize(atoms.size());
  for (std::size_t a = 0; a < atoms.size(); ++a)
    charges[a] =
        atoms.charge[a] * (kappa > 0 ? std::exp(kappa * atoms.radius[a]) / (1.0 + kappa * atoms.radius[a]) : 1.0);
  PhysicsOptions physics;
  physics.unit = PotentialUnit::KTPerE;
  physics.temperature = o.temperature;
  physics.dielectric = o.solvent_dielectric;
  physics.model = kappa > 0 ? PairModel::Debye : PairModel::Coulomb;
  physics.ionic_strength = kappa > 0 ? pb_ionic_strength(o) : 0.0;
  return physics;
}

}  // namespace

namespace {

/// The mdh terms on the device: every sum one plane group of one launch (a lattice is a few
/// hundred points: alone it would leave the device idle), the atoms uploaded once, each band as
/// its list of indices, the nodes computed on the device (building them and the bands' atoms on
/// the host cost more than the sums: 1.93 M atoms, 0.33 s of 0.38); the values back split into a
/// vector a sum on `threads`.
std::vector<std::vector<double>> sums_on_device(const Atoms& atoms, const std::vector<double>& q,
                                                const PhysicsOptions& physics, const std::array<double, 3>& centre,
                                                const std::vector<FacePlaneSum>& sums, int device, int threads,
                                                double* device_seconds) {
  const PlaneGroupInputs inputs(atoms.x, atoms.y, atoms.z, q, coulomb_factor(physics), centre);
  std::vector<cuda::PlaneGroup> groups;
  std::size_t points = 0;
  for (const FacePlaneSum& s : sums) {
    cuda::PlaneGroup g;
    double origin[3];
    origin[s.normal] = s.level;
    origin[s.u] = s.origin[0];
    origin[s.v] = s.origin[1];
    for (int d = 0; d < 3; ++d) g.origin[d] = static_cast<float>(origin[d] - centre[d]);
    g.step_u[s.u] = static_cast<float>(s.spacing[0]);
    g.step_v[s.v] = static_cast<float>(s.spacing[1]);
    g.dims_u = static_cast<std::size_t>(s.dims[0]);
    g.point_count = s.node_count();
    g.atoms = s.atoms->data();
    g.atom_count = s.atoms->size();
    groups.push_back(g);
    points += g.point_count;
  }
  std::vector<float> values(points);
  trace_process("boundary sums: atoms and groups prepared (host)");
  const ComputeTiming timing = cuda::potential_on_plane_groups(
      inputs.problem(physics.model, pair_parameters(physics), groups, values.data()), device);
  trace_process("boundary sums: returned (device buffers freed)");
  if (device_seconds) *device_seconds += timing.kernel_seconds;
  return split_sums(sums, values.data(), threads);
}

/// The mdh terms through a grid kernel: each sum a grid of one z-plane with the atoms' axes
/// permuted to match (the map kernels' fast layout).
std::vector<std::vector<double>> sums_on_grids(const Atoms& atoms, const std::vector<double>& q,
                                               const PhysicsOptions& physics, const GridSpec& grid,
                                               const std::vector<FacePlaneSum>& sums, const KernelVariant& kernel,
                                               const RunOptions& run) {
  std::vector<std::vector<double>> out;
  const std::vector<std::uint32_t>* cached = nullptr;
  int cached_normal = -1;
  Atoms turned;
  for (const FacePlaneSum& s : sums) {
    if (s.atoms != cached || s.normal != cached_normal) {  // a lattice and its centres share their atoms
      cached = s.atoms;
      cached_normal = s.normal;
      const int perm[3] = {s.u, s.v, s.normal};
      turned = permuted(atoms, perm, q, s.atoms);
    }
    GridSpec plane;
    plane.dims = {s.dims[0], s.dims[1], 1};
    plane.spacing = {s.spacing[0], s.spacing[1], grid.spacing[s.normal]};
    plane.origin = {s.origin[0], s.origin[1], s.level};
    out.push_back(direct_sum(turned, plane, physics, kernel, run));
  }
  return out;
}

std::array<double, 3> grid_centre(const GridSpec& grid) {
  std::array<double, 3> centre;
  for (int d = 0; d < 3; ++d)
    centre[d] = grid.origin[d] + 0.5 * grid.spacing[d] * static_cast<double>(grid.dims[d] - 1);
  return centre;
}

}  // namespace

double mdh_reference(const Atoms& atoms, const PbOptions& o, const std::array<double, 3>& point) {
  std::vector<double> q;
  const PhysicsOptions physics = mdh_physics(atoms, o, q);
  const double kappa = pb_kappa(o), k = coulomb_factor(physics);
  double sum = 0;
  for (std::size_t a = 0; a < atoms.size(); ++a) {
    const double dx = point[0] - atoms.x[a], dy = point[1] - atoms.y[a], dz = point[2] - atoms.z[a];
    const double r = std::sqrt(dx * dx + dy * dy + dz * dz + kSofteningLength * kSofteningLength);
    sum += q[a] * k * std::exp(-kappa * r) / r;
  }
  return sum;
}

std::vector<double> mdh_face_values(const Atoms& atoms, const GridSpec& grid, const PbOptions& o, int device,
                                    FaceSumReport* report, int threads) {
  std::vector<double> q;
  const PhysicsOptions physics = mdh_physics(atoms, o, q);
  const std::array<double, 3> centre = grid_centre(grid);
  const long n[3] = {static_cast<long>(grid.dims[0]), static_cast<long>(grid.dims[1]), static_cast<long>(grid.dims[2])};
  const auto nodes = static_cast<double>(face_node_count(n));
  if (o.boundary_accuracy > 0 && static_cast<double>(atoms.size()) * nodes >= kDeviceBandTerms) {
    double device_seconds = 0;
    std::vector<double> values = banded_face_values(
        atoms, grid, o.boundary_accuracy,
        [&](const std::vector<FacePlaneSum>& sums) {
          return sums_on_device(atoms, q, physics, centre, sums, device, threads, &device_seconds);
        },
        report, threads);
    if (report) report->device_seconds = device_seconds;
    return values;
  }
  // Every face node at once, through the point kernel: a face is a grid of one plane, too few points
  // for the map kernels to fill the device (on an H200 the six faces of a 161³ grid took 114 ms
  // through cuda-dualpipe for ~4 ms of terms).
  const auto faces = boundary_nodes(grid);
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
  cuda::potential_at_points(inputs.problem(physics.model, pair_parameters(physics), values.data()), device, nullptr);
  return {values.begin(), values.end()};
}

std::vector<double> mdh_boundary(const Atoms& atoms, const GridSpec& grid, const PbOptions& o,
                                 const KernelVariant& kernel, const RunOptions& run, FaceSumReport* report,
                                 const FaceSumShare* share) {
  if (kernel.backend == Backend::Cuda)
    return on_the_faces(grid, mdh_face_values(atoms, grid, o, run.device, report, run.threads));
  std::vector<double> q;
  const PhysicsOptions physics = mdh_physics(atoms, o, q);
  if (o.boundary_accuracy > 0)
    return on_the_faces(grid, banded_face_values(atoms, grid, o.boundary_accuracy,
                                                 shared_among_ranks(
                                                     [&](const std::vector<FacePlaneSum>& sums) {
                                                       return sums_on_grids(atoms, q, physics, grid, sums, kernel, run);
                                                     },
                                                     share ? *share : FaceSumShare{}),
                                                 report, run.threads));
  std::vector<double> fixed(grid.point_count(), 0.0);
  const long n[3] = {static_cast<long>(grid.dims[0]), static_cast<long>(grid.dims[1]), static_cast<long>(grid.dims[2])};
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

namespace {

/// APBS's sdh sphere: the atoms' bounding-box centre, the radius reaching every atom's surface,
/// and the charge, dipole and traceless quadrupole (Stone's convention, /3) about the centre.
struct Multipole {
  double centre[3] = {0, 0, 0};
  double radius = 0;  ///< Å
  double charge = 0;  ///< e
  double dipole[3] = {0, 0, 0};
  double quadrupole[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
};

Multipole molecule_multipole(const Atoms& atoms) {
  Multipole m;
  double lo[3] = {atoms.x[0], atoms.y[0], atoms.z[0]}, hi[3] = {atoms.x[0], atoms.y[0], atoms.z[0]};
  for (std::size_t a = 0; a < atoms.size(); ++a) {
    const double p[3] = {atoms.x[a], atoms.y[a], atoms.z[a]};
    for (int d = 0; d < 3; ++d) lo[d] = std::min(lo[d], p[d]), hi[d] = std::max(hi[d], p[d]);
  }
  for (int d = 0; d < 3; ++d) m.centre[d] = 0.5 * (hi[d] + lo[d]);
  double quad[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
  for (std::size_t a = 0; a < atoms.size(); ++a) {
    const double r[3] = {atoms.x[a] - m.centre[0], atoms.y[a] - m.centre[1], atoms.z[a] - m.centre[2]};
    m.radius = std::max(m.radius, std::sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]) + atoms.radius[a]);
    const double q = atoms.charge[a];
    m.charge += q;
    for (int d = 0; d < 3; ++d) m.dipole[d] += r[d] * q;
    double traced[9];
    for (int u = 0; u < 3; ++u)
      for (int v = 0; v < 3; ++v) traced[3 * u + v] = r[u] * r[v] * q;
    const double mean = (traced[0] + traced[4] + traced[8]) / 3.0;
    for (int t = 0; t < 9; ++t) quad[t] += 1.5 * (traced[t] - (t % 4 == 0 ? mean : 0.0));
  }
  for (int t = 0; t < 9; ++t) m.quadrupole[t] = quad[t] / 3.0;
  return m;
}

/// APBS multipolebc: the radial factors of the charge, dipole and quadrupole potentials outside a
/// sphere of radius `a` and dielectric eps_p in a solvent eps_w (with κ: Debye–Hückel), per e·Å^n.
std::array<double, 3> multipole_factors(double r, double kappa, double eps_p, double eps_w, double a) {
  const double eps_r = eps_w / eps_p;
  const double r2 = r * r, r3 = r2 * r, r5 = r3 * r2;
  std::array<double, 3> t = {(1.0 / eps_w) / r, (1.0 / eps_w) * (-1.0) / r3, (1.0 / eps_w) * 3.0 / r5};
  if (kappa < 1e-9) {  // APBS's VSMALL
    t[1] = (3.0 * eps_r) / (1.0 + 2.0 * eps_r) * t[1];
    t[2] = (5.0 * eps_r) / (2.0 + 3.0 * eps_r) * t[2];
    return t;
  }
  const double ka = kappa * a, ka2 = ka * ka, ka3 = ka2 * ka;
  const double kr = kappa * r, kr2 = kr * kr;
  const double decay = std::exp(ka - kr);
  t[0] = decay / (1.0 + ka) * t[0];
  t[1] = 3.0 * eps_r * decay * (1.0 + kr) * t[1];
  t[1] = t[1] / (1.0 + ka + eps_r * (2.0 + 2.0 * ka + ka2));
  t[2] = 5.0 * eps_r * decay * (3.0 + 3.0 * kr + kr2) * t[2];
  t[2] = t[2] / (6.0 + 6.0 * ka + 2.0 * ka2 + eps_r * (9.0 + 9.0 * ka + 4.0 * ka2 + ka3));
  return t;
}

}  // namespace

std::vector<double> sdh_face_values(const Atoms& atoms, const GridSpec& grid, const PbOptions& o, int threads) {
  threads = threads_to_use(threads);
  const std::vector<std::size_t> nodes = boundary_nodes(grid);
  std::vector<double> out(nodes.size(), 0.0);
  if (atoms.empty()) return out;
  const Multipole m = molecule_multipole(atoms);
  const double pre = coulomb_constant(PotentialUnit::KTPerE, o.temperature);  // e²/(4π ε0 kT Å)
  const double kappa = pb_kappa(o);
  const double* q = m.quadrupole;  // xx xy xz / yx yy yz / zx zy zz
  const long n0 = static_cast<long>(grid.dims[0]), n1 = static_cast<long>(grid.dims[1]);
  const auto count = static_cast<std::int64_t>(nodes.size());
  // Each node on its own (the same arithmetic in any order): a 449×449×257 grid has 865,000 face nodes.
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::int64_t f = 0; f < count; ++f) {
    const std::size_t idx = nodes[static_cast<std::size_t>(f)];
    const long i = static_cast<long>(idx % static_cast<std::size_t>(n0));
    const long j = static_cast<long>((idx / static_cast<std::size_t>(n0)) % static_cast<std::size_t>(n1));
    const long k = static_cast<long>(idx / static_cast<std::size_t>(n0 * n1));
    const double xr = grid.position(0, i) - m.centre[0], yr = grid.position(1, j) - m.centre[1],
                 zr = grid.position(2, k) - m.centre[2];
    const double dist = std::sqrt(xr * xr + yr * yr + zr * zr);
    const std::array<double, 3> t = multipole_factors(dist, kappa, o.solute_dielectric, o.solvent_dielectric, m.radius);
    double val = pre * m.charge * t[0];
    val -= pre * m.dipole[0] * xr * t[1];
    val -= pre * m.dipole[1] * yr * t[1];
    val -= pre * m.dipole[2] * zr * t[1];
    val += pre * q[0] * xr * xr * t[2];
    val += pre * q[4] * yr * yr * t[2];
    val += pre * q[8] * zr * zr * t[2];
    val += pre * 2.0 * q[1] * xr * yr * t[2];
    val += pre * 2.0 * q[2] * xr * zr * t[2];
    val += pre * 2.0 * q[5] * yr * zr * t[2];
    out[static_cast<std::size_t>(f)] = val;
  }
  return out;
}

std::vector<double> sdh_boundary(const Atoms& atoms, const GridSpec& grid, const PbOptions& o) {
  return on_the_faces(grid, sdh_face_values(atoms, grid, o));
}

std::vector<double> focus_face_values(const GridSpec& grid, const GridSpec& parent,
                                      const std::vector<double>& parent_potential, int threads) {
  threads = threads_to_use(threads);
  if (parent_potential.size() != parent.point_count())
    throw Error("internal error: the focusing parent's potential has " + std::to_string(parent_potential.size()) +
                " values for its " + std::to_string(parent.point_count()) + " nodes");
  for (int d = 0; d < 3; ++d) {
    const double lo = grid.origin[d], hi = grid.position(d, grid.dims[d] - 1);
    const double plo = parent.origin[d], phi = parent.position(d, parent.dims[d] - 1);
    if (lo < plo - kFocusSlack || hi > phi + kFocusSlack)
      throw UsageError("a focusing level must lie inside the coarser one: along " + std::string(1, "xyz"[d]) +
                       " it spans " + short_fixed(lo, 4) + " to " + short_fixed(hi, 4) + " Å, the coarser level " +
                       short_fixed(plo, 4) + " to " + short_fixed(phi, 4) + " Å");
  }
  const std::vector<std::size_t> nodes = boundary_nodes(grid);
  std::vector<double> out(nodes.size(), 0.0);
  const long n0 = static_cast<long>(grid.dims[0]), n1 = static_cast<long>(grid.dims[1]);
  const long pn[3] = {static_cast<long>(parent.dims[0]), static_cast<long>(parent.dims[1]),
                      static_cast<long>(parent.dims[2])};
  const auto count = static_cast<std::int64_t>(nodes.size());
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::int64_t node_number = 0; node_number < count; ++node_number) {
    const std::size_t idx = nodes[static_cast<std::size_t>(node_number)];
    const long node[3] = {static_cast<long>(idx % static_cast<std::size_t>(n0)),
                          static_cast<long>((idx / static_cast<std::size_t>(n0)) % static_cast<std::size_t>(n1)),
                          static_cast<long>(idx / static_cast<std::size_t>(n0 * n1))};
    // APBS focusFillBound: floor/ceil of the fractional index in the parent, clamped to its nodes.
    long lo[3], hi[3];
    double d[3];
    for (int a = 0; a < 3; ++a) {
      const double f = (grid.position(a, node[a]) - parent.origin[a]) / parent.spacing[a];
      hi[a] = std::min(pn[a] - 1, static_cast<long>(std::ceil(f)));
      lo[a] = std::max(0L, static_cast<long>(std::floor(f)));
      d[a] = f - static_cast<double>(lo[a]);
    }
    const auto u = [&](long i, long j, long k) {
      return parent_potential[static_cast<std::size_t>(i + pn[0] * (j + pn[1] * k))];
    };
    out[static_cast<std::size_t>(node_number)] = trilinear_blend(lo, hi, d, u);
  }
  return out;
}

std::vector<double> focus_boundary(const GridSpec& grid, const GridSpec& parent,
                                   const std::vector<double>& parent_potential) {
  return on_the_faces(grid, focus_face_values(grid, parent, parent_potential));
}

}  // namespace espgrid::pb
