// The per-item arithmetic of the device PB pipeline (kernels/pb/pb_pipeline.cu, pb_pipeline_inputs.cu),
// written once for the device and for its CPU emulation (src/pb/pb_pipeline_emulation.cpp), which
// the tests compare with the host's own builders (src/pb_surface/pb_coefficients.cpp, pb_charges.cpp):
//
//   atom cells    atoms binned into cubes of side r_max + probe (the host's SAS cell list); each
//                 atom's SAS neighbours found there, closest first (pb_sas_math.h)
//   SAS carving   one item per (atom, reference-sphere point): an open point marks its probe sphere
//                 solvent on the three face arrays at once (no list of points is kept)
//   face codes    mol/smol's dielectric as bits: each face's 9-point neighbourhood (smol's harmonic
//                 mean, pb::smooth_face) as a 9-bit pattern, looked up in a table that smooth_face
//                 itself filled, so the conductances are the host's doubles at 4 bytes a node
//   charges       each node gathers the spread charge of the atoms around it from node bins, in
//                 ascending atom order: the host's sums in the host's order (pb::spread_charges)
//   faces         the boundary values kept for the six faces only (pb::boundary_nodes' order)
//
// Sums are written in the host's order; the .cu files are built without FMA contraction, so the
// device's bits are the host's.
//
// C++17 and header-only: nvcc compiles it into the device code.
#pragma once

#include <cmath>
#include <cstdint>

#include "src/pb_numerics/pb_geometry.h"
#include "src/pb_numerics/pb_sas_math.h"

namespace espgrid::pb {

// ---- mol/smol surface as bytes, carved by SAS points ---------------------------------------------

/// A grid's nodes and spacing, and the three face arrays of solute flags (1 solute, 0 solvent) and
/// the node array of ion accessibility flags (1 accessible); one byte each, x fastest.
/// The arrays may hold a window of z-planes only (a slab of a grid split over devices): the
/// planes k_first .. k_first + k_count − 1 of the whole grid, whose n, origin and indices every
/// function keeps using, so a window's bytes are the whole grid's, bit for bit.
struct SurfaceBytes {
  long n[3] = {0, 0, 0};  ///< the whole grid's nodes
  double origin[3] = {0, 0, 0};
  double h[3] = {0, 0, 0};
  long k_first = 0;  ///< the first z-plane stored
  long k_count = 0;  ///< z-planes stored (n[2] for the whole grid)
  unsigned char* solute[3] = {nullptr, nullptr, nullptr};
  unsigned char* accessible = nullptr;

