// The device PB pipeline's atom cells and SAS neighbour lists, per item (part of
// src/pb_numerics/pb_pipeline_math.h's arithmetic, written once for the device and its CPU emulation):
// atoms binned into cubes of side r_max + probe, and each atom's SAS neighbours found there,
// closest first (pb::sas_neighbours' lists). The search is split into its cell box and a test of
// one candidate so that a warp can share one atom's cells (kernels/pb/pb_pipeline_inputs.cu).
//
// C++17 and header-only: nvcc compiles it into the device code.
#pragma once

#include <cmath>

#include "src/pb_numerics/pb_geometry.h"

namespace espgrid::pb {

// ---- atom cells and SAS neighbours --------------------------------------------------------------

/// Atoms binned into cubes of side `cell` from `lo` (pb_coefficients.cpp's CellList geometry).
/// `start` (cells + 1 entries) and `atoms` are the CSR lists, atoms ascending within a cell.
struct AtomCells {
  double lo[3] = {0, 0, 0};
  double cell = 1;
  long n[3] = {1, 1, 1};
  const unsigned* start = nullptr;
  const int* atoms = nullptr;

  ESPGRID_PB_HD long cell_of(double p, int axis) const {
    const long c = static_cast<long>(std::floor((p - lo[axis]) / cell));
    return c < 0 ? 0 : (c > n[axis] - 1 ? n[axis] - 1 : c);
  }
  ESPGRID_PB_HD long key(double x, double y, double z) const {
    return cell_of(x, 0) + n[0] * (cell_of(y, 1) + n[1] * cell_of(z, 2));
  }
};

/// Atom positions and radii, Å (host or device memory).
struct AtomArrays {
  long count = 0;
  const double* x = nullptr;
  const double* y = nullptr;
  const double* z = nullptr;
  const double* radius = nullptr;
  const double* charge = nullptr;  ///< e
};

/// The cells around atom a that can hold its SAS neighbours (cells i0..i1 × j0..j1 × k0..k1), and
/// the test of one candidate there: pb::sas_neighbours' criterion, for a search split over threads.
struct SasSearch {
  long i0 = 0, i1 = -1, j0 = 0, j1 = -1, k0 = 0, k1 = -1;  ///< empty: an atom without a radius
  double ax = 0, ay = 0, az = 0, rad = 0;                  ///< atom a's centre and r_a + probe, Å

  ESPGRID_PB_HD long cells() const { return (i1 - i0 + 1) * (j1 - j0 + 1) * (k1 - k0 + 1); }
  /// The cell index of the search's cell t (0 ≤ t < cells(), x fastest: the serial loop's order).
  ESPGRID_PB_HD long cell(const AtomCells& c, long t) const {
    const long wi = i1 - i0 + 1, wj = j1 - j0 + 1;
    const long i = i0 + t % wi, j = j0 + (t / wi) % wj, k = k0 + t / (wi * wj);
    return i + c.n[0] * (j + c.n[1] * k);
  }
  /// Whether atom b (≠ a) is within r_a + r_b + 2·probe of a, strictly.
  ESPGRID_PB_HD bool blocks(const AtomArrays& at, double probe, int b) const {
    const double reach = rad + at.radius[b] + probe;
    const double dx = at.x[b] - ax, dy = at.y[b] - ay, dz = at.z[b] - az;
    return dx * dx + dy * dy + dz * dz < reach * reach;
  }
};

ESPGRID_PB_HD SasSearch sas_search(const AtomCells& cells, const AtomArrays& at, double probe, long a) {
  SasSearch s;
  const double ra = at.radius[a];
  if (ra <= kNoRadius) return s;  // APBS: atoms without a radius have no SAS points
  s.rad = ra + probe;
  s.ax = at.x[a];
  s.ay = at.y[a];
  s.az = at.z[a];
  const long span = static_cast<long>(std::ceil((s.rad + cells.cell) / cells.cell));
  const long cx = cells.cell_of(s.ax, 0), cy = cells.cell_of(s.ay, 1), cz = cells.cell_of(s.az, 2);
  s.k0 = cz - span < 0 ? 0 : cz - span, s.k1 = cz + span > cells.n[2] - 1 ? cells.n[2] - 1 : cz + span;
  s.j0 = cy - span < 0 ? 0 : cy - span, s.j1 = cy + span > cells.n[1] - 1 ? cells.n[1] - 1 : cy + span;
  s.i0 = cx - span < 0 ? 0 : cx - span, s.i1 = cx + span > cells.n[0] - 1 ? cells.n[0] - 1 : cx + span;
  return s;
}

/// Calls f(b) for every atom b that can block a point of atom a's SAS sphere (b ≠ a, within
/// r_a + r_b + 2·probe, strictly), cell by cell: the criterion and the search of pb::sas_neighbours.
template <class F>
ESPGRID_PB_HD void for_each_sas_neighbour(const AtomCells& cells, const AtomArrays& at, double probe, long a, F&& f) {
  const SasSearch s = sas_search(cells, at, probe, a);
  for (long t = 0; t < s.cells(); ++t) {
    const long c = s.cell(cells, t);
    for (unsigned m = cells.start[c]; m < cells.start[c + 1]; ++m) {
      const int b = cells.atoms[m];
      if (b != a && s.blocks(at, probe, b)) f(b);
    }
  }
}

/// Whether neighbour b comes before neighbour c in an atom's list: closer first (squared distances
/// d_b, d_c from the atom, Å²), ties by index (pb::sas_neighbours' order; a total order).
ESPGRID_PB_HD bool closer_first(double d_b, int b, double d_c, int c) { return d_b < d_c || (d_b == d_c && b < c); }

/// Sorts one atom's neighbour list closest first, ties by index (pb::sas_neighbours' order):
/// insertion sort, for the short lists of one thread.
ESPGRID_PB_HD void sort_closest_first(int* list, long count, const AtomArrays& at, long a) {
  const double ax = at.x[a], ay = at.y[a], az = at.z[a];
  const auto dist2 = [&](int b) {
    const double dx = at.x[b] - ax, dy = at.y[b] - ay, dz = at.z[b] - az;
    return dx * dx + dy * dy + dz * dz;
  };
  for (long s = 1; s < count; ++s) {
    const int b = list[s];
    const double d = dist2(b);
    long t = s;
    while (t > 0) {
      const int c = list[t - 1];
      const double dc = dist2(c);
      if (closer_first(dc, c, d, b)) break;
      list[t] = c;
      --t;
    }
    list[t] = b;
  }
}

}  // namespace espgrid::pb
