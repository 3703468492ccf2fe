// The solvent-accessible-surface points APBS carves `mol`/`smol` with (vacc.c): its reference
// sphere, each atom's possible blockers, and the accessible points. Built without FMA contraction
// (CMakeLists.txt), as pb_coefficients.cpp: the points must equal the device's bit for bit.

#include <algorithm>
#include <cmath>
#include <limits>

#include "src/core/thread_count.h"
#include "src/pb_numerics/pb_geometry.h"
#include "src/pb_surface/pb_coefficients.h"

namespace espgrid::pb {
namespace {

constexpr double kPi = 3.14159265358979323846;

/// APBS's VRINT: round half up.
int round_half_up(double x) { return static_cast<int>(std::floor(x + 0.5)); }

/// Atoms binned into cubic cells of side `cell` (Å): CSR lists, atoms in index order within a cell.
struct CellList {
  double lo[3] = {0, 0, 0};
  double cell = 1;
  long n[3] = {1, 1, 1};
  std::vector<std::int64_t> start;  ///< n0·n1·n2 + 1 offsets into `atoms`
  std::vector<std::int32_t> atoms;

  long cell_of(double p, int axis) const {
    const long c = static_cast<long>(std::floor((p - lo[axis]) / cell));
    return std::clamp(c, 0L, n[axis] - 1);
  }

