// The device pipeline's multigrid-preconditioned CG (kernels/pb/pb_pipeline.cu): the algorithm of
// kernels/pb/pb_multigrid.cu's solver, node for node and in the same order, with less memory:
//   - level 0's operator is any type with MgOperator's members (the pipeline's CodedOperator: 4
//     bytes a node instead of 32);
//   - the V-cycle stores its values in `Real`, float by default: level 0's cycle vectors live in CG's
//     q and z (free between A p and the next one), the coarse levels' operators and vectors are float,
//     each node's arithmetic is double between load and store (pb::wide); CG (its vectors, the dot
//     products) stays double. Emulated on the CPU first (benchmarks/results/pb-float-cycle-cpu-
//     2026-11-29): the same iterations on three proteins, maps 1e-10 apart. With Real = double the
//     cycle runs on CG's z (x), r (b) and q (its residual): pb_multigrid.cu's bits.
// Five vectors of level 0 (u, r, z, p, q: 40 bytes a node) and the coarse levels (~4 bytes a fine node;
// ~8 in double) are all it holds, each counted by a ledger (its peak in the summary); the outputs reuse them.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/cuda_runtime_support.h"
#include "kernels/pb/pb_block_sum.cuh"
#include "kernels/pb/pb_coarsest.cuh"
#include "kernels/pb/pb_device_ledger.cuh"
#include "src/pb/pb_cuda_driver.h"
#include "src/pb_numerics/pb_multigrid_math.h"

