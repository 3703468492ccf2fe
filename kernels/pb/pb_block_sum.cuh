// The PB solvers' sums over a grid's nodes in a fixed order, so that a dot product's bits never depend
// on the launch's timing: each block's threads' values added by one tree in shared memory, then the
// blocks' partial sums by one block (kernels/pb/pb_multigrid.cu, pb_nonlinear.cu and the lean solver).
#pragma once

#include <cuda_runtime.h>

namespace espgrid::cuda::pb_sums {

/// Σ of every thread's `s` in a block of Block threads (a power of two); the result in thread 0.
template <int Block>
__device__ __forceinline__ double block_sum(double s) {
  __shared__ double sums[Block];
  sums[threadIdx.x] = s;
  __syncthreads();
  for (int half = Block / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) sums[threadIdx.x] += sums[threadIdx.x + half];
    __syncthreads();
  }
  return sums[0];
}

/// *out = Σ partial[0 .. count − 1], by one block of Block threads.
template <int Block>
__global__ void partials_sum_kernel(const double* partial, int count, double* out) {
  double s = 0.0;
  for (int i = threadIdx.x; i < count; i += blockDim.x) s += partial[i];
  s = block_sum<Block>(s);
  if (threadIdx.x == 0) *out = s;
}

}  // namespace espgrid::cuda::pb_sums