  CellList(const Atoms& a, double cell_size) : cell(cell_size) {
    const BoundingBox box = bounding_box(a);
    for (int d = 0; d < 3; ++d) {
      lo[d] = box.lo[d];
      n[d] = std::max(1L, static_cast<long>(std::ceil((box.hi[d] - box.lo[d]) / cell)) + 1);
    }
    const std::size_t cells = static_cast<std::size_t>(n[0] * n[1] * n[2]);
    std::vector<std::int64_t> count(cells + 1, 0);
    std::vector<std::size_t> of(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      of[i] = static_cast<std::size_t>(cell_of(a.x[i], 0) + n[0] * (cell_of(a.y[i], 1) + n[1] * cell_of(a.z[i], 2)));
      ++count[of[i] + 1];
    }
    for (std::size_t c = 0; c < cells; ++c) count[c + 1] += count[c];
    start = count;
    atoms.resize(a.size());
    for (std::size_t i = 0; i < a.size(); ++i)
      atoms[static_cast<std::size_t>(count[of[i]]++)] = static_cast<std::int32_t>(i);
  }
};

}  // namespace

double max_radius(const Atoms& atoms) {
  const auto n = static_cast<std::int64_t>(atoms.size());
  double r = 0;
#pragma omp parallel for schedule(static) if (n >= (1 << 18)) reduction(max : r)
  for (std::int64_t i = 0; i < n; ++i) r = std::max(r, atoms.radius[static_cast<std::size_t>(i)]);
  return r;
}

int reference_sphere_request(const Atoms& atoms, const PbOptions& o) {
  const double reach = max_radius(atoms) + std::max(pb_ion_radius(o), o.probe_radius) + kCellListWindow;
  return static_cast<int>(std::ceil(4.0 * kPi * reach * reach * o.surface_density));
}

ReferenceSphere reference_sphere(int points) {
  ReferenceSphere s;
  const int rings = round_half_up(std::sqrt(kPi * static_cast<double>(points) / 4.0));
  if (rings <= 0) return s;
  const double dtheta = kPi / static_cast<double>(rings);
  const int most = 2 * rings;
  for (int t = 0; t < rings; ++t) {
    const double theta = dtheta * static_cast<double>(t);
    const double sin_t = std::sin(theta), cos_t = std::cos(theta);
    const int ring = round_half_up(sin_t * most);
    if (ring == 0) continue;
    const double dphi = 2.0 * kPi / static_cast<double>(ring);
    for (int p = 0; p < ring; ++p) {
      const double phi = dphi * static_cast<double>(p);
      s.x.push_back(std::cos(phi) * sin_t);
      s.y.push_back(std::sin(phi) * sin_t);
      s.z.push_back(cos_t);
    }
  }
  return s;
}

SasNeighbours sas_neighbours(const Atoms& atoms, const PbOptions& o, int threads, const AtomZRange& only) {
  threads = threads_to_use(threads);
  const double probe = o.probe_radius;
  // A SAS point of atom a is blocked by atom b ≠ a when it lies strictly within r_b + probe of b
  // (APBS ivdwAccExclus); b can block some point of a's SAS sphere only if it lies within
  // r_a + probe + r_b + probe of a's centre. Cells of side r_max + probe, searched far enough.
  const CellList cells(atoms, max_radius(atoms) + probe + 1e-6);
  const std::size_t natoms = atoms.size();
  // Each list is gathered in its thread's scratch and kept at its exact size: the lists' memory is
  // 4 B a pair (+ a vector an atom) until the CSR copy, not the growth's slack on top.
  std::vector<std::vector<std::int32_t>> lists(natoms);
#pragma omp parallel num_threads(threads)
  {
    std::vector<std::int32_t> out;
#pragma omp for schedule(dynamic, 8)
    for (long a = 0; a < static_cast<long>(natoms); ++a) {
      const double ra = atoms.radius[a];
      if (ra <= kNoRadius || !only.contains(atoms.z[a])) continue;  // APBS: no radius, no SAS points
      const double rad = ra + probe;
      const double ax = atoms.x[a], ay = atoms.y[a], az = atoms.z[a];
      // Two points d apart lie at most ceil(d / cell) cells apart along an axis (floor(a) − floor(b) ≤
      // ceil(a − b)), and a blocking atom lies within rad + r_b + probe ≤ rad + cell of this one.
      const long span = static_cast<long>(std::ceil((rad + cells.cell) / cells.cell));
      const long cx = cells.cell_of(ax, 0), cy = cells.cell_of(ay, 1), cz = cells.cell_of(az, 2);
      out.clear();
      for (long k = std::max(0L, cz - span); k <= std::min(cells.n[2] - 1, cz + span); ++k)
        for (long j = std::max(0L, cy - span); j <= std::min(cells.n[1] - 1, cy + span); ++j)
          for (long i = std::max(0L, cx - span); i <= std::min(cells.n[0] - 1, cx + span); ++i) {
            const std::size_t c = static_cast<std::size_t>(i + cells.n[0] * (j + cells.n[1] * k));
            for (std::int64_t s = cells.start[c]; s < cells.start[c + 1]; ++s) {
              const std::int32_t b = cells.atoms[static_cast<std::size_t>(s)];
              if (b == a) continue;
              const double reach = rad + atoms.radius[b] + probe;
              const double dx = atoms.x[b] - ax, dy = atoms.y[b] - ay, dz = atoms.z[b] - az;
              if (dx * dx + dy * dy + dz * dz < reach * reach) out.push_back(b);
            }
          }
      // Closest first: they block most of the sphere, so the test of a buried point ends early. The
      // order changes no result (a point is open when no neighbour blocks it).
      auto dist2 = [&](std::int32_t b) {
        const double dx = atoms.x[b] - ax, dy = atoms.y[b] - ay, dz = atoms.z[b] - az;
        return dx * dx + dy * dy + dz * dz;
      };
      std::sort(out.begin(), out.end(), [&](std::int32_t l, std::int32_t r) {
        const double dl = dist2(l), dr = dist2(r);
        return dl < dr || (dl == dr && l < r);
      });
      lists[static_cast<std::size_t>(a)].assign(out.begin(), out.end());
    }
  }
  SasNeighbours n;
  n.start.assign(natoms + 1, 0);
  for (std::size_t a = 0; a < natoms; ++a) n.start[a + 1] = n.start[a] + static_cast<std::int64_t>(lists[a].size());
  n.atoms.reserve(static_cast<std::size_t>(n.start[natoms]));
  for (auto& l : lists) {
    n.atoms.insert(n.atoms.end(), l.begin(), l.end());
    std::vector<std::int32_t>().swap(l);
  }
  return n;
}

SasPoints accessible_sas_points(const Atoms& atoms, const PbOptions& o, int threads, const AtomZRange& only) {
  threads = threads_to_use(threads);
  const ReferenceSphere ref = reference_sphere(reference_sphere_request(atoms, o));
  const SasNeighbours nb = sas_neighbours(atoms, o, threads, only);
  const std::size_t natoms = atoms.size(), nref = ref.x.size();
  // Each atom's points gathered in its thread's scratch and kept at their exact size (x, y, z
  // interleaved), as the neighbour lists.
  std::vector<std::vector<double>> per_atom(natoms);
#pragma omp parallel num_threads(threads)
  {
    std::vector<double> out;
#pragma omp for schedule(dynamic, 8)
    for (long a = 0; a < static_cast<long>(natoms); ++a) {
      const double ra = atoms.radius[a];
      if (ra <= kNoRadius || !only.contains(atoms.z[a])) continue;
      const double rad = ra + o.probe_radius;
      const double ax = atoms.x[a], ay = atoms.y[a], az = atoms.z[a];
      out.clear();
      const long begin = static_cast<long>(nb.start[static_cast<std::size_t>(a)]);
      const long end = static_cast<long>(nb.start[static_cast<std::size_t>(a) + 1]);
      long last = -1;  // the neighbour that blocked the previous point: it likely blocks this one too
      for (std::size_t p = 0; p < nref; ++p) {
        const double px = rad * ref.x[p] + ax, py = rad * ref.y[p] + ay, pz = rad * ref.z[p] + az;
        if (last >= 0 && !sas_point_open(px, py, pz, atoms.x.data(), atoms.y.data(), atoms.z.data(),
                                         atoms.radius.data(), nb.atoms.data(), last, last + 1, o.probe_radius))
          continue;
        last = -1;
        for (long s = begin; s < end && last < 0; ++s)
          if (!sas_point_open(px, py, pz, atoms.x.data(), atoms.y.data(), atoms.z.data(), atoms.radius.data(),
                              nb.atoms.data(), s, s + 1, o.probe_radius))
            last = s;
        if (last < 0) {
          out.push_back(px);
          out.push_back(py);
          out.push_back(pz);
        }
      }
      per_atom[static_cast<std::size_t>(a)].assign(out.begin(), out.end());
    }
  }
  SasPoints sas;
  std::size_t total = 0;
  for (const auto& v : per_atom) total += v.size() / 3;
  sas.x.reserve(total);
  sas.y.reserve(total);
  sas.z.reserve(total);
  sas.atom_start.reserve(natoms + 1);
  for (auto& v : per_atom) {
    sas.atom_start.push_back(sas.x.size());
    for (std::size_t i = 0; i < v.size(); i += 3) {
      sas.x.push_back(v[i]);
      sas.y.push_back(v[i + 1]);
      sas.z.push_back(v[i + 2]);
    }
    std::vector<double>().swap(v);
  }
  sas.atom_start.push_back(sas.x.size());
  return sas;
}

AtomZRange atoms_reaching_planes(const Atoms& atoms, const PbOptions& o, double z0, double dz, PlaneRange planes) {
  if (planes.first >= planes.end) return {1.0, -1.0};  // no plane: no atom
  const double reach = max_radius(atoms) + 2.0 * o.probe_radius + dz;
  return {z0 + static_cast<double>(planes.first) * dz - reach,
          z0 + (static_cast<double>(planes.end - 1) + 0.5) * dz + reach};
}

std::vector<SasBatch> sas_batches(const Atoms& atoms, const PbOptions& o, double z0, double dz, long plane_count,
                                  PlaneRange planes, std::size_t max_atoms) {
  planes.first = std::max(planes.first, 0L);
  planes.end = std::min(planes.end, plane_count);
  if (planes.first >= planes.end) return {};
  const double carve = max_radius(atoms) + 2.0 * o.probe_radius;  // an atom's points carve within this
  const bool covers = planes.first == 0 && planes.end == plane_count;
  const AtomZRange whole = covers ? AtomZRange{} : atoms_reaching_planes(atoms, o, z0, dz, planes);
  std::vector<double> z;  // the heights of the atoms that get SAS points
  for (std::size_t a = 0; a < atoms.size(); ++a)
    if (atoms.radius[a] > kNoRadius && whole.contains(atoms.z[a])) z.push_back(atoms.z[a]);
  if (z.size() <= max_atoms) return {SasBatch{whole, planes}};
  std::sort(z.begin(), z.end());
  std::vector<SasBatch> batches;
  for (std::size_t first = 0; first < z.size();) {
    std::size_t end = std::min(first + max_atoms, z.size());
    while (end < z.size() && z[end] == z[end - 1]) ++end;  // a height stays in one batch
    SasBatch b;
    b.atoms = {z[first], end < z.size() ? std::nextafter(z[end], -std::numeric_limits<double>::infinity()) : z.back()};
    // The planes whose faces (z0 + k·dz .. z0 + (k + ½)·dz) lie within `carve` of these heights,
    // a plane more on each side for rounding.
    const long lo = static_cast<long>(std::floor((z[first] - carve - z0) / dz)) - 1;
    const long hi = static_cast<long>(std::floor((z[end - 1] + carve - z0) / dz)) + 2;
    b.planes = {std::clamp(lo, planes.first, planes.end), std::clamp(hi, planes.first, planes.end)};
    batches.push_back(b);
    first = end;
  }
  return batches;
}

}  // namespace espgrid::pb