namespace espgrid::cuda::lean {

constexpr int kBlock = 256;
constexpr int kDotBlocks = 1024;  ///< partial sums per dot product, as pb_multigrid.cu's

inline unsigned blocks_for(long size) { return static_cast<unsigned>((size + kBlock - 1) / kBlock); }

struct Index {
  long i, j, k;
};

__device__ __forceinline__ bool node_of(long idx, const long* n, Index& out) {
  const long plane = n[0] * n[1];
  if (idx >= plane * n[2]) return false;
  out.k = idx / plane;
  const long rest = idx - out.k * plane;
  out.j = rest / n[0];
  out.i = rest - out.j * n[0];
  return true;
}

struct Transfer {
  long nf[3], nc[3];
  pb::MgAxisMap maps[3];
  bool coarsened[3];
};

/// One colour's Gauss–Seidel updates; a node's colour is the parity of its whole-level indices
/// (`k_offset`: the whole level's plane of this array's plane 0), so slabs sweep as one grid. A
/// thread a node of the colour (sweep_blocks): x over every other node of a row, y over rows, z over
/// planes. A thread a node of the level with half of them idle left every warp half its lanes and
/// two 64-bit divisions each (the fine sweeps at 39% of the H200's DRAM bandwidth, 2026-11-28).
/// Same-colour nodes do not read each other, so the order of the updates changes no bit.
constexpr unsigned kSweepX = 32, kSweepY = 8;
template <class Op, class T>
__global__ void half_sweep_kernel(Op a, T* x, const T* b, int color, long k_offset) {
  const long k = blockIdx.z;
  const long j = static_cast<long>(blockIdx.y) * kSweepY + threadIdx.y;
  // (i + j + k + k_offset) & 1 == color: i's parity is that of color + j + k + k_offset.
  const long i = 2 * (static_cast<long>(blockIdx.x) * kSweepX + threadIdx.x) + ((color + j + k + k_offset) & 1);
  if (j >= a.n[1] || i >= a.n[0] || !pb::interior(a.n, i, j, k)) return;
  const long idx = i + a.n[0] * (j + a.n[1] * k);
  x[idx] = static_cast<T>(pb::gauss_seidel_value(a, x, b, idx));
}
/// half_sweep_kernel's grid for a level of n nodes (blocks of kSweepX × kSweepY threads).
inline dim3 sweep_blocks(const long* n) {
  if (n[2] > 65535 || n[1] > 65535L * kSweepY)
    throw Error("internal error: a PB level of " + std::to_string(n[1]) + " x " + std::to_string(n[2]) +
                " rows is beyond a sweep's launch grid");
  return dim3(static_cast<unsigned>(((n[0] + 1) / 2 + kSweepX - 1) / kSweepX),
              static_cast<unsigned>((n[1] + kSweepY - 1) / kSweepY), static_cast<unsigned>(n[2]));
}

/// A node of a level from the block grid of node_blocks (x along rows, y over rows, z over planes):
/// no division, where a thread a flat index took two.
__device__ __forceinline__ bool node_from_grid(const long* n, Index& p) {
  p.k = blockIdx.z;
  p.j = static_cast<long>(blockIdx.y) * kSweepY + threadIdx.y;
  p.i = static_cast<long>(blockIdx.x) * kSweepX + threadIdx.x;
  return p.i < n[0] && p.j < n[1];
}
/// The block grid of a thread a node of a level of n nodes.
inline dim3 node_blocks(const long* n) {
  const dim3 half = sweep_blocks(n);  // its limits
  return dim3(static_cast<unsigned>((n[0] + kSweepX - 1) / kSweepX), half.y, half.z);
}

template <class Op, class T>
__global__ void residual_kernel(Op a, const T* x, const T* b, T* r) {
  Index p;
  if (!node_from_grid(a.n, p)) return;
  const long idx = p.i + a.n[0] * (p.j + a.n[1] * p.k);
  r[idx] = static_cast<T>(pb::interior(a.n, p.i, p.j, p.k) ? pb::wide(b[idx]) - pb::apply_row(a, x, idx) : 0.0);
}

template <class Op>
__global__ void apply_kernel(Op a, const double* x, double* y) {
  Index p;
  if (!node_from_grid(a.n, p)) return;
  const long idx = p.i + a.n[0] * (p.j + a.n[1] * p.k);
  y[idx] = pb::interior(a.n, p.i, p.j, p.k) ? pb::apply_row(a, x, idx) : 0.0;
}

/// The coarse operator at the coarse planes k_begin .. k_end − 1 (a slab's own; all of a whole level).
template <class Op, class T>
__global__ void coarse_operator_kernel(Transfer t, Op fine, long k_begin, long k_end, T* wx, T* wy, T* wz, T* c) {
  const long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x + k_begin * t.nc[0] * t.nc[1];
  Index p;
  if (!node_of(idx, t.nc, p) || p.k >= k_end) return;
  double w[4];
  pb::coarse_node(fine, t.nf, t.nc, t.maps, t.coarsened, p.i, p.j, p.k, w[0], w[1], w[2], w[3]);
  wx[idx] = static_cast<T>(w[0]);
  wy[idx] = static_cast<T>(w[1]);
  wz[idx] = static_cast<T>(w[2]);
  c[idx] = static_cast<T>(w[3]);
}

/// The restricted residual at the coarse planes from k_begin (blocks: node_blocks of those planes).
template <class T>
__global__ void restrict_kernel(Transfer t, const T* r_fine, long k_begin, T* b_coarse) {
  Index p;
  if (!node_from_grid(t.nc, p)) return;
  p.k += k_begin;
  const long idx = p.i + t.nc[0] * (p.j + t.nc[1] * p.k);
  b_coarse[idx] = static_cast<T>(
      pb::interior(t.nc, p.i, p.j, p.k) ? pb::restrict_value(r_fine, t.nf, t.maps, t.coarsened, p.i, p.j, p.k) : 0.0);
}

template <class T>
__global__ void prolong_add_kernel(Transfer t, const T* e_coarse, T* x_fine) {
  Index p;
  if (!node_from_grid(t.nf, p)) return;
  if (!pb::interior(t.nf, p.i, p.j, p.k)) return;
  const long idx = p.i + t.nf[0] * (p.j + t.nf[1] * p.k);
  x_fine[idx] =
      static_cast<T>(pb::wide(x_fine[idx]) + pb::prolong_value(e_coarse, t.nc, t.maps, t.coarsened, p.i, p.j, p.k));
}

__global__ void update_solution_kernel(long size, double alpha, const double* p, const double* q, double* u,
                                       double* r) {
  const long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= size) return;
  u[idx] += alpha * p[idx];
  r[idx] -= alpha * q[idx];
}

/// The cycle's storage from CG's double and back (`to` = `from` rounded or widened), every node.
template <class From, class To>
__global__ void convert_kernel(long size, const From* from, To* to) {
  const long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= size) return;
  to[idx] = static_cast<To>(from[idx]);
}

