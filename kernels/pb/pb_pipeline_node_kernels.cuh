// The PB pipeline's kernels over every node of a slab (kernels/pb/pb_pipeline.cu): the right-hand side,
// φ from the face values and the solution, and φ·q for the energy. Included by pb_pipeline.cu alone.
#pragma once

#include <cuda_runtime.h>

#include "src/pb_numerics/pb_pipeline_math.h"

namespace espgrid::cuda::pipeline_nodes {

struct Grid {
  long n[3];
};

__device__ __forceinline__ void node_of(long idx, const long* n, long& i, long& j, long& k) {
  const long plane = n[0] * n[1];
  k = idx / plane;
  j = (idx - k * plane) / n[0];
  i = idx - k * plane - j * n[0];
}

/// b at every node (0 on the faces) from the spread charges and the face values.
__global__ void rhs_kernel(pb::CodedOperator op, double zmagic, const double* charge, const double* faces, double* b) {
  const long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= op.n[0] * op.n[1] * op.n[2]) return;
  long i, j, k;
  node_of(idx, op.n, i, j, k);
  b[idx] = pb::interior(op.n, i, j, k) ? pb::direct_rhs(op, zmagic, charge[idx], faces, i, j, k) : 0.0;
}

/// φ = the face values on the faces, u inside (pb::combined_value's arithmetic), times `scale`.
template <class T>
__global__ void combine_kernel(Grid g, const double* faces, const double* u, double scale, T* out) {
  const long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= g.n[0] * g.n[1] * g.n[2]) return;
  long i, j, k;
  node_of(idx, g.n, i, j, k);
  const double phi = pb::on_faces(g.n, i, j, k) ? faces[pb::face_index(g.n, i, j, k)] : u[idx] + 0.0;
  out[idx] = static_cast<T>(phi * scale);
}

/// φ·q at every node (APBS's spl2 fixed-charge energy, summed after).
__global__ void charge_potential_kernel(Grid g, const double* faces, const double* u, const double* charge,
                                        double* out) {
  const long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= g.n[0] * g.n[1] * g.n[2]) return;
  long i, j, k;
  node_of(idx, g.n, i, j, k);
  const double phi = pb::on_faces(g.n, i, j, k) ? faces[pb::face_index(g.n, i, j, k)] : u[idx] + 0.0;
  out[idx] = phi * charge[idx];
}

}  // namespace espgrid::cuda::pipeline_nodes
