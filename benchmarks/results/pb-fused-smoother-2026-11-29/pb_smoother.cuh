// The multigrid's smoother on a level of the device pipeline (kernels/pb/pb_lean_solver.cuh): red-black
// Gauss–Seidel half-sweeps, and a symmetric pair of them (first colour, then the other) fused into one
// launch for a whole level.
//
// The fused pair, out of place: x_new = the pair applied to x_old. Two launches read and wrote the
// level twice (27 bytes a node each: x, b and the codes, with half of every sector idle); the pair
// reads x, b and the codes once and writes x once (28 bytes a node for both colours).
// A block owns a tile of kFusedX × kFusedY columns over kFusedZ planes and marches up its planes:
// at plane p it computes the first colour's new values at p + 1 (from x_old: a first-colour node reads
// only second-colour nodes, which the first half-sweep leaves as they were) on its tile and a one-node
// ring around it into shared memory, and the second colour's new values at p from the first colour's
// new values around them (the plane's in shared memory, the column's below and above in registers). Every
// node's arithmetic is the two launches' (pb::gauss_seidel_value; the second colour's through
// pb::neighbour_sum_of in the same order), so the pair gives their bits; the ring and the planes just
// below and above a block's are computed again by the neighbouring blocks (~10% more first-colour
// work, from the caches). Out of place, blocks never read what another writes: no order between them.
// Faces (not interior) keep x_old's values, as the half-sweeps leave them.
#pragma once

#include <cuda_runtime.h>

#include <cstdlib>
#include <string>

#include "kernels/cuda_runtime_support.h"
#include "src/core/switches.h"
#include "src/pb_numerics/pb_multigrid_math.h"

