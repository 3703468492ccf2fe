// The device PB pipeline's steps on the CPU (pb_pipeline.h emulate_pipeline): the same per-item
// functions (pb_pipeline_math.h) in host loops, so the tests can hold each device algorithm to the
// host's builders (pb_coefficients.cpp, pb_charges.cpp, assemble_system) on a machine without a GPU.
// Built without FMA contraction (CMakeLists.txt), as the device code and the host's builders.
#include <omp.h>

#include <algorithm>
#include <vector>

#include "src/pb/pb_boundary.h"
#include "src/pb/pb_pipeline.h"
#include "src/pb/pb_solve.h"

namespace espgrid::pb {
namespace {

/// Atoms sorted by key, ascending index within a key (what cub's stable radix sort gives the
/// device), and each key's first position: the device's bins.
struct HostBins {
  std::vector<unsigned> start;
  std::vector<int> atoms;
};
template <class Key>
HostBins bin_atoms(const Atoms& atoms, long bins, Key&& key) {
  HostBins b;
  std::vector<long> keys(atoms.size());
  b.start.assign(static_cast<std::size_t>(bins) + 2, 0);
  for (std::size_t a = 0; a < atoms.size(); ++a) {
    keys[a] = key(atoms.x[a], atoms.y[a], atoms.z[a]);
    ++b.start[static_cast<std::size_t>(keys[a]) + 1];
  }
  for (std::size_t c = 1; c < b.start.size(); ++c) b.start[c] += b.start[c - 1];
  std::vector<unsigned> fill(b.start.begin(), b.start.end() - 1);
  b.atoms.resize(atoms.size());
  for (std::size_t a = 0; a < atoms.size(); ++a)
    b.atoms[fill[static_cast<std::size_t>(keys[a])]++] = static_cast<int>(a);
  b.start.resize(static_cast<std::size_t>(bins) + 1);
  return b;
}

/// Every atom's SAS neighbours, closest first; none for atoms that cannot reach the window.
SasNeighbours neighbour_lists(const AtomCells& cells, const AtomArrays& at, double probe, const SurfaceBytes& window) {
  SasNeighbours nb;
  nb.start.assign(static_cast<std::size_t>(at.count) + 1, 0);
  for (long a = 0; a < at.count; ++a) {
    std::int64_t count = 0;
    if (reaches_window(window, at.z[a], at.radius[a], probe))
      for_each_sas_neighbour(cells, at, probe, a, [&](int) { ++count; });
    nb.start[static_cast<std::size_t>(a) + 1] = nb.start[static_cast<std::size_t>(a)] + count;
  }
  nb.atoms.resize(static_cast<std::size_t>(nb.start.back()));
#pragma omp parallel for schedule(dynamic, 64)
  for (long a = 0; a < at.count; ++a) {
    int* out = nb.atoms.data() + nb.start[static_cast<std::size_t>(a)];
    long s = 0;
    if (!reaches_window(window, at.z[a], at.radius[a], probe)) continue;
    for_each_sas_neighbour(cells, at, probe, a, [&](int b) { out[s++] = b; });
    sort_closest_first(out, s, at, a);
  }
  return nb;
}

/// The surface's bytes (kernels/pb/pb_pipeline_inputs.cu build_surface_bytes); returns the open points.
std::size_t surface_bytes(const AtomArrays& at, const PbOptions& o, const SasNeighbours& nb, const ReferenceSphere& ref,
                          SurfaceBytes& g) {
  const std::size_t points = static_cast<std::size_t>(g.n[0] * g.n[1] * g.k_count);
  const auto mark = [&](int array, double add, unsigned char value) {
#pragma omp parallel for schedule(dynamic, 16)
    for (long s = 0; s < at.count; ++s) {
      if (at.radius[s] <= kNoRadius) continue;
      const double shift[3] = {array < 3 ? face_shift(array, 0) : 0.0, array < 3 ? face_shift(array, 1) : 0.0,
                               array < 3 ? face_shift(array, 2) : 0.0};
      unsigned char* out = array < 3 ? g.solute[array] : g.accessible;
      for_each_node_in_sphere(g, shift, at.x[s], at.y[s], at.z[s], at.radius[s] + add, [&](long i, long j, long k) {
        unsigned char& cell = out[g.stored(i, j, k)];
#pragma omp atomic write
        cell = value;
      });
    }
  };
  for (int d = 0; d < 3; ++d) std::fill(g.solute[d], g.solute[d] + points, 0);
  std::fill(g.accessible, g.accessible + points, pb_has_ions(o) ? 1 : 0);
  for (int d = 0; d < 3; ++d) mark(d, o.probe_radius, 1);
  std::size_t open = 0;
  if (o.probe_radius > kNoRadius)  // one item per (atom, reference point), as the device's threads
    for (long a = 0; a < at.count; ++a)
      for (std::size_t q = 0; q < ref.x.size() && reaches_window(g, at.z[a], at.radius[a], o.probe_radius); ++q)
        open += carve_sas_point(g, at, nb.atoms.data(), static_cast<long>(nb.start[static_cast<std::size_t>(a)]),
                                static_cast<long>(nb.start[static_cast<std::size_t>(a) + 1]), o.probe_radius, a,
                                ref.x[q], ref.y[q], ref.z[q]);
  if (pb_has_ions(o)) mark(3, pb_ion_radius(o), 0);
  return open;
}

/// The device's codes and spread charges of the planes first .. first + planes − 1 (the surface's
/// bytes over those planes and one more on each side where the grid has them), as a slab builds them.
void slab_inputs(const Atoms& atoms, const GridSpec& grid, const PbOptions& o, long first, long planes,
                 PipelineEmulation& e) {
  const AtomArrays at{static_cast<long>(atoms.size()),
                      atoms.x.data(),
                      atoms.y.data(),
                      atoms.z.data(),
                      atoms.radius.data(),
                      atoms.charge.data()};
  const long n[3] = {static_cast<long>(grid.dims[0]), static_cast<long>(grid.dims[1]), static_cast<long>(grid.dims[2])};
  const std::size_t plane = static_cast<std::size_t>(n[0] * n[1]);
  // The surface's window and the SAS search.
  SurfaceBytes g;
  for (int d = 0; d < 3; ++d) {
    g.n[d] = n[d];
    g.origin[d] = grid.origin[d];
    g.h[d] = grid.spacing[d];
  }
  g.hold_planes_around(first, planes);
  AtomCells cells = sas_cell_geometry(atoms, o);
  const HostBins cell_bins = bin_atoms(atoms, cells.n[0] * cells.n[1] * cells.n[2],
                                       [&](double x, double y, double z) { return cells.key(x, y, z); });
  cells.start = cell_bins.start.data();
  cells.atoms = cell_bins.atoms.data();
  e.neighbours = neighbour_lists(cells, at, o.probe_radius, g);
  // The surface, then the codes.
  const std::size_t stored = plane * static_cast<std::size_t>(g.k_count);
  std::vector<unsigned char> bytes(4 * stored);
  for (int d = 0; d < 3; ++d) g.solute[d] = bytes.data() + static_cast<std::size_t>(d) * stored;
  g.accessible = bytes.data() + 3 * stored;
  ReferenceSphere ref;
  if (o.probe_radius > kNoRadius) ref = reference_sphere(reference_sphere_request(atoms, o));
  e.sas_points = surface_bytes(at, o, e.neighbours, ref, g);
  e.codes.resize(plane * static_cast<std::size_t>(planes));
  const bool smooth = o.surface == PbSurface::Smol, salt = pb_has_ions(o);
#pragma omp parallel for schedule(static)
  for (long k = first; k < first + planes; ++k)
    for (long j = 0; j < n[1]; ++j)
      for (long i = 0; i < n[0]; ++i)
        e.codes[static_cast<std::size_t>(i + n[0] * (j + n[1] * (k - first)))] = node_code(g, smooth, salt, i, j, k);
  // The charges, gathered per node from their bins (the whole grid's).
  ChargeBins cb;
  for (int d = 0; d < 3; ++d) {
    cb.n[d] = n[d];
    cb.origin[d] = grid.origin[d];
    cb.h[d] = grid.spacing[d];
  }
  cb.method = o.charges == PbChargeMethod::Spl0 ? 0 : (o.charges == PbChargeMethod::Spl2 ? 1 : 2);
  cb.bin_nodes = charge_bin_nodes(cb.method);
  for (int d = 0; d < 3; ++d) cb.bins[d] = (n[d] + cb.bin_nodes - 1) / cb.bin_nodes;
  const HostBins charge_bins =
      bin_atoms(atoms, cb.bin_count(), [&](double x, double y, double z) { return cb.key(x, y, z); });
  cb.start = charge_bins.start.data();
  cb.atoms = charge_bins.atoms.data();
  e.charge.resize(plane * static_cast<std::size_t>(planes));
#pragma omp parallel for schedule(dynamic, 1)
  for (long k = first; k < first + planes; ++k)
    for (long j = 0; j < n[1]; ++j)
      for (long i = 0; i < n[0]; ++i)
        e.charge[static_cast<std::size_t>(i + n[0] * (j + n[1] * (k - first)))] = gathered_charge(cb, at, i, j, k);
}

}  // namespace

PipelineEmulation emulate_slab(const Atoms& atoms, const GridSpec& grid, const PbOptions& o, long first_plane,
                               long planes) {
  PipelineEmulation e;
  slab_inputs(atoms, grid, o, first_plane, planes, e);
  return e;
}

PipelineEmulation emulate_pipeline(const Atoms& atoms, const GridSpec& grid, const PbOptions& o,
                                   const std::vector<double>& faces) {
  PipelineEmulation e;
  const long n[3] = {static_cast<long>(grid.dims[0]), static_cast<long>(grid.dims[1]), static_cast<long>(grid.dims[2])};
  const std::size_t points = grid.point_count();
  slab_inputs(atoms, grid, o, 0, n[2], e);
  // The system the device solves, read out of the codes.
  const std::vector<double> table = conductance_table(grid, o);
  const AssemblyArgs a = assembly_args(grid, o, false);
  const CodedOperator op = coded_operator(n, e.codes.data(), table.data(), a.mass);
  PbSystem& s = e.system;
  s.grid = grid;
  for (auto* v : {&s.wx, &s.wy, &s.wz, &s.c, &s.rhs, &s.fixed}) v->assign(points, 0.0);
#pragma omp parallel for schedule(static)
  for (long k = 0; k < n[2]; ++k)
    for (long j = 0; j < n[1]; ++j)
      for (long i = 0; i < n[0]; ++i) {
        const long idx = i + n[0] * (j + n[1] * k);
        s.wx[idx] = op.wx[idx];
        s.wy[idx] = op.wy[idx];
        s.wz[idx] = op.wz[idx];
        s.c[idx] = op.c[idx];
        if (on_faces(n, i, j, k))
          s.fixed[idx] = faces[static_cast<std::size_t>(face_index(n, i, j, k))];
        else
          s.rhs[idx] = direct_rhs(op, a.zmagic, e.charge[static_cast<std::size_t>(idx)], faces.data(), i, j, k);
      }
  return e;
}

}  // namespace espgrid::pb