  /// Node (i, j, k)'s place in the arrays (k within the window).
  ESPGRID_PB_HD long stored(long i, long j, long k) const { return i + n[0] * (j + n[1] * (k - k_first)); }
  /// Holds planes first .. first + planes − 1 and one more on each side where the grid has one
  /// (node_code reads its neighbours' bytes): a slab's window (n[2] must be set).
  ESPGRID_PB_HD void hold_planes_around(long first, long planes) {
    k_first = first > 0 ? first - 1 : 0;
    k_count = (first + planes + 1 < n[2] ? first + planes + 1 : n[2]) - k_first;
  }
  /// Narrows an inclusive z-plane range to the stored window.
  ESPGRID_PB_HD void clip_planes(long& lo, long& hi) const {
    lo = lo < k_first ? k_first : lo;
    hi = hi > k_first + k_count - 1 ? k_first + k_count - 1 : hi;
  }
};

/// Writes `value` at every node of `array` (shifted by `shift` spacings from the nodes) within
/// `radius` of (x, y, z): APBS's markSphere, the points of mark_sphere and mark_spheres_kernel.
/// Calls visit(i, j, k) for each; same-value writes, so the order of spheres changes nothing.
template <class Visit>
ESPGRID_PB_HD void for_each_node_in_sphere(const SurfaceBytes& g, const double shift[3], double x, double y, double z,
                                           double radius, Visit&& visit) {
  const double p[3] = {x - (g.origin[0] + shift[0] * g.h[0]), y - (g.origin[1] + shift[1] * g.h[1]),
                       z - (g.origin[2] + shift[2] * g.h[2])};
  long lo[3], hi[3];
  for (int d = 0; d < 3; ++d) sphere_index_range(p[d], radius, g.h[d], g.n[d], lo[d], hi[d]);
  g.clip_planes(lo[2], hi[2]);
  const double r2 = radius * radius;
  for (long k = lo[2]; k <= hi[2]; ++k)
    for (long j = lo[1]; j <= hi[1]; ++j)
      for (long i = lo[0]; i <= hi[0]; ++i)
        if (in_sphere(p, g.h, i, j, k, r2)) visit(i, j, k);
}

/// The face arrays' offsets from the nodes, spacings (x faces at i + ½, ...).
ESPGRID_PB_HD double face_shift(int face, int axis) { return face == axis ? 0.5 : 0.0; }

/// Whether an atom at height z (radius r) can change the window's bytes: its own spheres and the
/// probe spheres of its SAS points (centres r + probe away, radius probe) reach at most r + 2·probe,
/// and sphere_index_range and the face arrays' half-spacing shift add at most one spacing (two
/// allowed). A slab skips the SAS points of atoms that cannot, and their neighbour lists.
ESPGRID_PB_HD bool reaches_window(const SurfaceBytes& g, double z, double radius, double probe) {
  if (g.k_first == 0 && g.k_count == g.n[2]) return true;
  const double reach = radius + 2.0 * probe + 2.0 * g.h[2];
  const double lo = g.origin[2] + g.h[2] * static_cast<double>(g.k_first);
  const double hi = g.origin[2] + g.h[2] * static_cast<double>(g.k_first + g.k_count - 1);
  return z + reach >= lo && z - reach <= hi;
}

/// One point of atom a's SAS sphere (reference point (rx, ry, rz)): whether it is accessible
/// (pb::sas_point_open over the atom's neighbour list), and if so its probe sphere carved to
/// solvent on the three face arrays. Returns whether it was open.
ESPGRID_PB_HD bool carve_sas_point(const SurfaceBytes& g, const AtomArrays& at, const int* neighbours, long begin,
                                   long end, double probe, long a, double rx, double ry, double rz) {
  const double ra = at.radius[a];
  if (ra <= kNoRadius) return false;
  const double rad = ra + probe;
  const double px = rad * rx + at.x[a], py = rad * ry + at.y[a], pz = rad * rz + at.z[a];
  if (!sas_point_open(px, py, pz, at.x, at.y, at.z, at.radius, neighbours, begin, end, probe)) return false;
  for (int d = 0; d < 3; ++d) {
    const double shift[3] = {face_shift(d, 0), face_shift(d, 1), face_shift(d, 2)};
    unsigned char* array = g.solute[d];
    for_each_node_in_sphere(g, shift, px, py, pz, probe, [&](long i, long j, long k) { array[g.stored(i, j, k)] = 0; });
  }
  return true;
}

// ---- face codes: the dielectric's conductances at 4 bytes a node ---------------------------------

/// A node's code: bits 10d .. 10d+8 the face of axis d's pattern, bit 10d+9 set when that face
/// joins two nodes of which one is interior (a conductance of the system; else 0), bit 30 the mass
/// term (interior and ion-accessible). The conductance is table[d][pattern] when open.
constexpr int kPatternBits = 9;
constexpr unsigned kPatterns = 1u << kPatternBits;
constexpr unsigned kMassBit = 30;

/// The 9 flags smooth_face averages, for the face of axis d at idx, in smooth_face's order: own,
/// a, b, a[−v], b[−w], a[+u], b[+u], a[+u−v], b[+u−w] (own/a/b the face arrays of d and of the other
/// two axes as smooth_face's callers pass them). Only for faces with v > 0, w > 0, u < n_u − 1.
ESPGRID_PB_HD unsigned smol_pattern(const unsigned char* const* solute, int d, long idx, long sx, long sy, long sz) {
  const unsigned char* own = solute[d];
  const unsigned char* a = solute[d == 0 ? 1 : 0];
  const unsigned char* b = solute[d == 2 ? 1 : 2];
  const long su = d == 0 ? sx : (d == 1 ? sy : sz);
  const long sv = d == 0 ? sy : sx;
  const long sw = d == 2 ? sy : sz;
  return static_cast<unsigned>(own[idx]) | static_cast<unsigned>(a[idx]) << 1 | static_cast<unsigned>(b[idx]) << 2 |
         static_cast<unsigned>(a[idx - sv]) << 3 | static_cast<unsigned>(b[idx - sw]) << 4 |
         static_cast<unsigned>(a[idx + su]) << 5 | static_cast<unsigned>(b[idx + su]) << 6 |
         static_cast<unsigned>(a[idx + su - sv]) << 7 | static_cast<unsigned>(b[idx + su - sw]) << 8;
}

/// Node (i, j, k)'s code from the surface bytes: `smooth` (smol) or mol (the face's own flag).
/// Open faces as assemble_coefficients gives them a conductance; the mass bit where it gives c.
ESPGRID_PB_HD std::uint32_t node_code(const SurfaceBytes& g, bool smooth, bool salt, long i, long j, long k) {
  const long* n = g.n;
  const long sx = 1, sy = n[0], sz = n[0] * n[1];
  const long idx = g.stored(i, j, k);  // the window holds planes k − 1 .. k + 1 where they exist
  const bool ii = i > 0 && i<n[0] - 1, ij = j> 0 && j<n[1] - 1, ik = k> 0 && k < n[2] - 1;
  const bool open[3] = {i < n[0] - 1 && ij && ik, j < n[1] - 1 && ii && ik, k < n[2] - 1 && ii && ij};
  std::uint32_t code = 0;
  for (int d = 0; d < 3; ++d) {
    if (!open[d]) continue;
    const unsigned pattern = smooth ? smol_pattern(g.solute, d, idx, sx, sy, sz) : g.solute[d][idx];
    code |= (pattern | kPatterns) << (10 * d);
  }
  if (ii && ij && ik && salt && g.accessible[idx]) code |= 1u << kMassBit;
  return code;
}

/// The fine level's operator read from the codes: the conductances and mass term assemble_system
/// stores, computed where they are read (pb_multigrid_math.h's functions take it like MgOperator).
struct CodedFaces {
  const std::uint32_t* code = nullptr;
  const double* table = nullptr;  ///< kPatterns conductances of this axis, Å
  int shift = 0;
  ESPGRID_PB_HD double operator[](long idx) const {
    const unsigned c = code[idx] >> shift;
    return (c & kPatterns) ? table[c & (kPatterns - 1)] : 0.0;
  }
};
struct CodedMass {
  const std::uint32_t* code = nullptr;
  double mass = 0;  ///< ε_w κ² · cell volume, Å
  ESPGRID_PB_HD double operator[](long idx) const { return (code[idx] >> kMassBit) & 1u ? mass : 0.0; }
};
struct CodedOperator {
  long n[3] = {0, 0, 0};
  CodedFaces wx, wy, wz;
  CodedMass c;
  ESPGRID_PB_HD long sy() const { return n[0]; }
  ESPGRID_PB_HD long sz() const { return n[0] * n[1]; }
};

/// `table` (3 × kPatterns) → the coded operator of a grid of n nodes.
inline CodedOperator coded_operator(const long n[3], const std::uint32_t* code, const double* table, double mass) {
  CodedOperator op;
  for (int d = 0; d < 3; ++d) op.n[d] = n[d];
  op.wx = {code, table, 0};
  op.wy = {code, table + kPatterns, 10};
  op.wz = {code, table + 2 * kPatterns, 20};
  op.c = {code, mass};
  return op;
}

// ---- charges gathered per node --------------------------------------------------------------------

/// The nodes of each chgm (spl0 0, spl2 1, spl4 2) an atom at fractional index f spreads onto
/// along an axis are floor(f) − reach .. ceil(f) + reach; so node i gathers from atoms whose
/// floor(f) lies in [i − reach − 1, i + reach] (spl0: [i − 1, i]).
ESPGRID_PB_HD int charge_reach(int method) { return method == 0 ? 0 : (method == 1 ? 1 : 2); }
/// Nodes per bin along an axis: at least the width of that window, so a node's window meets at most
/// two bins per axis (eight in all).
ESPGRID_PB_HD long charge_bin_nodes(int method) { return method == 2 ? 6 : 4; }

/// APBS's "on the mesh" test of each charge method (pb::charge_on_grid's arithmetic).
ESPGRID_PB_HD bool charge_on_mesh(const double* origin, const double* h, const long* n, int method, double x, double y,
                                  double z) {
  const double p[3] = {x, y, z};
  const double reach = method == 0 ? 0.0 : (method == 1 ? 1.0 : 2.0);
  for (int a = 0; a < 3; ++a) {
    const double lo = origin[a] - reach * h[a];
    const double hi = origin[a] + static_cast<double>(n[a] - 1) * h[a] + reach * h[a];
    if (!(p[a] > lo && p[a] < hi)) return false;
  }
  return true;
}

/// APBS's `bspline4` (the `chgm spl4` weights; pb::bspline4 returns this).
ESPGRID_PB_HD double bspline4_weight(double x) {
  constexpr double one6 = 1.0 / 6.0, one8 = 1.0 / 8.0, one24 = 1.0 / 24.0;
  if (x > 0.0 && x <= 1.0) {
    const double m = x * x;
    return one24 * m * m;
  }
  if (x > 1.0 && x <= 2.0) {
    const double m = x - 1.0, m2 = m * m;
    return -one8 + one6 * x + m2 * (0.25 + one6 * m - one6 * m2);
  }
  if (x > 2.0 && x <= 3.0) {
    const double m = x - 2.0, m2 = m * m;
    return -13.0 / 24.0 + 0.5 * x + m2 * (-0.25 - 0.5 * m + 0.25 * m2);
  }
  if (x > 3.0 && x <= 4.0) {
    const double m = x - 3.0, m2 = m * m;
    return 47.0 / 24.0 - 0.5 * x + m2 * (-0.25 + 0.5 * m - one6 * m2);
  }
  if (x > 4.0 && x <= 5.0) {
    const double m = x - 4.0, m2 = m * m;
    return 17.0 / 24.0 - one6 * x + m2 * (0.25 - one6 * m + one24 * m2);
  }
  return 0.0;
}

/// The charge grid and the atoms binned by the node at floor(f) (clamped to the grid), in bins of
/// charge_bin_nodes(method) nodes per axis; atoms off the mesh in no bin.
struct ChargeBins {
  long n[3] = {0, 0, 0};
  double origin[3] = {0, 0, 0};
  double h[3] = {0, 0, 0};
  int method = 1;  ///< 0 spl0, 1 spl2, 2 spl4
  long bin_nodes = 4;
  long bins[3] = {1, 1, 1};
  const unsigned* start = nullptr;  ///< bins[0]·bins[1]·bins[2] + 1 entries
  const int* atoms = nullptr;       ///< ascending within a bin

