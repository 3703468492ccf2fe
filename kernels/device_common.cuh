// Device-side pieces every kernel family shares: the slab geometry passed by value, grid
// coordinates, slab indexing, the device Math policy for the pair evaluators, and the one
// switch from the run-time pair model to the evaluator template argument. Included only by
// the .cu files in kernels/.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/cuda_runtime_support.h"
#include "src/compute/cuda_driver.h"
#include "src/physics/pair_potentials.h"

namespace espgrid::cuda {

/// One atom for the families that form tile-relative offsets: its position relative to the
/// grid origin in double (Å) and its charge (q·k/ε as the float kernels have it).
struct alignas(32) AtomDouble {
  double x, y, z, q;
};

/// Slab geometry, passed by value (kernel parameters live in the constant bank).
struct Geometry {
  int nx, ny;            ///< the map's extent: bounds for the unpadded variants
  int pitch_x, pitch_y;  ///< device slab layout: floats per row, rows per plane (padded)
  int k0;                ///< map z index of the slab's first plane
  float hx, hy, hz;      ///< grid spacing
  float a2;              ///< softening²
};

inline Geometry geometry_of(const SlabLaunch& s) {
  Geometry g{};
  g.nx = s.nx;
  g.ny = s.ny;
  g.pitch_x = s.plan.pitch_x;
  g.pitch_y = s.plan.pitch_y;
  g.k0 = static_cast<int>(s.k0);  // map plane index: grid z = k·hz (validated ≤ 2^30 by the driver)
  g.hx = s.hx;
  g.hy = s.hy;
  g.hz = s.hz;
  g.a2 = s.softening2;
  return g;
}

inline cudaStream_t stream_of(const SlabLaunch& s) { return static_cast<cudaStream_t>(s.stream); }
inline const float4* atoms_of(const SlabLaunch& s) { return reinterpret_cast<const float4*>(s.atoms); }
inline const AtomDouble* atoms64_of(const SlabLaunch& s) { return reinterpret_cast<const AtomDouble*>(s.atoms64); }
inline unsigned blocks_for(std::int64_t extent, std::int64_t per_block) {
  return static_cast<unsigned>((extent + per_block - 1) / per_block);
}

/// Grid coordinate float(i)*h, rounded once and never fused with a following add (as in the
/// CPU kernels: it keeps nvcc from contracting the product and a subtraction into one FFMA).
__device__ __forceinline__ float grid_coord(int i, float h) { return __fmul_rn(static_cast<float>(i), h); }

__device__ __forceinline__ std::size_t slab_index(const Geometry& g, int i, int j, int plane) {
  return (static_cast<std::size_t>(plane) * static_cast<std::size_t>(g.pitch_y) + static_cast<std::size_t>(j)) *
             static_cast<std::size_t>(g.pitch_x) +
         static_cast<std::size_t>(i);
}

/// The Math policy of the pair evaluators on the device: each primitive is one MUFU instruction
/// under --ftz=true (rsqrtf: MUFU.RSQ; rcp.approx: MUFU.RCP, ≤ 1 ulp; ex2.approx: MUFU.EX2,
/// ≤ 2 ulp), and q times it added to a sum contracts
/// into one FFMA. (The host branches only exist so nvcc's host pass sees a definition; kernels
/// never run them.)
struct DeviceMath {
  __host__ __device__ __forceinline__ static float rsqrt(float x) {
#ifdef __CUDA_ARCH__
    return rsqrtf(x);
#else
    return 1.0f / sqrtf(x);
#endif
  }
  __host__ __device__ __forceinline__ static float over_sqrt(float q, float r2) { return q * rsqrt(r2); }
  __host__ __device__ __forceinline__ static float over(float q, float r2) {
#ifdef __CUDA_ARCH__
    float reciprocal;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(reciprocal) : "f"(r2));
    return q * reciprocal;
#else
    return q / r2;
#endif
  }
  __host__ __device__ __forceinline__ static float exp2(float x) {
#ifdef __CUDA_ARCH__
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
#else
    return exp2f(x);
#endif
  }
};

/// The Math policy on the FMA pipe alone (cuda-dualpipe's SPLIT points): the reciprocal square
/// root from the bit-level estimate 0x5f375a86 − (bits ≫ 1) (3.4% error), one Newton step
/// (1.8e-3) and one third-order Householder step (< 1e-8: float-accurate, ≤ 2 ulp with the
/// rounding of its last steps, as MUFU.RSQ), about 9 FP32 and 2 integer instructions; the
/// reciprocal likewise from Newton steps, the exponential by exp2_polynomial. Host branches only
/// give nvcc's host pass a definition.
struct FmaMath {
  __host__ __device__ __forceinline__ static float rsqrt(float x) {
#ifdef __CUDA_ARCH__
    float y = __int_as_float(0x5f375a86 - (__float_as_int(x) >> 1));
    y = y * fmaf(-0.5f * x, y * y, 1.5f);          // Newton: 3.4e-2 → 1.8e-3
    const float e = fmaf(-x * y, y, 1.0f);         // 1 − x·y²
    return fmaf(y * e, fmaf(0.375f, e, 0.5f), y);  // y·(1 + e/2 + 3e²/8): 1.8e-3 → < 1e-8
#else
    return 1.0f / sqrtf(x);
#endif
  }
  __host__ __device__ __forceinline__ static float over_sqrt(float q, float r2) { return q * rsqrt(r2); }
  __host__ __device__ __forceinline__ static float over(float q, float r2) {
#ifdef __CUDA_ARCH__
    float y = __int_as_float(0x7EF311C3 - __float_as_int(r2));       // 1/x to 12%
    for (int i = 0; i < 3; ++i) y = fmaf(y, fmaf(-r2, y, 1.0f), y);  // Newton: 12% → 1.4e-2 → 2e-4 → 4e-8
    return q * y;
#else
    return q / r2;
#endif
  }
  __host__ __device__ __forceinline__ static float exp2(float x) { return exp2_polynomial(x); }
};

}  // namespace espgrid::cuda