namespace espgrid::cuda::lean {

/// One colour's Gauss–Seidel updates; a node's colour is the parity of its whole-level indices
/// (`k_offset`: the whole level's plane of this array's plane 0), so slabs sweep as one grid. A
/// thread a node of the colour (sweep_blocks): x over every other node of a row, y over rows, z over
/// planes. A thread a node of the level with half of them idle left every warp half its lanes and
/// two 64-bit divisions each (the fine sweeps at 39% of the H200's DRAM bandwidth, 2026-11-28).
/// Same-colour nodes do not read each other, so the order of the updates changes no bit.
constexpr unsigned kSweepX = 32, kSweepY = 8;
template <class Op>
__global__ void half_sweep_kernel(Op a, double* x, const double* b, int color, long k_offset) {
  const long k = blockIdx.z;
  const long j = static_cast<long>(blockIdx.y) * kSweepY + threadIdx.y;
  // (i + j + k + k_offset) & 1 == color: i's parity is that of color + j + k + k_offset.
  const long i = 2 * (static_cast<long>(blockIdx.x) * kSweepX + threadIdx.x) + ((color + j + k + k_offset) & 1);
  if (j >= a.n[1] || i >= a.n[0] || !pb::interior(a.n, i, j, k)) return;
  const long idx = i + a.n[0] * (j + a.n[1] * k);
  x[idx] = pb::gauss_seidel_value(a, x, b, idx);
}
/// half_sweep_kernel's grid for a level of n nodes (blocks of kSweepX × kSweepY threads).
inline dim3 sweep_blocks(const long* n) {
  if (n[2] > 65535 || n[1] > 65535L * kSweepY)
    throw Error("internal error: a PB level of " + std::to_string(n[1]) + " x " + std::to_string(n[2]) +
                " rows is beyond a sweep's launch grid");
  return dim3(static_cast<unsigned>(((n[0] + 1) / 2 + kSweepX - 1) / kSweepX),
              static_cast<unsigned>((n[1] + kSweepY - 1) / kSweepY), static_cast<unsigned>(n[2]));
}

constexpr int kFusedX = 32, kFusedY = 8, kFusedZ = 32;
constexpr int kRingNodes = 2 * (kFusedX + 2) + 2 * kFusedY;  ///< the ring around a tile

/// The node (i, j, p) after the first half-sweep: its new value when it is interior, else x_old's.
/// Only for first-colour nodes of the level.
template <class Op>
__device__ __forceinline__ double first_colour_value(const Op& a, const double* x_old, const double* b, long i, long j,
                                                     long p) {
  const long idx = i + a.n[0] * (j + a.n[1] * p);
  return pb::interior(a.n, i, j, p) ? pb::gauss_seidel_value(a, x_old, b, idx) : x_old[idx];
}

/// Ring node r (0 ≤ r < kRingNodes) of a tile as tile-local (ri, rj), each from −1 to the tile's size.
__device__ __forceinline__ void ring_node(int r, int& ri, int& rj) {
  if (r < kFusedX + 2) {
    ri = r - 1;
    rj = -1;
  } else if (r < 2 * (kFusedX + 2)) {
    ri = r - (kFusedX + 2) - 1;
    rj = kFusedY;
  } else {
    const int s = r - 2 * (kFusedX + 2);
    ri = s < kFusedY ? -1 : kFusedX;
    rj = s < kFusedY ? s : s - kFusedY;
  }
}

/// One barrier a plane: at plane p a thread computes its column's first-colour value at p + 1 (and a
/// ring node's) beside its second-colour value at p, whose neighbours are the plane's first-colour
/// values (shared memory, written before the last barrier) and its column's at p − 1 and p + 1
/// (registers). Every third thread owns a ring node, so every warp shares the ring's work. Bounded to
/// six blocks an SM (40 registers, none spilled; unbounded it took 128, two blocks): a block waits on
/// its plane's loads between barriers, and more blocks in flight hide them.
template <class Op, int MinBlocks>
__global__ void __launch_bounds__(kFusedX* kFusedY, MinBlocks)
    symmetric_pair_kernel(Op a, const double* __restrict__ x_old, const double* __restrict__ b,
                          double* __restrict__ x_new, int first, long k_offset) {
  __shared__ double fresh[2][kFusedY + 2][kFusedX + 2];  // the first colour's new values, two planes
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const long i0 = static_cast<long>(blockIdx.x) * kFusedX, j0 = static_cast<long>(blockIdx.y) * kFusedY;
  const long i = i0 + tx, j = j0 + ty;
  const long k0 = static_cast<long>(blockIdx.z) * kFusedZ;
  const long k1 = k0 + kFusedZ < a.n[2] ? k0 + kFusedZ : a.n[2];
  const bool in_level = i < a.n[0] && j < a.n[1];
  const auto is_first = [&](long ii, long jj, long kk) { return ((ii + jj + kk + k_offset) & 1) == first; };
  const int t = ty * kFusedX + tx;
  int ri = 0, rj = 0;
  const bool ring = t % 3 == 0 && t / 3 < kRingNodes;
  if (ring) ring_node(t / 3, ri, rj);
  const long gi = i0 + ri, gj = j0 + rj;
  const bool ring_in_level = ring && gi >= 0 && gj >= 0 && gi < a.n[0] && gj < a.n[1];
  // The column's first-colour values below, at and above the plane (0 where it is second colour).
  double below = 0.0, here = 0.0;
  if (in_level && k0 > 0 && is_first(i, j, k0 - 1)) below = first_colour_value(a, x_old, b, i, j, k0 - 1);
  if (in_level && is_first(i, j, k0)) fresh[0][ty + 1][tx + 1] = here = first_colour_value(a, x_old, b, i, j, k0);
  if (ring_in_level && is_first(gi, gj, k0)) fresh[0][rj + 1][ri + 1] = first_colour_value(a, x_old, b, gi, gj, k0);
  __syncthreads();
  for (long p = k0; p < k1; ++p) {
    const int now = static_cast<int>((p - k0) & 1), next = now ^ 1;
    const long up = p + 1;
    double above = 0.0;
    if (up < a.n[2]) {
      if (in_level && is_first(i, j, up)) {
        above = first_colour_value(a, x_old, b, i, j, up);
        if (up < k1) fresh[next][ty + 1][tx + 1] = above;
      }
      if (up < k1 && ring_in_level && is_first(gi, gj, up))
        fresh[next][rj + 1][ri + 1] = first_colour_value(a, x_old, b, gi, gj, up);
    }
    if (in_level) {
      const long idx = i + a.n[0] * (j + a.n[1] * p);
      double value;
      if (is_first(i, j, p)) {
        value = here;
      } else if (pb::interior(a.n, i, j, p)) {
        const double(*plane)[kFusedX + 2] = fresh[now];
        const double sum = pb::neighbour_sum_of(a, idx, plane[ty + 1][tx], plane[ty + 1][tx + 2], plane[ty][tx + 1],
                                                plane[ty + 2][tx + 1], below, above);
        value = (b[idx] + sum) / pb::diagonal(a, idx);
      } else {
        value = x_old[idx];
      }
      x_new[idx] = value;
    }
    below = here;
    here = above;
    __syncthreads();  // plane p + 1's values are written; plane p's are read before they are overwritten
  }
}

/// The block grid of symmetric_pair_kernel for a level of n nodes.
inline dim3 fused_blocks(const long* n) {
  if (n[1] > 65535L * kFusedY || n[2] > 65535L * kFusedZ)
    throw Error("internal error: a PB level of " + std::to_string(n[1]) + " x " + std::to_string(n[2]) +
                " rows is beyond the fused sweeps' launch grid");
  return dim3(static_cast<unsigned>((n[0] + kFusedX - 1) / kFusedX),
              static_cast<unsigned>((n[1] + kFusedY - 1) / kFusedY),
              static_cast<unsigned>((n[2] + kFusedZ - 1) / kFusedZ));
}

/// One symmetric pair from x_old into x_new (distinct arrays of the level's size) on `stream`.
template <class Op>
void symmetric_pair(const Op& a, const double* x_old, const double* b, double* x_new, int first, long k_offset,
                    cudaStream_t stream) {
  static const int blocks =
      std::getenv("ESPGRID_PB_FUSED_BLOCKS") ? std::atoi(std::getenv("ESPGRID_PB_FUSED_BLOCKS")) : 4;
  if (blocks == 6)
    symmetric_pair_kernel<Op, 6>
        <<<fused_blocks(a.n), dim3(kFusedX, kFusedY), 0, stream>>>(a, x_old, b, x_new, first, k_offset);
  else
    symmetric_pair_kernel<Op, 4>
        <<<fused_blocks(a.n), dim3(kFusedX, kFusedY), 0, stream>>>(a, x_old, b, x_new, first, k_offset);
  ESPGRID_CUDA_CHECK_LAUNCH();
}

/// Whether level 0's smoothing runs as fused pairs: ESPGRID_PB_FUSED_SWEEPS=0 launches every
/// half-sweep (for measuring what the fusion saves).
inline bool fused_sweeps_on() {
  static const bool on = !switched_off("ESPGRID_PB_FUSED_SWEEPS");
  return on;
}

}  // namespace espgrid::cuda::lean
