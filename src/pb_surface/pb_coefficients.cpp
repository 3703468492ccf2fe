// Longer than 500 lines because APBS's surface routines (mol, smol, spl2/spl4, the ion accessibility,
// espgrid's sampled surface) share the sphere marking and point cells here, and the device's
// inputs are built from the same helpers. The SAS points are pb_sas.cpp's.
#include "src/pb_surface/pb_coefficients.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>

#include "src/core/bulk_memory.h"
#include "src/core/errors.h"
#include "src/core/text_format.h"
#include "src/core/thread_count.h"
#include "src/core/units.h"
#include "src/pb_numerics/pb_geometry.h"
#include "src/pb_surface/pb_charges.h"
#include "src/pb_surface/pb_surface_driver.h"

namespace espgrid::pb {
namespace {

constexpr double kPi = 3.14159265358979323846;

/// APBS's "on the mesh" test of the surface routines: strictly inside the grid's box. Atoms off it
/// draw no surface (a focusing level's atoms outside its domain); their SAS points still carve.
bool on_mesh(const GridSpec& g, double x, double y, double z) {
  const double p[3] = {x, y, z};
  for (int d = 0; d < 3; ++d)
    if (!(p[d] > g.origin[d] && p[d] < g.position(d, g.dims[d] - 1))) return false;
  return true;
}

/// Marks `value` at every point of one array within `radius` of (x, y, z) on `planes`: APBS's
/// markSphere (points at distance ≤ radius). `shift` is the array's offset from the nodes in spacings
/// (½ along the face's axis). Same-value writes from several threads are atomic: the result does
/// not depend on the order.
void mark_sphere(double* array, const GridSpec& g, const double shift[3], double x, double y, double z, double radius,
                 double value, PlaneRange planes) {
  const long n[3] = {static_cast<long>(g.dims[0]), static_cast<long>(g.dims[1]), static_cast<long>(g.dims[2])};
  const double p[3] = {x - (g.origin[0] + shift[0] * g.spacing[0]), y - (g.origin[1] + shift[1] * g.spacing[1]),
                       z - (g.origin[2] + shift[2] * g.spacing[2])};
  long lo[3], hi[3];
  for (int d = 0; d < 3; ++d) sphere_index_range(p[d], radius, g.spacing[d], n[d], lo[d], hi[d]);
  lo[2] = std::max(lo[2], planes.first);
  hi[2] = std::min(hi[2], planes.end - 1);
  if (lo[2] > hi[2]) return;
  const double r2 = radius * radius;
  const double* h = g.spacing.data();
  for (long i = lo[0]; i <= hi[0]; ++i) {
    const double dx = p[0] - h[0] * static_cast<double>(i);
    for (long j = lo[1]; j <= hi[1]; ++j) {
      const double dy = p[1] - h[1] * static_cast<double>(j);
      if (dx * dx + dy * dy > r2) continue;  // the row misses the sphere (never changes a result)
      for (long k = lo[2]; k <= hi[2]; ++k)
        if (in_sphere(p, h, i, j, k, r2)) {
          double& cell = array[i + n[0] * (j + n[1] * k)];
#pragma omp atomic write
          cell = value;
        }
    }
  }
}

constexpr double kNoShift[3] = {0, 0, 0};
constexpr double kFaceShift[3][3] = {{0.5, 0, 0}, {0, 0.5, 0}, {0, 0, 0.5}};

/// Points binned into cubic cells (CSR), for "is any point within r of here" queries with r ≤ cell.
struct PointCells {
  double lo[3] = {0, 0, 0};
  double cell = 1;
  long n[3] = {1, 1, 1};
  std::vector<std::int64_t> start;
  std::vector<double> x, y, z;  ///< the points, sorted by cell