  ESPGRID_PB_HD long bin_count() const { return bins[0] * bins[1] * bins[2]; }
  /// The atom's bin, or bin_count() (after every bin) when it spreads no charge here.
  ESPGRID_PB_HD long key(double x, double y, double z) const {
    if (!charge_on_mesh(origin, h, n, method, x, y, z)) return bin_count();
    const double p[3] = {x, y, z};
    long b[3];
    for (int a = 0; a < 3; ++a) {
      long home = static_cast<long>(std::floor((p[a] - origin[a]) / h[a]));
      home = home < 0 ? 0 : (home > n[a] - 1 ? n[a] - 1 : home);
      b[a] = home / bin_nodes;
    }
    return b[0] + bins[0] * (b[1] + bins[1] * b[2]);
  }
};

/// Atom a's spread charge at node (i, j, k), added to `sum` as pb::spread_charges adds it (spl0: each
/// of APBS's eight updates that lands on this node, in their order; spl2/spl4: the one product).
ESPGRID_PB_HD void add_atom_charge(const ChargeBins& g, const AtomArrays& at, long a, long i, long j, long k,
                                   double& sum) {
  const double* const position[3] = {at.x, at.y, at.z};
  const long node[3] = {i, j, k};
  const double q = at.charge[a];
  if (g.method == 0) {
    double f[3];
    for (int x = 0; x < 3; ++x) f[x] = (position[x][a] - g.origin[x]) / g.h[x];
    long lo[3], hi[3];
    double d[3];
    for (int x = 0; x < 3; ++x) {
      lo[x] = static_cast<long>(std::floor(f[x]));
      hi[x] = static_cast<long>(std::ceil(f[x]));
      d[x] = f[x] - static_cast<double>(lo[x]);
    }
    const auto here = [&](long x, long y, long z) { return x == i && y == j && z == k; };
    if (here(hi[0], hi[1], hi[2])) sum += d[0] * d[1] * d[2] * q;
    if (here(hi[0], lo[1], hi[2])) sum += d[0] * (1.0 - d[1]) * d[2] * q;
    if (here(hi[0], hi[1], lo[2])) sum += d[0] * d[1] * (1.0 - d[2]) * q;
    if (here(hi[0], lo[1], lo[2])) sum += d[0] * (1.0 - d[1]) * (1.0 - d[2]) * q;
    if (here(lo[0], hi[1], hi[2])) sum += (1.0 - d[0]) * d[1] * d[2] * q;
    if (here(lo[0], lo[1], hi[2])) sum += (1.0 - d[0]) * (1.0 - d[1]) * d[2] * q;
    if (here(lo[0], hi[1], lo[2])) sum += (1.0 - d[0]) * d[1] * (1.0 - d[2]) * q;
    if (here(lo[0], lo[1], lo[2])) sum += (1.0 - d[0]) * (1.0 - d[1]) * (1.0 - d[2]) * q;
    return;
  }
  // An axis at a time: most atoms of the bins around a node are out of its reach along the first
  // axis already, and their other two divisions are never made (the values are the same).
  const long reach = g.method == 1 ? 1 : 2;
  double w[3];
  for (int x = 0; x < 3; ++x) {
    const double f = (position[x][a] - g.origin[x]) / g.h[x];
    long lo = static_cast<long>(std::floor(f)) - reach, hi = static_cast<long>(std::ceil(f)) + reach;
    lo = lo < 0 ? 0 : lo;
    hi = hi > g.n[x] - 1 ? g.n[x] - 1 : hi;
    if (node[x] < lo || node[x] > hi) return;
    w[x] = g.method == 1 ? bspline2(1.5 + static_cast<double>(node[x]) - f)
                         : bspline4_weight(2.5 + static_cast<double>(node[x]) - f);
  }
  sum += g.method == 1 ? q * w[0] * w[1] * w[2] : w[0] * w[1] * w[2] * q;
}

/// The spread charge at node (i, j, k), e: the atoms of the (at most eight) bins around it merged in
/// ascending order, so the sum is the host's.
ESPGRID_PB_HD double gathered_charge(const ChargeBins& g, const AtomArrays& at, long i, long j, long k) {
  const long node[3] = {i, j, k};
  const long reach = charge_reach(g.method);
  long b0[3], b1[3];
  for (int x = 0; x < 3; ++x) {
    long lo = node[x] - reach - 1, hi = node[x] + reach;
    if (g.method == 0) lo = node[x] - 1, hi = node[x];
    lo = lo < 0 ? 0 : lo;
    hi = hi > g.n[x] - 1 ? g.n[x] - 1 : hi;
    b0[x] = lo / g.bin_nodes;
    b1[x] = hi / g.bin_nodes;
  }
  // Eight lists, one a bin (a list past the window, or an empty bin, holds no atom), each list's
  // next atom kept beside it: the loops unroll, so on the device the lists stay in registers and
  // the merge reads each atom's index once (a merge through a list picked at run time kept them
  // in local memory and read every list's head again at every step).
  constexpr int kNoAtom = 0x7fffffff;  // after every atom index
  unsigned cursor[8], end[8];
  int head[8];
  ESPGRID_PB_UNROLL
  for (int l = 0; l < 8; ++l) {
    const long bi = b0[0] + (l & 1), bj = b0[1] + ((l >> 1) & 1), bk = b0[2] + (l >> 2);
    cursor[l] = end[l] = 0;
    if (bi <= b1[0] && bj <= b1[1] && bk <= b1[2]) {
      const long b = bi + g.bins[0] * (bj + g.bins[1] * bk);
      cursor[l] = g.start[b];
      end[l] = g.start[b + 1];
    }
    head[l] = cursor[l] < end[l] ? g.atoms[cursor[l]] : kNoAtom;
  }
  double sum = 0.0;
  for (;;) {  // the atoms in ascending order, as pb::spread_charges adds them
    int atom = head[0];
    ESPGRID_PB_UNROLL
    for (int l = 1; l < 8; ++l) atom = head[l] < atom ? head[l] : atom;
    if (atom == kNoAtom) break;
    add_atom_charge(g, at, atom, i, j, k, sum);
    ESPGRID_PB_UNROLL
    for (int l = 0; l < 8; ++l)
      if (head[l] == atom) {  // an atom lies in one bin
        ++cursor[l];
        head[l] = cursor[l] < end[l] ? g.atoms[cursor[l]] : kNoAtom;
      }
  }
  return sum;
}

// ---- the boundary values on the six faces only ------------------------------------------------------

/// Nodes on the grid's six faces.
ESPGRID_PB_HD long face_node_count(const long* n) { return 2 * n[0] * n[1] + (n[2] - 2) * (2 * n[0] + 2 * (n[1] - 2)); }

/// The position of boundary node (i, j, k) in pb::boundary_nodes' order (z-planes, rows, x).
ESPGRID_PB_HD long face_index(const long* n, long i, long j, long k) {
  const long middle = 2 * n[0] + 2 * (n[1] - 2);  // a z-plane between the first and the last
  if (k == 0) return i + n[0] * j;
  const long before = n[0] * n[1] + (k - 1) * middle;
  if (k == n[2] - 1) return before + i + n[0] * j;
  if (j == 0) return before + i;
  if (j == n[1] - 1) return before + n[0] + 2 * (n[1] - 2) + i;
  return before + n[0] + 2 * (j - 1) + (i == 0 ? 0 : 1);
}

ESPGRID_PB_HD bool on_faces(const long* n, long i, long j, long k) {
  return i == 0 || j == 0 || k == 0 || i == n[0] - 1 || j == n[1] - 1 || k == n[2] - 1;
}

/// A slab's face values (its grid: the whole grid's planes first .. first + n[2] − 1; `n` the slab's
/// nodes) from the whole grid's (`whole`, n[2] = whole_planes): the whole grid's value where the
/// slab's face node is one of the whole grid's, 0 on a cut plane (the slab's own unknowns there
/// are its neighbour's; the CG couples them, so nothing is folded into the right-hand side).
inline void slab_face_values(const double* whole, long whole_planes, const long* n, long first, double* out) {
  const long whole_n[3] = {n[0], n[1], whole_planes};
  const auto value = [&](long i, long j, long k) {
    const long kk = k + first;
    return on_faces(whole_n, i, j, kk) ? whole[face_index(whole_n, i, j, kk)] : 0.0;
  };
  for (long k = 0; k < n[2]; ++k) {
    const bool full = k == 0 || k == n[2] - 1;
    for (long j = 0; j < n[1]; ++j) {
      if (full || j == 0 || j == n[1] - 1) {
        for (long i = 0; i < n[0]; ++i) out[face_index(n, i, j, k)] = value(i, j, k);
      } else {
        out[face_index(n, 0, j, k)] = value(0, j, k);
        out[face_index(n, n[0] - 1, j, k)] = value(n[0] - 1, j, k);
      }
    }
  }
}

/// The Direct formulation's right-hand side at interior node (i, j, k): zmagic·charge, then each
/// face's conductance times the boundary value across it where that neighbour is on the faces
/// (assemble_rhs's Direct branch, the same operations in the same order).
template <class Op>
ESPGRID_PB_HD double direct_rhs(const Op& a, double zmagic, double charge, const double* faces, long i, long j,
                                long k) {
  const long* n = a.n;
  const long sy = n[0], sz = n[0] * n[1];
  const long idx = i + sy * j + sz * k;
  const double w[6] = {a.wx[idx - 1], a.wx[idx], a.wy[idx - sy], a.wy[idx], a.wz[idx - sz], a.wz[idx]};
  const long nb[6][3] = {{i - 1, j, k}, {i + 1, j, k}, {i, j - 1, k}, {i, j + 1, k}, {i, j, k - 1}, {i, j, k + 1}};
  const bool edge[6] = {i == 1, i == n[0] - 2, j == 1, j == n[1] - 2, k == 1, k == n[2] - 2};
  double b = zmagic * charge;
  for (int f = 0; f < 6; ++f)
    if (edge[f]) b += w[f] * faces[face_index(n, nb[f][0], nb[f][1], nb[f][2])];
  return b;
}

}  // namespace espgrid::pb
