// The multigrid's coarsest level solved in one kernel launch: its symmetric red-black Gauss–Seidel
// sweeps (colours 0, 1, 1, 0, `sweeps` times) by one block, a barrier between half-sweeps. The
// coarsest level has at most 3 nodes along an axis (pb::MgSettings), and launching its 4 × 50
// half-sweeps one by one cost more than the rest of a V-cycle on a trajectory's small grids (each
// launch, even replayed from a CUDA graph, costs microseconds; the level's work is nanoseconds).
// A colour's nodes read only the other colour's, so one block visiting them in any order computes
// what the separate launches did, bit for bit.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <type_traits>

#include "kernels/cuda_runtime_support.h"
#include "src/core/switches.h"
#include "src/pb_numerics/pb_multigrid_math.h"

namespace espgrid::cuda::coarsest {

/// Levels up to this many nodes are swept by one block (larger ones keep a launch per half-sweep);
/// a stored operator up to kSharedNodes is copied into shared memory first (its x, b and operator:
/// 6 values a node, 48 bytes in double), where a half-sweep's loads take tens of cycles instead of hundreds.
constexpr long kMaxNodes = 4096;
constexpr long kSharedNodes = 512;
constexpr int kThreads = 256;

/// Threads of the one block for a level of `size` nodes: whole warps, at most kThreads.
inline int threads_for(long size) { return static_cast<int>(size >= kThreads ? kThreads : ((size + 31) / 32) * 32); }

/// Whether Op is a stored operator whose values have x's type T (then it can be copied beside x and b).
template <class Op, class T>
constexpr bool kStoredAs = std::is_same_v<Op, pb::MgOperatorOf<T>>;

/// `sweeps` symmetric sweeps of x (colours 0, 1, 1, 0) by this block; a node's colour is the
/// parity of i + j + k + k_offset, as the one-launch half-sweeps'.
template <class Op, class T>
__device__ void block_sweeps(const Op& a, T* x, const T* b, int sweeps, long k_offset) {
  const long nx = a.n[0], ny = a.n[1], size = a.n[0] * a.n[1] * a.n[2];
  for (int s = 0; s < sweeps; ++s)
    for (int half = 0; half < 4; ++half) {
      const int color = (half == 0 || half == 3) ? 0 : 1;
      for (long idx = threadIdx.x; idx < size; idx += blockDim.x) {
        const long k = idx / (nx * ny), rest = idx - k * nx * ny, j = rest / nx, i = rest - j * nx;
        if (pb::interior(a.n, i, j, k) && ((i + j + k + k_offset) & 1) == color)
          x[idx] = static_cast<T>(pb::gauss_seidel_value(a, x, b, idx));
      }
      __syncthreads();  // this half-sweep's writes are visible to the block's next one
    }
}

/// One block: the sweeps on the level in place, or (`in_shared`: a stored operator of at most
/// kSharedNodes nodes, the dynamic shared memory sized for it) on a copy in shared memory.
template <class Op, class T>
__global__ void symmetric_sweeps_kernel(Op a, T* x, const T* b, int sweeps, long k_offset, bool in_shared) {
  if constexpr (kStoredAs<Op, T>) {
    if (in_shared) {
      extern __shared__ __align__(8) unsigned char level_bytes[];
      T* const level = reinterpret_cast<T*>(level_bytes);
      const long size = a.n[0] * a.n[1] * a.n[2];
      T* copy[6];
      for (int v = 0; v < 6; ++v) copy[v] = level + v * size;
      const T* from[6] = {a.wx, a.wy, a.wz, a.c, x, b};
      for (long idx = threadIdx.x; idx < size; idx += blockDim.x)
        for (int v = 0; v < 6; ++v) copy[v][idx] = from[v][idx];
      __syncthreads();
      Op s = a;
      s.wx = copy[0];
      s.wy = copy[1];
      s.wz = copy[2];
      s.c = copy[3];
      block_sweeps(s, copy[4], copy[5], sweeps, k_offset);
      for (long idx = threadIdx.x; idx < size; idx += blockDim.x) x[idx] = copy[4][idx];
      return;
    }
  }
  block_sweeps(a, x, b, sweeps, k_offset);
}

/// ESPGRID_PB_COARSEST_KERNEL=0 launches every half-sweep (for measuring what the one launch saves).
inline bool one_launch_enabled() {
  static const bool on = !switched_off("ESPGRID_PB_COARSEST_KERNEL");
  return on;
}

/// Queues the sweeps on `stream` as one launch when the level is small enough; returns false (and
/// queues nothing) otherwise.
template <class Op, class T>
bool solve_in_one_launch(const Op& a, T* x, const T* b, int sweeps, long k_offset, cudaStream_t stream) {
  const long size = a.n[0] * a.n[1] * a.n[2];
  if (size > kMaxNodes || size <= 0 || !one_launch_enabled()) return false;
  const bool in_shared = kStoredAs<Op, T> && size <= kSharedNodes;
  const std::size_t shared_bytes = in_shared ? 6 * static_cast<std::size_t>(size) * sizeof(T) : 0;
  symmetric_sweeps_kernel<Op, T><<<1, threads_for(size), shared_bytes, stream>>>(a, x, b, sweeps, k_offset, in_shared);
  ESPGRID_CUDA_CHECK_LAUNCH();
  return true;
}

}  // namespace espgrid::cuda::coarsest