  /// Takes the points' memory: each coordinate is released once its sorted copy is made.
  PointCells(SasPoints&& p, double cell_size) : cell(cell_size) {
    const std::size_t count = p.x.size();
    if (count == 0) {
      start.assign(2, 0);
      return;
    }
    double hi[3] = {p.x[0], p.y[0], p.z[0]};
    lo[0] = p.x[0], lo[1] = p.y[0], lo[2] = p.z[0];
    for (std::size_t i = 0; i < count; ++i) {
      lo[0] = std::min(lo[0], p.x[i]), hi[0] = std::max(hi[0], p.x[i]);
      lo[1] = std::min(lo[1], p.y[i]), hi[1] = std::max(hi[1], p.y[i]);
      lo[2] = std::min(lo[2], p.z[i]), hi[2] = std::max(hi[2], p.z[i]);
    }
    for (int d = 0; d < 3; ++d) n[d] = static_cast<long>(std::floor((hi[d] - lo[d]) / cell)) + 1;
    std::vector<std::size_t> of(count);
    start.assign(static_cast<std::size_t>(n[0] * n[1] * n[2]) + 1, 0);
    for (std::size_t i = 0; i < count; ++i) {
      of[i] = static_cast<std::size_t>(index(p.x[i], 0) + n[0] * (index(p.y[i], 1) + n[1] * index(p.z[i], 2)));
      ++start[of[i] + 1];
    }
    for (std::size_t c = 1; c < start.size(); ++c) start[c] += start[c - 1];
    const auto sorted = [&](std::vector<double>& from) {
      std::vector<std::int64_t> fill(start.begin(), start.end() - 1);
      std::vector<double> to(count);
      for (std::size_t i = 0; i < count; ++i) to[static_cast<std::size_t>(fill[of[i]]++)] = from[i];
      std::vector<double>().swap(from);
      return to;
    };
    x = sorted(p.x);
    y = sorted(p.y);
    z = sorted(p.z);
  }
  long index(double v, int d) const {
    return std::clamp(static_cast<long>(std::floor((v - lo[d]) / cell)), 0L, n[d] - 1);
  }
  /// Whether pred(x, y, z) holds for some point of the cells around (px, py, pz): every point
  /// within one cell side of it is among them.
  template <class Pred>
  bool any(double px, double py, double pz, Pred&& pred) const {
    if (x.empty()) return false;
    const long c[3] = {static_cast<long>(std::floor((px - lo[0]) / cell)),
                       static_cast<long>(std::floor((py - lo[1]) / cell)),
                       static_cast<long>(std::floor((pz - lo[2]) / cell))};
    for (long k = std::max(0L, c[2] - 1); k <= std::min(n[2] - 1, c[2] + 1); ++k)
      for (long j = std::max(0L, c[1] - 1); j <= std::min(n[1] - 1, c[1] + 1); ++j)
        for (long i = std::max(0L, c[0] - 1); i <= std::min(n[0] - 1, c[0] + 1); ++i) {
          const std::size_t cc = static_cast<std::size_t>(i + n[0] * (j + n[1] * k));
          for (std::int64_t s = start[cc]; s < start[cc + 1]; ++s)
            if (pred(x[static_cast<std::size_t>(s)], y[static_cast<std::size_t>(s)], z[static_cast<std::size_t>(s)]))
              return true;
        }
    return false;
  }
  /// Whether some point lies within √r2 (≤ cell) of (px, py, pz).
  bool any_within(double px, double py, double pz, double r2) const {
    return any(px, py, pz, [&](double x0, double y0, double z0) {
      const double dx = px - x0, dy = py - y0, dz = pz - z0;
      return dx * dx + dy * dy + dz * dz <= r2;
    });
  }
};

/// The accessible SAS points batch by batch (sas_batches: the host's memory), each batch binned and
/// handed with the planes its points reach to carve(cells, planes); returns how many points there were.
template <class Carve>
std::size_t carve_by_batches(const Atoms& atoms, const PbOptions& o, int threads, double z0, double dz,
                             long plane_count, PlaneRange planes, std::size_t batch_atoms, Carve&& carve) {
  std::size_t points = 0;
  for (const SasBatch& batch : sas_batches(atoms, o, z0, dz, plane_count, planes, batch_atoms)) {
    SasPoints sas = accessible_sas_points(atoms, o, threads, batch.atoms);
    points += sas.x.size();
    carve(PointCells(std::move(sas), o.probe_radius), batch.planes);
  }
  return points;
}

/// The points of planes [first, end) of a grid's arrays.
std::size_t plane_offset(const GridSpec& g, long plane) {
  return static_cast<std::size_t>(plane) * g.dims[0] * g.dims[1];
}

/// The `mol` dielectric (APBS fillcoCoefMolDielNoSmooth) on `planes`: solvent everywhere, solute
/// within atom + probe radius of any atom, solvent again within a probe radius of any accessible SAS
/// point.
void mol_dielectric(const Atoms& atoms, const PbOptions& o, PbCoefficients& c, int threads, PlaneRange planes,
                    std::size_t batch_atoms) {
  double* eps[3] = {c.eps_x.data(), c.eps_y.data(), c.eps_z.data()};
  for (double* e : eps)
    std::fill(e + plane_offset(c.grid, planes.first), e + plane_offset(c.grid, planes.end), o.solvent_dielectric);
  const long natoms = static_cast<long>(atoms.size());
#pragma omp parallel for schedule(dynamic, 16) num_threads(threads)
  for (long a = 0; a < natoms; ++a) {
    const double r = atoms.radius[a];
    if (r <= kNoRadius || !on_mesh(c.grid, atoms.x[a], atoms.y[a], atoms.z[a])) continue;
    for (int d = 0; d < 3; ++d)
      mark_sphere(eps[d], c.grid, kFaceShift[d], atoms.x[a], atoms.y[a], atoms.z[a], r + o.probe_radius,
                  o.solute_dielectric, planes);
  }
  if (o.probe_radius <= kNoRadius) return;
  // APBS marks solvent within a probe radius of every accessible SAS point. The same test, gathered:
  // each face still marked solute looks for a SAS point within the probe radius (the same arithmetic
  // as the marking, so the same faces), among the points binned near it. Far fewer tests than
  // marking every point's sphere, as the points crowd (10 per Å²). Batch by batch of atoms, each
  // carving the planes its points reach.
  const GridSpec& g = c.grid;
  const long n[3] = {static_cast<long>(g.dims[0]), static_cast<long>(g.dims[1]), static_cast<long>(g.dims[2])};
  const double r2 = o.probe_radius * o.probe_radius;
  const auto carve = [&](const PointCells& cells, PlaneRange reached) {
    for (int d = 0; d < 3; ++d) {
      const double o3[3] = {g.origin[0] + kFaceShift[d][0] * g.spacing[0],
                            g.origin[1] + kFaceShift[d][1] * g.spacing[1],
                            g.origin[2] + kFaceShift[d][2] * g.spacing[2]};
      double* e = eps[d];
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
      for (long k = reached.first; k < reached.end; ++k)
        for (long j = 0; j < n[1]; ++j)
          for (long i = 0; i < n[0]; ++i) {
            double& face = e[i + n[0] * (j + n[1] * k)];
            if (face != o.solute_dielectric) continue;
            const double at[3] = {o3[0] + g.spacing[0] * static_cast<double>(i),
                                  o3[1] + g.spacing[1] * static_cast<double>(j),
                                  o3[2] + g.spacing[2] * static_cast<double>(k)};
            if (cells.any(at[0], at[1], at[2], [&](double sx, double sy, double sz) {
                  const double p[3] = {sx - o3[0], sy - o3[1], sz - o3[2]};
                  return in_sphere(p, g.spacing.data(), i, j, k, r2);
                }))
              face = o.solvent_dielectric;
          }
    }
  };
  c.sas_points = carve_by_batches(atoms, o, threads, g.origin[2], g.spacing[2], n[2], planes, batch_atoms, carve);
}

/// `smol`: each face value of `planes` becomes the 9-point harmonic mean of the `mol` values around
/// it (which reach one plane beyond).
void smooth_dielectric(PbCoefficients& c, int threads, PlaneRange planes) {
  const long n[3] = {static_cast<long>(c.grid.dims[0]), static_cast<long>(c.grid.dims[1]),
                     static_cast<long>(c.grid.dims[2])};
  // The unsmoothed values of the planes read (a rank's share keeps only those resident).
  const PlaneRange read{std::max(0L, planes.first - 1), std::min(n[2], planes.end + 1)};
  const std::size_t from = plane_offset(c.grid, read.first), to = plane_offset(c.grid, read.end);
  std::vector<double> x, y, z;
  for (auto [copy, map] : {std::pair{&x, &c.eps_x}, std::pair{&y, &c.eps_y}, std::pair{&z, &c.eps_z}}) {
    if (from == 0 && to == map->size()) {  // the whole grid: one copy
      *copy = *map;
      continue;
    }
    assign_zeros_resident(*copy, map->size(), from, to);
    std::copy(map->begin() + static_cast<std::ptrdiff_t>(from), map->begin() + static_cast<std::ptrdiff_t>(to),
              copy->begin() + static_cast<std::ptrdiff_t>(from));
  }
  const long sx = 1, sy = n[0], sz = n[0] * n[1];
#pragma omp parallel for schedule(static) num_threads(threads)
  for (long k = planes.first; k < planes.end; ++k)
    for (long j = 0; j < n[1]; ++j)
      for (long i = 0; i < n[0]; ++i) {
        const long idx = i + sy * j + sz * k;
        c.eps_x[idx] = smooth_face(x.data(), y.data(), z.data(), 0, i, j, k, n, sx, sy, sz);
        c.eps_y[idx] = smooth_face(y.data(), x.data(), z.data(), 1, i, j, k, n, sx, sy, sz);
        c.eps_z[idx] = smooth_face(z.data(), x.data(), y.data(), 2, i, j, k, n, sx, sy, sz);
      }
}

/// Marks `value` at every node of a byte grid (dims n, spacing h, origin o) within `radius` of p.
void mark_sphere_bytes(unsigned char* array, const long* n, const double* h, const double* o, double x, double y,
                       double z, double radius, unsigned char value) {
  const double p[3] = {x - o[0], y - o[1], z - o[2]};
  long lo[3], hi[3];
  for (int d = 0; d < 3; ++d) sphere_index_range(p[d], radius, h[d], n[d], lo[d], hi[d]);
  const double r2 = radius * radius;
  for (long k = lo[2]; k <= hi[2]; ++k) {
    const double dz = p[2] - h[2] * static_cast<double>(k);
    for (long j = lo[1]; j <= hi[1]; ++j) {
      const double dy = p[1] - h[1] * static_cast<double>(j);
      if (dz * dz + dy * dy > r2) continue;
      for (long i = lo[0]; i <= hi[0]; ++i) {
        const double dx = p[0] - h[0] * static_cast<double>(i);
        if (dz * dz + dy * dy + dx * dx <= r2) {
          unsigned char& cell = array[i + n[0] * (j + n[1] * k)];
#pragma omp atomic write
          cell = value;
        }
      }
    }
  }
}

/// The fine grid of sampled_coefficients: `s` points per grid spacing along each axis.
struct FineGrid {
  long n[3];   ///< the map's nodes
  long nf[3];  ///< the fine grid's points
  long nc[3];  ///< the map's cells (n − 1 per axis)
  double hf[3];
  const double* of;
  long s;
  std::size_t index(long i, long j, long k) const { return static_cast<std::size_t>(i + nf[0] * (j + nf[1] * k)); }
};

FineGrid fine_grid(const GridSpec& g, int s) {
  FineGrid f{};
  for (int d = 0; d < 3; ++d) {
    f.n[d] = static_cast<long>(g.dims[d]);
    f.nf[d] = (f.n[d] - 1) * s + 1;
    f.nc[d] = f.n[d] - 1;
    f.hf[d] = g.spacing[d] / s;
  }
  f.of = g.origin.data();
  f.s = s;
  return f;
}

/// The sharp `mol` surface on the fine grid: region 0 solvent, 1 within atom + probe radius of an
/// atom (the band), 2 within an atom's radius, the band carved by probes at the accessible SAS
/// points; ions 1 where the ions reach. Returns the number of SAS points.
std::size_t mark_fine_regions(const Atoms& atoms, const PbOptions& o, const FineGrid& fg, int threads,
                              std::vector<unsigned char>& region, std::vector<unsigned char>& ions,
                              std::size_t batch_atoms) {
  const long* nf = fg.nf;
  const double* hf = fg.hf;
  const double* of = fg.of;
  const auto fidx = [&fg](long i, long j, long k) { return fg.index(i, j, k); };
  std::size_t sas_points = 0;
  // region: 0 solvent, 1 within atom + probe radius of an atom, 2 within an atom's radius.
  const long natoms = static_cast<long>(atoms.size());
  for (const unsigned char mark : {static_cast<unsigned char>(1), static_cast<unsigned char>(2)}) {
#pragma omp parallel for schedule(dynamic, 16) num_threads(threads)
    for (long a = 0; a < natoms; ++a) {
      const double r = atoms.radius[a];
      if (r <= kNoRadius) continue;
      mark_sphere_bytes(region.data(), nf, hf, of, atoms.x[a], atoms.y[a], atoms.z[a],
                        mark == 1 ? r + o.probe_radius : r, mark);
      if (mark == 1 && pb_has_ions(o))
        mark_sphere_bytes(ions.data(), nf, hf, of, atoms.x[a], atoms.y[a], atoms.z[a], r + pb_ion_radius(o), 0);
    }
  }
  // Carving: points of the band (1) within a probe radius of an accessible SAS point are solvent.
  // A probe at a SAS point never reaches into an atom (2), so only the band is tested.
  if (o.probe_radius > kNoRadius) {
    const double r2 = o.probe_radius * o.probe_radius;
    const auto carve = [&](const PointCells& cells, PlaneRange reached) {  // batch by batch, as mol_dielectric
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
      for (long k = reached.first; k < reached.end; ++k)
        for (long j = 0; j < nf[1]; ++j)
          for (long i = 0; i < nf[0]; ++i) {
            unsigned char& r = region[fidx(i, j, k)];
            if (r == 1 &&
                cells.any_within(of[0] + hf[0] * static_cast<double>(i), of[1] + hf[1] * static_cast<double>(j),
                                 of[2] + hf[2] * static_cast<double>(k), r2))
              r = 0;
          }
    };
    sas_points = carve_by_batches(atoms, o, threads, of[2], hf[2], nf[2], {0, nf[2]}, batch_atoms, carve);
  }
  return sas_points;
}

/// For each cell of the map, what its fine points hold: bit 0 solute, bit 1 solvent, bit 2 ions,
/// bit 3 no ions. Tubes and node cells lying in pure cells take the pure value without sampling.
std::vector<unsigned char> cell_contents(const FineGrid& fg, const std::vector<unsigned char>& region,
                                         const std::vector<unsigned char>& ions, int threads) {
  const long* nc = fg.nc;
  const long s = fg.s;
  const auto fidx = [&fg](long i, long j, long k) { return fg.index(i, j, k); };
  std::vector<unsigned char> pure(
      static_cast<std::size_t>(nc[0] * nc[1] * nc[2]));  // bit0 solute, bit1 solvent, bit2 ions, bit3 no ions
#pragma omp parallel for schedule(static) num_threads(threads)
  for (long k = 0; k < nc[2]; ++k)
    for (long j = 0; j < nc[1]; ++j)
      for (long i = 0; i < nc[0]; ++i) {
        unsigned char seen = 0;
        for (long ff = k * s; ff <= (k + 1) * s; ++ff)
          for (long ee = j * s; ee <= (j + 1) * s; ++ee)
            for (long dd = i * s; dd <= (i + 1) * s; ++dd) {
              const std::size_t f = fidx(dd, ee, ff);
              seen = static_cast<unsigned char>(seen | (region[f] ? 1 : 2));
              seen = static_cast<unsigned char>(seen | (ions[f] ? 4 : 8));
            }
        pure[static_cast<std::size_t>(i + nc[0] * (j + nc[1] * k))] = seen;
      }
  return pure;
}

/// What the cells [i0, i1] × [j0, j1] × [k0, k1] (clipped to the map) hold together (cell_contents' bits).
unsigned char cells_seen_in(const FineGrid& fg, const std::vector<unsigned char>& pure, long i0, long i1, long j0,
                            long j1, long k0, long k1) {
  const long* nc = fg.nc;
  unsigned char seen = 0;
  for (long k = std::max(0L, k0); k <= std::min(nc[2] - 1, k1); ++k)
    for (long j = std::max(0L, j0); j <= std::min(nc[1] - 1, j1); ++j)
      for (long i = std::max(0L, i0); i <= std::min(nc[0] - 1, i1); ++i)
        seen = static_cast<unsigned char>(seen | pure[static_cast<std::size_t>(i + nc[0] * (j + nc[1] * k))]);
  return seen;
}

/// Each face's permittivity (the flux-tube average) and each node's ion accessibility from the fine
/// grid, where a tube or a cell is not pure.
void average_onto_nodes(const PbOptions& o, const FineGrid& fg, const std::vector<unsigned char>& region,
                        const std::vector<unsigned char>& ions, const std::vector<unsigned char>& pure,
                        PbCoefficients& c, int threads) {
  const long* n = fg.n;
  const long* nf = fg.nf;
  const long s = fg.s;
  const auto fidx = [&fg](long i, long j, long k) { return fg.index(i, j, k); };
  const auto cells_seen = [&](long i0, long i1, long j0, long j1, long k0, long k1) {
    return cells_seen_in(fg, pure, i0, i1, j0, j1, k0, k1);
  };
  const double inv_solvent = 1.0 / o.solvent_dielectric, inv_solute = 1.0 / o.solute_dielectric;
  const long half = s / 2;
  auto weight = [](long f, long lo, long hi) { return (f == lo || f == hi) ? 0.5 : 1.0; };
  double* out[3] = {c.eps_x.data(), c.eps_y.data(), c.eps_z.data()};
  const double mask = pb_has_ions(o) ? 1.0 : 0.0;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (long k = 0; k < n[2]; ++k)
    for (long j = 0; j < n[1]; ++j)
      for (long i = 0; i < n[0]; ++i) {
        const long node[3] = {i, j, k};
        const std::size_t idx = static_cast<std::size_t>(i + n[0] * (j + n[1] * k));
        for (int d = 0; d < 3; ++d) {
          if (node[d] == n[d] - 1) {
            out[d][idx] = o.solvent_dielectric;  // past the last node: unused
            continue;
          }
          const int t1 = d == 0 ? 1 : 0, t2 = d == 2 ? 1 : 2;
          long lo[3], hi[3];  // the tube's cells
          lo[d] = hi[d] = node[d];
          lo[t1] = node[t1] - 1, hi[t1] = node[t1];
          lo[t2] = node[t2] - 1, hi[t2] = node[t2];
          const int seen = cells_seen(lo[0], hi[0], lo[1], hi[1], lo[2], hi[2]) & 3;
          if (seen == 1 || seen == 2) {
            out[d][idx] = seen == 1 ? o.solute_dielectric : o.solvent_dielectric;
            continue;
          }
          const long a0 = node[d] * s, a1 = a0 + s;
          const long b0 = std::max(0L, node[t1] * s - half), b1 = std::min(nf[t1] - 1, node[t1] * s + half);
          const long c0 = std::max(0L, node[t2] * s - half), c1 = std::min(nf[t2] - 1, node[t2] * s + half);
          double sum = 0, wsum = 0;
          for (long cc = c0; cc <= c1; ++cc)
            for (long bb = b0; bb <= b1; ++bb) {
              double resist = 0, along = 0;
              for (long aa = a0; aa <= a1; ++aa) {
                long f[3];
                f[d] = aa, f[t1] = bb, f[t2] = cc;
                const double w = weight(aa, a0, a1);
                resist += w * (region[fidx(f[0], f[1], f[2])] ? inv_solute : inv_solvent);
                along += w;
              }
              const double w = weight(bb, b0, b1) * weight(cc, c0, c1);
              sum += w * along / resist;
              wsum += w;
            }
          out[d][idx] = sum / wsum;
        }
        // Ion accessibility: the accessible fraction of the node's cell.
        const int seen = cells_seen(i - 1, i, j - 1, j, k - 1, k) & 12;
        if (seen == 4 || seen == 8) {
          c.accessibility[idx] = seen == 4 ? mask : 0.0;
          continue;
        }
        double acc = 0, wsum = 0;
        const long i0 = i * s - half, i1 = i * s + half, j0 = j * s - half, j1 = j * s + half, k0 = k * s - half,
                   k1 = k * s + half;
        for (long cc = std::max(0L, k0); cc <= std::min(nf[2] - 1, k1); ++cc)
          for (long bb = std::max(0L, j0); bb <= std::min(nf[1] - 1, j1); ++bb)
            for (long aa = std::max(0L, i0); aa <= std::min(nf[0] - 1, i1); ++aa) {
              const double w = weight(aa, i0, i1) * weight(bb, j0, j1) * weight(cc, k0, k1);
              acc += w * ions[fidx(aa, bb, cc)];
              wsum += w;
            }
        c.accessibility[idx] = mask * acc / wsum;
      }
}

/// The `mol` surface sampled `s` times finer than the grid (espgrid's, not APBS's): each face's
/// permittivity is the flux-tube average of the sharp surface's region (harmonic along the face's
/// axis: the layers are in series; arithmetic across: the lines are in parallel), each node's ion
/// accessibility the fraction of its cell the ions reach. The same surface as APBS's `mol` (atom +
/// probe spheres carved by probes at APBS's SAS points), with a far smaller error at a given
/// spacing (benchmarks/NOTES.md, PB).
void sampled_coefficients(const Atoms& atoms, const PbOptions& o, PbCoefficients& c, int threads, int s,
                          std::size_t batch_atoms) {
  const FineGrid fg = fine_grid(c.grid, s);
  const std::size_t fine = static_cast<std::size_t>(fg.nf[0] * fg.nf[1] * fg.nf[2]);
  std::vector<unsigned char> region(fine, 0), ions(fine, 1);
  const std::size_t sas_points = mark_fine_regions(atoms, o, fg, threads, region, ions, batch_atoms);
  if (o.probe_radius > kNoRadius) c.sas_points = sas_points;
  const std::vector<unsigned char> pure = cell_contents(fg, region, ions, threads);
  average_onto_nodes(o, fg, region, ions, pure, c, threads);
}

/// `mol`/`smol` ion accessibility (APBS fillcoCoefMolIon) on `planes`: 1, except 0 within the largest
/// ion radius + atom radius; atoms farther than that outside the grid's box mark nothing.
void mol_accessibility(const Atoms& atoms, const PbOptions& o, PbCoefficients& c, int threads, PlaneRange planes) {
  const bool ions = pb_has_ions(o);
  std::fill(c.accessibility.begin() + static_cast<std::ptrdiff_t>(plane_offset(c.grid, planes.first)),
            c.accessibility.begin() + static_cast<std::ptrdiff_t>(plane_offset(c.grid, planes.end)), ions ? 1.0 : 0.0);
  if (!ions) return;
  const double ion = pb_ion_radius(o);
  const GridSpec& g = c.grid;
  const long natoms = static_cast<long>(atoms.size());
#pragma omp parallel for schedule(dynamic, 16) num_threads(threads)
  for (long a = 0; a < natoms; ++a) {
    const double r = atoms.radius[a];
    if (r <= kNoRadius) continue;
    const double p[3] = {atoms.x[a], atoms.y[a], atoms.z[a]};
    bool near = true;
    for (int d = 0; d < 3; ++d)
      near = near && !(p[d] < g.origin[d] - ion - r) && !(p[d] > g.position(d, g.dims[d] - 1) + ion + r);
    if (near) mark_sphere(c.accessibility.data(), g, kNoShift, p[0], p[1], p[2], r + ion, 0.0, planes);
  }
}

struct SplineBox {
  long lo[3] = {0, 0, 0}, hi[3] = {-1, -1, -1};
};

/// Each atom's box of nodes for `spl2` and `spl4`, as APBS's loop bounds: floor/ceil of
/// (p ∓ (R + h/2))/h, R the larger of the accessibility and dielectric reaches. Empty for atoms
/// without a radius and atoms off the mesh.
std::vector<SplineBox> spline_boxes(const Atoms& atoms, const GridSpec& g, const PbOptions& o) {
  const long n[3] = {static_cast<long>(g.dims[0]), static_cast<long>(g.dims[1]), static_cast<long>(g.dims[2])};
  const double ion = pb_ion_radius(o);
  std::vector<SplineBox> boxes(atoms.size());
  for (std::size_t a = 0; a < atoms.size(); ++a) {
    if (atoms.radius[a] <= kSplineSmall || !on_mesh(g, atoms.x[a], atoms.y[a], atoms.z[a])) continue;
    const double reach = std::max(ion + atoms.radius[a] + o.spline_window, atoms.radius[a] + o.spline_window);
    const double p[3] = {atoms.x[a] - g.origin[0], atoms.y[a] - g.origin[1], atoms.z[a] - g.origin[2]};
    for (int d = 0; d < 3; ++d) {
      const double span = reach + 0.5 * g.spacing[d];
      boxes[a].lo[d] = std::max(0L, static_cast<long>(std::floor((p[d] - span) / g.spacing[d])));
      boxes[a].hi[d] = std::min(n[d] - 1, static_cast<long>(std::ceil((p[d] + span) / g.spacing[d])));
    }
  }
  return boxes;
}

/// `spl2` (APBS fillcoCoefSpline) and `spl4` (fillcoCoefSpline4): products of per-atom switching
/// functions, the atoms taken in their order at every point (so the products round as APBS's do).
/// Planes in parallel; only `planes` are built.
void spline_coefficients(const Atoms& atoms, const PbOptions& o, PbCoefficients& c, int threads, PlaneRange planes) {
  const GridSpec& g = c.grid;
  const long n[3] = {static_cast<long>(g.dims[0]), static_cast<long>(g.dims[1]), static_cast<long>(g.dims[2])};
  const double w = o.spline_window;
  const double ion = pb_ion_radius(o);  // APBS: the largest ion radius, none without ions
  const bool quartic = o.surface == PbSurface::Spline4;
  const long first = static_cast<long>(plane_offset(g, planes.first));
  const long end = static_cast<long>(plane_offset(g, planes.end));
  for (std::vector<double>* a : {&c.eps_x, &c.eps_y, &c.eps_z, &c.accessibility})
    std::fill(a->begin() + first, a->begin() + end, 1.0);
  const std::vector<SplineBox> boxes = spline_boxes(atoms, g, o);
  std::vector<std::vector<std::int32_t>> by_plane(static_cast<std::size_t>(n[2]));
  for (std::size_t a = 0; a < atoms.size(); ++a)
    if (atoms.radius[a] > kSplineSmall)
      for (long k = boxes[a].lo[2]; k <= boxes[a].hi[2]; ++k)
        by_plane[static_cast<std::size_t>(k)].push_back(static_cast<std::int32_t>(a));
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (long k = planes.first; k < planes.end; ++k) {
    for (const std::int32_t a : by_plane[static_cast<std::size_t>(k)]) {
      const double p[3] = {atoms.x[a] - g.origin[0], atoms.y[a] - g.origin[1], atoms.z[a] - g.origin[2]};
      const SplineBox& b = boxes[static_cast<std::size_t>(a)];
      const double r = atoms.radius[a];
      double poly[8] = {0, 0, 0, 0, 0, 0, 0, 0}, ion_poly[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      if (quartic) {
        spline4_coefficients(r, w, poly);
        spline4_coefficients(ion + r, w, ion_poly);
      }
      for (long j = b.lo[1]; j <= b.hi[1]; ++j)
        for (long i = b.lo[0]; i <= b.hi[0]; ++i) {
          const std::size_t idx = static_cast<std::size_t>(i + n[0] * (j + n[1] * k));
          if (quartic)
            spline4_factors(p, g.spacing.data(), i, j, k, r, ion, w, poly, ion_poly, c.accessibility[idx], c.eps_x[idx],
                            c.eps_y[idx], c.eps_z[idx]);
          else
            spline_factors(p, g.spacing.data(), i, j, k, r, ion, w, c.accessibility[idx], c.eps_x[idx], c.eps_y[idx],
                           c.eps_z[idx]);
        }
    }
  }
  const double mask = pb_has_ions(o) ? 1.0 : 0.0;
  const double de = o.solvent_dielectric - o.solute_dielectric;
#pragma omp parallel for schedule(static) num_threads(threads)
  for (long i = first; i < end; ++i) {
    c.accessibility[i] *= mask;
    c.eps_x[i] = de * c.eps_x[i] + o.solute_dielectric;
    c.eps_y[i] = de * c.eps_y[i] + o.solute_dielectric;
    c.eps_z[i] = de * c.eps_z[i] + o.solute_dielectric;
  }
}

}  // namespace

double source_scale(double temperature) { return 4.0 * kPi * coulomb_constant(PotentialUnit::KTPerE, temperature); }

void check_atoms_have_radii(const Atoms& atoms, const PbOptions& options) {
  if (atoms.empty()) throw UsageError("--model pb needs at least one atom");
  if (!uniform_medium(options) && max_radius(atoms) <= kNoRadius)
    throw UsageError(
        "--model pb needs atomic radii (they draw the molecular surface), and every atom's radius is 0: "
        "give a PQR with its radius column (or, from Python, radii=)");
}

void check_atoms_inside(const Atoms& atoms, const GridSpec& g, int threads) {
  double lo[3], hi[3];
  for (int d = 0; d < 3; ++d) {
    lo[d] = g.origin[d] + 2.0 * g.spacing[d];
    hi[d] = g.origin[d] + static_cast<double>(g.dims[d] - 3) * g.spacing[d];
  }
  const auto inside = [&](std::size_t a, int d) {
    const double p = d == 0 ? atoms.x[a] : d == 1 ? atoms.y[a] : atoms.z[a];
    return p >= lo[d] && p <= hi[d];
  };
  // The first atom outside (the one named, as a loop in order would find it), on every core: the
  // 1.93 M-atom capsid's check lies on the process's path.
  const auto n = static_cast<std::int64_t>(atoms.size());
  std::int64_t first = n;
#pragma omp parallel for schedule(static) num_threads(threads_to_use(threads)) reduction(min : first)
  for (std::int64_t a = 0; a < n; ++a)
    if (a < first && !(inside(static_cast<std::size_t>(a), 0) && inside(static_cast<std::size_t>(a), 1) &&
                       inside(static_cast<std::size_t>(a), 2)))
      first = a;
  if (first == n) return;
  const auto a = static_cast<std::size_t>(first);
  const double p[3] = {atoms.x[a], atoms.y[a], atoms.z[a]};
  for (int d = 0; d < 3; ++d)
    if (!inside(a, d))
      throw UsageError("--model pb needs every atom at least two grid spacings inside the grid; atom " +
                       std::to_string(a + 1) + " at (" + short_fixed(p[0], 3) + ", " + short_fixed(p[1], 3) + ", " +
                       short_fixed(p[2], 3) + ") is not (grid " + std::string(1, "xyz"[d]) + " " +
                       short_fixed(g.origin[d], 3) + " to " +
                       short_fixed(g.origin[d] + static_cast<double>(g.dims[d] - 1) * g.spacing[d], 3) +
                       " Å): enlarge --padding or the explicit grid");
}

bool uniform_medium(const PbOptions& options) {
  // APBS: "islap" when the ionic strength and |pdie − sdie| are below its VPMGSMALL (1e-12).
  return !pb_has_ions(options) && std::fabs(options.solute_dielectric - options.solvent_dielectric) < 1e-12;
}

PbCoefficients build_coefficients(const Atoms& atoms, const GridSpec& grid, const PbOptions& options, bool spread,
                                  int threads) {
  return build_coefficients_on_planes(atoms, grid, options, spread, all_planes(grid), threads);
}

bool surface_built_by_planes(const PbOptions& options) { return !uniform_medium(options) && options.sampling < 2; }

bool maps_held_on_planes(const GridSpec& grid, const PbOptions& options, PlaneRange planes) {
  return !planes.covers(grid) && surface_built_by_planes(options);
}

PbCoefficients build_coefficients_on_planes(const Atoms& atoms, const GridSpec& grid, const PbOptions& options,
                                            bool spread, PlaneRange planes, int threads, std::size_t sas_batch_atoms) {
  threads = threads_to_use(threads);
  const long nz = static_cast<long>(grid.dims[2]);
  planes.end = std::min(planes.end, nz);
  if (planes.first < 0 || planes.first > planes.end)
    throw Error("internal error: planes " + std::to_string(planes.first) + " to " + std::to_string(planes.end) +
                " are not within the grid's " + std::to_string(nz));
  PbCoefficients c;
  c.grid = grid;
  c.planes = all_planes(grid);
  const std::size_t points = grid.point_count();
  // A rank's share (the surface built on its planes, smol's mol values one plane beyond): only
  // those planes' pages are resident; the other planes stay zeros that nothing of this rank writes.
  const PlaneRange kept = maps_held_on_planes(grid, options, planes)
                              ? PlaneRange{std::max(0L, planes.first - 1), std::min(nz, planes.end + 1)}
                              : all_planes(grid);
  for (std::vector<double>* map : {&c.eps_x, &c.eps_y, &c.eps_z, &c.accessibility})
    assign_zeros_resident(*map, points, plane_offset(grid, kept.first), plane_offset(grid, kept.end));
  if (uniform_medium(options)) {
    std::fill(c.eps_x.begin(), c.eps_x.end(), options.solute_dielectric);
    std::fill(c.eps_y.begin(), c.eps_y.end(), options.solute_dielectric);
    std::fill(c.eps_z.begin(), c.eps_z.end(), options.solute_dielectric);
  } else if (options.surface == PbSurface::Spline || options.surface == PbSurface::Spline4) {
    c.planes = planes;
    spline_coefficients(atoms, options, c, threads, planes);
  } else if (options.sampling >= 2) {
    sampled_coefficients(atoms, options, c, threads, options.sampling, sas_batch_atoms);
  } else {
    c.planes = planes;
    if (options.surface == PbSurface::Smol) {  // smoothing reads the mol values one plane beyond
      const PlaneRange mol{std::max(0L, planes.first - 1), std::min(nz, planes.end + 1)};
      mol_dielectric(atoms, options, c, threads, mol, sas_batch_atoms);
      smooth_dielectric(c, threads, planes);
    } else {
      mol_dielectric(atoms, options, c, threads, planes, sas_batch_atoms);
    }
    mol_accessibility(atoms, options, c, threads, planes);
  }
  if (spread) c.charge = spread_charges(atoms, grid, options.charges);
  return c;
}

std::unique_ptr<DeviceSurfaceInputs> device_surface_inputs(const Atoms& atoms, const GridSpec& grid,
                                                           const PbOptions& options, int device, int threads) {
  threads = threads_to_use(threads);
  auto d = std::make_unique<DeviceSurfaceInputs>();
  cuda::PbSurfaceInput& in = d->input;
  in.atoms = static_cast<long>(atoms.size());
  in.x = atoms.x.data();
  in.y = atoms.y.data();
  in.z = atoms.z.data();
  in.radius = atoms.radius.data();
  for (int a = 0; a < 3; ++a) {
    in.n[a] = static_cast<long>(grid.dims[a]);
    in.origin[a] = grid.origin[a];
    in.spacing[a] = grid.spacing[a];
  }
  in.surface = options.surface == PbSurface::Mol ? 0 : options.surface == PbSurface::Smol ? 1 : 2;
  in.solute_dielectric = options.solute_dielectric;
  in.solvent_dielectric = options.solvent_dielectric;
  in.probe_radius = options.probe_radius;
  in.ion_radius = pb_ion_radius(options);
  in.spline_window = options.spline_window;
  in.salt = pb_has_ions(options);
  in.device = device;
  if (options.surface == PbSurface::Spline) {
    const std::vector<SplineBox> boxes = spline_boxes(atoms, grid, options);
    const long ny = in.n[1], nz = in.n[2];
    std::vector<std::vector<int>> rows(static_cast<std::size_t>(ny * nz));
    d->box_lo.resize(atoms.size());
    d->box_hi.resize(atoms.size());
    for (std::size_t a = 0; a < atoms.size(); ++a) {
      d->box_lo[a] = boxes[a].lo[0];
      d->box_hi[a] = boxes[a].hi[0];
      if (atoms.radius[a] <= kSplineSmall) continue;
      for (long k = boxes[a].lo[2]; k <= boxes[a].hi[2]; ++k)
        for (long j = boxes[a].lo[1]; j <= boxes[a].hi[1]; ++j)
          rows[static_cast<std::size_t>(j + ny * k)].push_back(static_cast<int>(a));  // ascending: the host's order
    }
    d->row_start.assign(rows.size() + 1, 0);
    for (std::size_t r = 0; r < rows.size(); ++r)
      d->row_start[r + 1] = d->row_start[r] + static_cast<long long>(rows[r].size());
    d->row_atoms.reserve(static_cast<std::size_t>(d->row_start.back()));
    for (const auto& r : rows) d->row_atoms.insert(d->row_atoms.end(), r.begin(), r.end());
    in.row_start = d->row_start.data();
    in.row_atoms = d->row_atoms.data();
    in.box_x_lo = d->box_lo.data();
    in.box_x_hi = d->box_hi.data();
  } else if (options.probe_radius > kNoRadius) {
    d->reference = reference_sphere(reference_sphere_request(atoms, options));
    d->neighbours = sas_neighbours(atoms, options, threads);
    d->neighbour_start.assign(d->neighbours.start.begin(), d->neighbours.start.end());
    in.reference_points = static_cast<long>(d->reference.x.size());
    in.reference_x = d->reference.x.data();
    in.reference_y = d->reference.y.data();
    in.reference_z = d->reference.z.data();
    in.neighbour_start = d->neighbour_start.data();
    in.neighbours = d->neighbours.atoms.data();
  }
  return d;
}

bool surface_on_device(const PbOptions& options) {
  // spl4 and the sampled surface are built on the host (the GPU then solves: the hybrid path).
  return !uniform_medium(options) && options.sampling < 2 && options.surface != PbSurface::Spline4;
}

bool atoms_on_mesh(const Atoms& atoms, const GridSpec& grid, int threads) {
  const auto n = static_cast<std::int64_t>(atoms.size());
  std::int64_t off = 0;  // asked up to three times on the device path's way: on every core
#pragma omp parallel for schedule(static) num_threads(threads_to_use(threads)) reduction(+ : off)
  for (std::int64_t a = 0; a < n; ++a) {
    const auto i = static_cast<std::size_t>(a);
    off += !on_mesh(grid, atoms.x[i], atoms.y[i], atoms.z[i]);
  }
  return off == 0;
}

PbCoefficients build_coefficients_on_device(const Atoms& atoms, const GridSpec& grid, const PbOptions& options,
                                            bool spread, int device, int threads, double* kernel_seconds) {
  threads = threads_to_use(threads);
  if (!surface_on_device(options) || !atoms_on_mesh(atoms, grid))  // the host builds these
    return build_coefficients(atoms, grid, options, spread, threads);
  PbCoefficients c;
  c.grid = grid;
  const std::size_t points = grid.point_count();
  c.eps_x.assign(points, 0.0);
  c.eps_y.assign(points, 0.0);
  c.eps_z.assign(points, 0.0);
  c.accessibility.assign(points, 0.0);
  const std::unique_ptr<DeviceSurfaceInputs> inputs = device_surface_inputs(atoms, grid, options, device, threads);
  cuda::PbSurfaceOutput out;
  out.eps_x = c.eps_x.data();
  out.eps_y = c.eps_y.data();
  out.eps_z = c.eps_z.data();
  out.accessibility = c.accessibility.data();
  cuda::build_pb_surface(inputs->input, out);
  c.sas_points = out.sas_points;
  if (kernel_seconds) *kernel_seconds = out.kernel_seconds;
  if (spread) c.charge = spread_charges(atoms, grid, options.charges);
  return c;
}

}  // namespace espgrid::pb
