// The per-node arithmetic of espgrid's geometric multigrid for the 7-point variable-coefficient
// operator (src/pb/pb_system.h), written once: the CPU emulation (src/pb/pb_multigrid.cpp) loops
// over nodes calling these, and the CUDA kernels (kernels/pb/pb_multigrid.cu) run one thread per
// node calling the same functions, so the two compute the same numbers (up to the order of
// reductions and FMA contraction).
//
// A level is a grid of n[0] × n[1] × n[2] nodes, x fastest, its faces Dirichlet (held at 0: the
// solvers work on corrections). Its operator is given by face conductances wx, wy, wz (the face
// between node i and i+1 stored at i) and a mass term c. A coarser level keeps every other node
// of each coarsened axis, fine index F(I) = min(2I, n − 1): all intervals are 2 fine spacings
// except possibly the last, which is 1, so every fine node is either a coarse node or the
// midpoint of two. Prolongation P is linear interpolation (weights 1 or ½), restriction is Pᵀ,
// and the coarse operator is re-discretized from the fine conductances: along the face's axis
// the fine faces in series, across it the fine lines summed with P's weights; the mass term
// summed with P's weights. With the volume-scaled (finite-volume) operator that is consistent
// with Pᵀ A P for smooth coefficients, and it keeps a 7-point stencil on every level.
//
// The functions take any operator with MgOperator's members (wx, wy, wz, c indexable by node): the
// stored arrays, or the device pipeline's coded level 0 (pb_pipeline_math.h CodedOperator).
//
// C++17 and header-only: nvcc compiles it into the device code.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define ESPGRID_MG_HD __host__ __device__ __forceinline__
#else
#define ESPGRID_MG_HD inline
#endif