__global__ void update_direction_kernel(long size, double beta, const double* z, double* p) {
  const long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= size) return;
  p[idx] = z[idx] + beta * p[idx];
}

/// Partial sums of a·b (b null: of a), block b over indices b·kBlock + t stepping by the grid.
__global__ void dot_partial_kernel(long size, const double* a, const double* b, double* partial) {
  double s = 0.0;
  for (long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x; idx < size;
       idx += static_cast<long>(gridDim.x) * blockDim.x)
    s += b ? a[idx] * b[idx] : a[idx];
  s = pb_sums::block_sum<kBlock>(s);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

/// One coarse level: its operator and its V-cycle vectors, stored as Real.
template <class Real>
struct CoarseLevel {
  long n[3] = {0, 0, 0};
  long size = 0;
  Tracked<Real> wx, wy, wz, c, x, b, r;
  Tracked<int> fine_of[3], coarse_lo[3];
  Tracked<unsigned char> mid[3];
  bool coarsened[3] = {false, false, false};
  PbMgSpan span = PbMgSpan::Whole;
  long plane_offset = 0, own_begin = 0, own_end = 0;
  pb::MgOperatorOf<Real> op() const {
    pb::MgOperatorOf<Real> a;
    for (int d = 0; d < 3; ++d) a.n[d] = n[d];
    a.wx = wx.get();
    a.wy = wy.get();
    a.wz = wz.get();
    a.c = c.get();
    return a;
  }
};

/// One level's arrays as the V-cycle sees them: level 0's live in the CG's vectors (Solver::level).
template <class Real>
struct LevelArrays {
  long n[3] = {0, 0, 0};
  long size = 0;
  Real *x = nullptr, *b = nullptr, *r = nullptr;
  PbMgSpan span = PbMgSpan::Whole;
  long plane_offset = 0, own_begin = 0, own_end = 0;
};

/// CG preconditioned by one V-cycle stored in Real, level 0's operator of type Top; one slab's share of
/// it when the grid is split over devices (kernels/pb/pb_slab_solver.cuh runs the slabs' cycle and CG
/// together; one slab is this class's arithmetic alone). The caller owns the stream.
template <class Top, class Real>
class Solver {
 public:
  using Levels = LevelArrays<Real>;
  static constexpr bool kSeparateCycle = !std::is_same_v<Real, double>;  ///< level 0's cycle not on r and z
  static_assert(!kSeparateCycle || 2 * sizeof(Real) <= sizeof(double), "x and b share q's bytes");
  Solver(Ledger& ledger, const PbMgRun& run, cudaStream_t stream) : ledger_(ledger), run_(run), stream_(stream) {}

  /// Level 0's vectors (zero) and the coarser levels' shapes and vectors; their operators come from
  /// build_operators (kernels/pb/pb_slab_solver.cuh; `build` does both for one slab).
  void shape(const Top& top, const PbMgLevel* shape, int count) {
    top_ = top;
    size_ = top.n[0] * top.n[1] * top.n[2];
    top_span_ = shape[0].span;
    top_offset_ = shape[0].plane_offset;
    const std::size_t size = static_cast<std::size_t>(size_);
    u_ = Tracked<double>(ledger_, size, "PB solution");
    r_ = Tracked<double>(ledger_, size, "PB residual");
    z_ = Tracked<double>(ledger_, size, "PB preconditioned residual");
    p_ = Tracked<double>(ledger_, size, "PB search direction");
    q_ =
        Tracked<double>(ledger_, size, kSeparateCycle ? "PB A p (and the cycle's x, b)" : "PB A p (and the cycle's r)");
    partial_ = Tracked<double>(ledger_, kDotBlocks, "PB dot partial sums");
    scalar_ = Tracked<double>(ledger_, 1, "PB dot");
    for (double* v : {u_.get(), r_.get(), z_.get(), p_.get(), q_.get()})
      ESPGRID_CUDA_CHECK(cudaMemsetAsync(v, 0, size * sizeof(double), stream_));
    coarse_.clear();
    coarse_.resize(static_cast<std::size_t>(std::max(0, count - 1)));
    for (int l = 1; l < count; ++l) shape_level(coarse_[static_cast<std::size_t>(l - 1)], shape[l], shape[l - 1], l);
  }

  /// The coarse operator of level l (≥ 1) at its own planes, from the level above.
  void coarse_operator(std::size_t l) {
    CoarseLevel<Real>& d = coarse_[l - 1];
    const Transfer t = transfer(l);
    const long planes = d.own_end - d.own_begin, count = planes * d.n[0] * d.n[1];
    if (count <= 0) return;
    if (l == 1)
      coarse_operator_kernel<<<blocks_for(count), kBlock, 0, stream_>>>(t, top_, d.own_begin, d.own_end, d.wx.get(),
                                                                        d.wy.get(), d.wz.get(), d.c.get());
    else
      coarse_operator_kernel<<<blocks_for(count), kBlock, 0, stream_>>>(t, coarse_[l - 2].op(), d.own_begin, d.own_end,
                                                                        d.wx.get(), d.wy.get(), d.wz.get(), d.c.get());
    ESPGRID_CUDA_CHECK_LAUNCH();
  }

  std::size_t levels() const { return coarse_.size() + 1; }
  /// Level l's V-cycle arrays. Level 0's are in CG's vectors: in double x on z, b on r, the residual on
  /// q; in float x and b in q's bytes, the residual in z's (b and z from cycle_in and cycle_out).
  Levels level(std::size_t l) {
    Levels a;
    if (l == 0) {
      for (int d = 0; d < 3; ++d) a.n[d] = top_.n[d];
      a.size = size_;
      if constexpr (kSeparateCycle) {
        a.x = reinterpret_cast<Real*>(q_.get());
        a.b = a.x + size_;
        a.r = reinterpret_cast<Real*>(z_.get());
      } else {
        a.x = z_.get();
        a.b = r_.get();
        a.r = q_.get();
      }
      a.span = top_span_;
      a.plane_offset = top_offset_;
      a.own_end = top_.n[2];
      return a;
    }
    CoarseLevel<Real>& c = coarse_[l - 1];
    for (int d = 0; d < 3; ++d) a.n[d] = c.n[d];
    a.size = c.size;
    a.x = c.x.get();
    a.b = c.b.get();
    a.r = c.r.get();
    a.span = c.span;
    a.plane_offset = c.plane_offset;
    a.own_begin = c.own_begin;
    a.own_end = c.own_end;
    return a;
  }
  /// Level l's (≥ 1) operator arrays: wx, wy, wz, c.
  std::array<Real*, 4> operator_arrays(std::size_t l) {
    CoarseLevel<Real>& c = coarse_[l - 1];
    return {c.wx.get(), c.wy.get(), c.wz.get(), c.c.get()};
  }

  /// The cycle's input b = r rounded and its output z = x widened, on level 0 (in double the same arrays).
  void cycle_in() {
    if constexpr (kSeparateCycle) convert(r_.get(), level(0).b);
  }
  void cycle_out() {
    if constexpr (kSeparateCycle) convert(static_cast<const Real*>(level(0).x), z_.get());
  }

  // The V-cycle's steps on level l of this slab.
  void zero(std::size_t l) {
    const Levels a = level(l);
    ESPGRID_CUDA_CHECK(cudaMemsetAsync(a.x, 0, static_cast<std::size_t>(a.size) * sizeof(Real), stream_));
  }
  void half_sweep(std::size_t l, int color) {
    const Levels a = level(l);
    const dim3 threads(kSweepX, kSweepY);
    if (l == 0)
      half_sweep_kernel<<<sweep_blocks(a.n), threads, 0, stream_>>>(top_, a.x, a.b, color, a.plane_offset);
    else
      half_sweep_kernel<<<sweep_blocks(a.n), threads, 0, stream_>>>(coarse_[l - 1].op(), a.x, a.b, color,
                                                                    a.plane_offset);
    ESPGRID_CUDA_CHECK_LAUNCH();
  }
  /// The coarsest level's `sweeps` symmetric sweeps in one launch (kernels/pb/pb_coarsest.cuh), when
  /// level l is small enough; false (nothing queued) otherwise.
  bool coarsest_sweeps(std::size_t l, int sweeps) {
    const Levels a = level(l);
    return l == 0 ? coarsest::solve_in_one_launch(top_, a.x, a.b, sweeps, a.plane_offset, stream_)
                  : coarsest::solve_in_one_launch(coarse_[l - 1].op(), a.x, a.b, sweeps, a.plane_offset, stream_);
  }
  void level_residual(std::size_t l) {
    const Levels a = level(l);
    const dim3 threads(kSweepX, kSweepY);
    if (l == 0)
      residual_kernel<<<node_blocks(a.n), threads, 0, stream_>>>(top_, a.x, a.b, a.r);
    else
      residual_kernel<<<node_blocks(a.n), threads, 0, stream_>>>(coarse_[l - 1].op(), a.x, a.b, a.r);
    ESPGRID_CUDA_CHECK_LAUNCH();
  }
  /// Level l's residual restricted to level l + 1's own planes.
  void restrict_down(std::size_t l) {
    const Levels f = level(l), c = level(l + 1);
    const long count = (c.own_end - c.own_begin) * c.n[0] * c.n[1];
    if (count <= 0) return;
    const long planes[3] = {c.n[0], c.n[1], c.own_end - c.own_begin};  // the own planes only
    restrict_kernel<<<node_blocks(planes), dim3(kSweepX, kSweepY), 0, stream_>>>(transfer(l + 1), f.r, c.own_begin,
                                                                                 c.b);
    ESPGRID_CUDA_CHECK_LAUNCH();
  }
  /// Level l + 1's correction added to level l's x.
  void prolong_up(std::size_t l) {
    const Levels f = level(l), c = level(l + 1);
    prolong_add_kernel<<<node_blocks(f.n), dim3(kSweepX, kSweepY), 0, stream_>>>(transfer(l + 1), c.x, f.x);
    ESPGRID_CUDA_CHECK_LAUNCH();
  }

  long size() const { return size_; }
  const Top& top() const { return top_; }
  double* u() { return u_.get(); }
  double* r() { return r_.get(); }
  double* z() { return z_.get(); }
  double* p() { return p_.get(); }
  double* q() { return q_.get(); }

  /// Makes this solver's device the calling thread's current one (a grid split over devices
  /// drives every slab's solver from one thread).
  void select() const { ESPGRID_CUDA_CHECK(cudaSetDevice(run_.device)); }
  cudaStream_t stream() const { return stream_; }
  const PbMgRun& run() const { return run_; }

  /// a·b (b null: Σ a) over level 0's nodes, in a fixed order: the kernels queued, then dot_fetch
  /// waits for them and returns the value (so that several devices' products run at once).
  void dot_launch(const double* a, const double* b) {
    dot_partial_kernel<<<kDotBlocks, kBlock, 0, stream_>>>(size_, a, b, partial_.get());
    ESPGRID_CUDA_CHECK_LAUNCH();
    pb_sums::partials_sum_kernel<kBlock><<<1, kBlock, 0, stream_>>>(partial_.get(), kDotBlocks, scalar_.get());
    ESPGRID_CUDA_CHECK_LAUNCH();
  }
  double dot_fetch() {
    double out = 0.0;
    ESPGRID_CUDA_CHECK(cudaMemcpyAsync(&out, scalar_.get(), sizeof(double), cudaMemcpyDeviceToHost, stream_));
    ESPGRID_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return out;
  }

  /// r = b − A x on level 0 (every node; 0 on the faces).
  void residual(const double* x, const double* b, double* r) {
    residual_kernel<<<node_blocks(top_.n), dim3(kSweepX, kSweepY), 0, stream_>>>(top_, x, b, r);
    ESPGRID_CUDA_CHECK_LAUNCH();
  }

  // The CG's steps on this slab: p = M⁻¹ r (the cycle run by the caller); q = A p;
  // u += α p, r −= α q; p = z + β p.
  void first_direction() {
    ESPGRID_CUDA_CHECK(cudaMemcpyAsync(p_.get(), z_.get(), static_cast<std::size_t>(size_) * sizeof(double),
                                       cudaMemcpyDeviceToDevice, stream_));
  }
  void apply_direction() {
    apply_kernel<<<node_blocks(top_.n), dim3(kSweepX, kSweepY), 0, stream_>>>(top_, p_.get(), q_.get());
    ESPGRID_CUDA_CHECK_LAUNCH();
  }
  void update_solution(double alpha) {
    update_solution_kernel<<<blocks_for(size_), kBlock, 0, stream_>>>(size_, alpha, p_.get(), q_.get(), u_.get(),
                                                                      r_.get());
    ESPGRID_CUDA_CHECK_LAUNCH();
  }
  void update_direction(double beta) {
    update_direction_kernel<<<blocks_for(size_), kBlock, 0, stream_>>>(size_, beta, z_.get(), p_.get());
    ESPGRID_CUDA_CHECK_LAUNCH();
  }

 private:
  template <class From, class To>
  void convert(const From* from, To* to) {
    convert_kernel<<<blocks_for(size_), kBlock, 0, stream_>>>(size_, from, to);
    ESPGRID_CUDA_CHECK_LAUNCH();
  }

  template <class T>
  Tracked<T> upload(const T* host, std::size_t count, const std::string& name) {
    Tracked<T> d(ledger_, count, name);
    if (count) ESPGRID_CUDA_CHECK(cudaMemcpyAsync(d.get(), host, count * sizeof(T), cudaMemcpyHostToDevice, stream_));
    return d;
  }

  void shape_level(CoarseLevel<Real>& d, const PbMgLevel& h, const PbMgLevel& above, int l) {
    for (int a = 0; a < 3; ++a) d.n[a] = h.n[a];
    d.size = h.n[0] * h.n[1] * h.n[2];
    d.span = h.span;
    d.plane_offset = h.plane_offset;
    d.own_begin = h.own_begin;
    d.own_end = h.own_end < 0 ? h.n[2] : h.own_end;
    const std::size_t size = static_cast<std::size_t>(d.size);
    const std::string level = "PB level " + std::to_string(l) + " ";
    Tracked<Real>* buffers[7] = {&d.wx, &d.wy, &d.wz, &d.c, &d.x, &d.b, &d.r};
    const char* names[7] = {"wx", "wy", "wz", "c", "x", "b", "r"};
    for (int v = 0; v < 7; ++v) *buffers[v] = Tracked<Real>(ledger_, size, level + names[v]);
    // Zeros where no kernel writes: r's faces; on a slab's level also b's and the operator's planes
    // another slab computes, until they are gathered or exchanged (on a whole level the slab's
    // kernels write every node of them).
    ESPGRID_CUDA_CHECK(cudaMemsetAsync(d.r.get(), 0, size * sizeof(Real), stream_));
    if (d.span != PbMgSpan::Whole)
      for (Tracked<Real>* v : {&d.b, &d.wx, &d.wy, &d.wz, &d.c})
        ESPGRID_CUDA_CHECK(cudaMemsetAsync(v->get(), 0, size * sizeof(Real), stream_));
    for (int a = 0; a < 3; ++a) {
      d.coarsened[a] = h.coarsened[a];
      if (!h.coarsened[a]) continue;
      d.fine_of[a] = upload(h.fine_of[a], static_cast<std::size_t>(h.n[a]), level + "fine_of");
      d.coarse_lo[a] = upload(h.coarse_lo[a], static_cast<std::size_t>(above.n[a]), level + "coarse_lo");
      d.mid[a] = upload(h.mid[a], static_cast<std::size_t>(above.n[a]), level + "mid");
    }
  }

  /// The transfer between level `coarse` and the level above it.
  Transfer transfer(std::size_t coarse) const {
    const CoarseLevel<Real>& c = coarse_[coarse - 1];
    Transfer t;
    for (int a = 0; a < 3; ++a) {
      t.nf[a] = coarse == 1 ? top_.n[a] : coarse_[coarse - 2].n[a];
      t.nc[a] = c.n[a];
      t.coarsened[a] = c.coarsened[a];
      t.maps[a] = {c.fine_of[a].get(), c.coarse_lo[a].get(), c.mid[a].get()};
    }
    return t;
  }

  Ledger& ledger_;
  PbMgRun run_;
  cudaStream_t stream_;
  Top top_{};
  long size_ = 0;
  PbMgSpan top_span_ = PbMgSpan::Whole;
  long top_offset_ = 0;
  std::vector<CoarseLevel<Real>> coarse_;
  Tracked<double> u_, r_, z_, p_, q_, partial_, scalar_;
};

}  // namespace espgrid::cuda::lean