namespace espgrid::pb {

/// One level's operator as plain pointers (host or device memory) to values of type T: double, or
/// float for the device pipeline's coarse levels (its V-cycle stores in float; every function below
/// widens each value it reads to double and computes in double).
template <class T>
struct MgOperatorOf {
  long n[3] = {0, 0, 0};  ///< nodes per axis, faces included
  const T* wx = nullptr;
  const T* wy = nullptr;
  const T* wz = nullptr;
  const T* c = nullptr;
  ESPGRID_MG_HD long sy() const { return n[0]; }
  ESPGRID_MG_HD long sz() const { return n[0] * n[1]; }
};
using MgOperator = MgOperatorOf<double>;

/// How a coarse level's axis maps onto its fine level's: coarse node I sits on fine node
/// fine_of[I]; fine node f has coarse neighbour coarse_lo[f] (the last coarse node at or
/// before it) and is a midpoint (weights ½, ½ to coarse_lo and coarse_lo + 1) when mid[f] is 1,
/// a coarse node (weight 1) otherwise. An axis that is not coarsened maps I ↔ I.
struct MgAxisMap {
  const int* fine_of = nullptr;
  const int* coarse_lo = nullptr;
  const unsigned char* mid = nullptr;
};

ESPGRID_MG_HD bool interior(const long* n, long i, long j, long k) {
  return i > 0 && j > 0 && k > 0 && i < n[0] - 1 && j < n[1] - 1 && k < n[2] - 1;
}

/// A stored value read as double (the V-cycle's float storage computes in double; a no-op for double).
template <class T>
ESPGRID_MG_HD double wide(T v) {
  return static_cast<double>(v);
}

/// The diagonal of the operator at an interior node.
template <class Op>
ESPGRID_MG_HD double diagonal(const Op& a, long idx) {
  const long sy = a.sy(), sz = a.sz();
  return wide(a.wx[idx - 1]) + wide(a.wx[idx]) + wide(a.wy[idx - sy]) + wide(a.wy[idx]) + wide(a.wz[idx - sz]) +
         wide(a.wz[idx]) + wide(a.c[idx]);
}

/// Σ_faces w·x_nb at an interior node (the off-diagonal part, sign flipped).
template <class Op, class X>
ESPGRID_MG_HD double neighbour_sum(const Op& a, const X* x, long idx) {
  const long sy = a.sy(), sz = a.sz();
  return wide(a.wx[idx - 1]) * wide(x[idx - 1]) + wide(a.wx[idx]) * wide(x[idx + 1]) +
         wide(a.wy[idx - sy]) * wide(x[idx - sy]) + wide(a.wy[idx]) * wide(x[idx + sy]) +
         wide(a.wz[idx - sz]) * wide(x[idx - sz]) + wide(a.wz[idx]) * wide(x[idx + sz]);
}

/// (A x) at an interior node.
template <class Op, class X>
ESPGRID_MG_HD double apply_row(const Op& a, const X* x, long idx) {
  return diagonal(a, idx) * wide(x[idx]) - neighbour_sum(a, x, idx);
}

/// Gauss–Seidel's new value at an interior node: (b + Σ w x_nb) / diagonal.
template <class Op, class X, class B>
ESPGRID_MG_HD double gauss_seidel_value(const Op& a, const X* x, const B* b, long idx) {
  return (wide(b[idx]) + neighbour_sum(a, x, idx)) / diagonal(a, idx);
}

/// Linear-interpolation weight of fine node f from coarse node I along one axis (0, ½ or 1).
ESPGRID_MG_HD double hat_weight(const MgAxisMap& m, bool coarsened, long f, long I) {
  if (!coarsened) return f == I ? 1.0 : 0.0;
  const long lo = m.coarse_lo[f];
  if (!m.mid[f]) return lo == I ? 1.0 : 0.0;
  return (lo == I || lo + 1 == I) ? 0.5 : 0.0;
}

/// (Pᵀ r) at coarse node (I, J, K): the fine residuals around it with interpolation weights.
template <class Values>
ESPGRID_MG_HD double restrict_value(const Values& r, const long* nf, const MgAxisMap* m, const bool* coarsened, long I,
                                    long J, long K) {
  const long fc[3] = {coarsened[0] ? m[0].fine_of[I] : I, coarsened[1] ? m[1].fine_of[J] : J,
                      coarsened[2] ? m[2].fine_of[K] : K};
  const long c[3] = {I, J, K};
  // The weights along x once for the 9 rows (they were taken again in every row: 27 lookups of
  // the axis map instead of 3); the same products in the same order, so the same bits.
  double wx[3];
  for (long di = -1; di <= 1; ++di) {
    const long fi = fc[0] + di;
    wx[di + 1] = fi < 0 || fi >= nf[0] ? 0.0 : hat_weight(m[0], coarsened[0], fi, c[0]);
  }
  double sum = 0.0;
  for (long dk = -1; dk <= 1; ++dk) {
    const long fk = fc[2] + dk;
    if (fk < 0 || fk >= nf[2]) continue;
    const double wk = hat_weight(m[2], coarsened[2], fk, c[2]);
    if (wk == 0.0) continue;
    for (long dj = -1; dj <= 1; ++dj) {
      const long fj = fc[1] + dj;
      if (fj < 0 || fj >= nf[1]) continue;
      const double wj = hat_weight(m[1], coarsened[1], fj, c[1]);
      if (wj == 0.0) continue;
      for (long di = -1; di <= 1; ++di) {
        const double wi = wx[di + 1];
        if (wi == 0.0) continue;
        sum += wi * wj * wk * wide(r[fc[0] + di + nf[0] * (fj + nf[1] * fk)]);
      }
    }
  }
  return sum;
}

/// (P e) at fine node (i, j, k): the interpolated coarse correction (0 at the fine faces).
template <class E>
ESPGRID_MG_HD double prolong_value(const E* e, const long* nc, const MgAxisMap* m, const bool* coarsened, long i,
                                   long j, long k) {
  const long f[3] = {i, j, k};
  long lo[3], hi[3];
  double wlo[3], whi[3];
  for (int d = 0; d < 3; ++d) {
    if (!coarsened[d]) {
      lo[d] = hi[d] = f[d];
      wlo[d] = 1.0;
      whi[d] = 0.0;
    } else if (m[d].mid[f[d]]) {
      lo[d] = m[d].coarse_lo[f[d]];
      hi[d] = lo[d] + 1;
      wlo[d] = whi[d] = 0.5;
    } else {
      lo[d] = hi[d] = m[d].coarse_lo[f[d]];
      wlo[d] = 1.0;
      whi[d] = 0.0;
    }
  }
  double sum = 0.0;
  for (int ck = 0; ck < 2; ++ck) {
    const double wk = ck ? whi[2] : wlo[2];
    if (wk == 0.0) continue;
    const long K = ck ? hi[2] : lo[2];
    for (int cj = 0; cj < 2; ++cj) {
      const double wj = cj ? whi[1] : wlo[1];
      if (wj == 0.0) continue;
      const long J = cj ? hi[1] : lo[1];
      for (int ci = 0; ci < 2; ++ci) {
        const double wi = ci ? whi[0] : wlo[0];
        if (wi == 0.0) continue;
        const long I = ci ? hi[0] : lo[0];
        sum += wi * wj * wk * wide(e[I + nc[0] * (J + nc[1] * K)]);
      }
    }
  }
  return sum;
}

/// The coarse operator at coarse node (I, J, K): the conductance of its face along `axis` (0, 1,
/// 2) from the fine conductances `w` of that axis (series along the axis, P-weighted sum across).
/// Faces that would reach past the last node are 0.
template <class Values>
ESPGRID_MG_HD double coarse_face(const Values& w, int axis, const long* nf, const long* nc, const MgAxisMap* m,
                                 const bool* coarsened, long I, long J, long K) {
  const long c[3] = {I, J, K};
  if (c[axis] >= nc[axis] - 1) return 0.0;
  // Fine span of the face along its axis: [f0, f1) faces in series.
  long f0, f1;
  if (coarsened[axis]) {
    f0 = m[axis].fine_of[c[axis]];
    f1 = m[axis].fine_of[c[axis] + 1];
  } else {
    f0 = c[axis];
    f1 = f0 + 1;
  }
  const int a1 = axis == 0 ? 1 : 0;  // the two transverse axes
  const int a2 = axis == 2 ? 1 : 2;
  const long fc1 = coarsened[a1] ? m[a1].fine_of[c[a1]] : c[a1];
  const long fc2 = coarsened[a2] ? m[a2].fine_of[c[a2]] : c[a2];
  double sum = 0.0;
  for (long d2 = -1; d2 <= 1; ++d2) {
    const long t2 = fc2 + d2;
    if (t2 < 0 || t2 >= nf[a2]) continue;
    const double w2 = hat_weight(m[a2], coarsened[a2], t2, c[a2]);
    if (w2 == 0.0) continue;
    for (long d1 = -1; d1 <= 1; ++d1) {
      const long t1 = fc1 + d1;
      if (t1 < 0 || t1 >= nf[a1]) continue;
      const double w1 = hat_weight(m[a1], coarsened[a1], t1, c[a1]);
      if (w1 == 0.0) continue;
      double resistance = 0.0;  // Σ 1/w along the axis
      bool open = true;
      for (long f = f0; f < f1; ++f) {
        long idx[3];
        idx[axis] = f;
        idx[a1] = t1;
        idx[a2] = t2;
        const double wf = wide(w[idx[0] + nf[0] * (idx[1] + nf[1] * idx[2])]);
        if (!(wf > 0.0)) {
          open = false;
          break;
        }
        resistance += 1.0 / wf;
      }
      if (open) sum += w1 * w2 / resistance;
    }
  }
  return sum;
}

/// The coarse mass term at coarse node (I, J, K): Σ P(f ← I,J,K) c_f.
template <class Values>
ESPGRID_MG_HD double coarse_mass(const Values& c, const long* nf, const MgAxisMap* m, const bool* coarsened, long I,
                                 long J, long K) {
  return restrict_value(c, nf, m, coarsened, I, J, K);
}

/// A coarse node's whole operator: its three face conductances and (interior nodes) its mass term.
template <class Op>
ESPGRID_MG_HD void coarse_node(const Op& fine, const long* nf, const long* nc, const MgAxisMap* m,
                               const bool* coarsened, long I, long J, long K, double& wx, double& wy, double& wz,
                               double& c) {
  wx = coarse_face(fine.wx, 0, nf, nc, m, coarsened, I, J, K);
  wy = coarse_face(fine.wy, 1, nf, nc, m, coarsened, I, J, K);
  wz = coarse_face(fine.wz, 2, nf, nc, m, coarsened, I, J, K);
  c = interior(nc, I, J, K) ? coarse_mass(fine.c, nf, m, coarsened, I, J, K) : 0.0;
}

}  // namespace espgrid::pb
