// The per-point arithmetic of exact frame sums (src/compute/frame_sums.h), written once: the host
// loops over points calling these, and the CUDA kernel (kernels/frame_sums.cu) runs one thread a
// point calling the same functions, so both hold the same integers.
//
// Each frame's value φ (float32, the map's unit) becomes the integer p = round(φ · 2^48) — exact
// for |φ| ≥ 2^-24, within 2^-49 below — and a point keeps Σp in 128 bits (two's complement) and
// Σp² in 192 bits (unsigned). Integer sums do not depend on the order of the frames, so the mean
// and deviation made from them are the same bits whichever rank, device or thread added which
// frame (the result must not depend on the number of MPI ranks).
// Range: |φ| < 2^31 (p < 2^79, p² < 2^158) and fewer than 2^32 frames (Σp < 2^111, Σp² < 2^190).
//
// C++17 and header-only: nvcc compiles it into the device code.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define ESPGRID_FS_HD __host__ __device__ __forceinline__
#else
#define ESPGRID_FS_HD inline
#endif

namespace espgrid::frame_sums {

/// p = φ · 2^kFractionBits, rounded to the nearest integer (ties to even).
inline constexpr int kFractionBits = 48;
/// |φ| < 2^kMaxValueLog2 in the map's unit.
inline constexpr int kMaxValueLog2 = 31;
/// Limbs a point keeps: Σp (2) and, with squares, Σp² (3).
inline constexpr int kSumLimbs = 2;
inline constexpr int kSquareLimbs = 3;

/// |p| as 128 bits and its sign; ok is false for NaN, ±inf and |φ| ≥ 2^31.
struct Quantized {
  std::uint64_t lo = 0, hi = 0;
  bool negative = false;
  bool ok = true;
};

ESPGRID_FS_HD Quantized quantize(float phi) {
  std::uint32_t bits;
  std::memcpy(&bits, &phi, sizeof bits);
  Quantized q;
  q.negative = (bits >> 31) != 0;
  const int biased = static_cast<int>((bits >> 23) & 0xFFu);
  if (biased == 0xFF || biased - 127 >= kMaxValueLog2) {
    q.ok = false;
    return q;
  }
  // φ = m · 2^(e − 150) with the hidden bit in m (subnormals: e = 1, no hidden bit).
  const std::uint64_t m = (bits & 0x7FFFFFu) | (biased ? 0x800000u : 0u);
  const int shift = (biased ? biased : 1) - 150 + kFractionBits;  // p = m · 2^shift, shift ≤ 55
  if (shift >= 0) {
    q.lo = m << shift;
    q.hi = shift == 0 ? 0 : m >> (64 - shift);
  } else if (-shift <= 24) {
    const int down = -shift;
    std::uint64_t r = m >> down;
    const std::uint64_t rest = m & ((std::uint64_t{1} << down) - 1), half = std::uint64_t{1} << (down - 1);
    if (rest > half || (rest == half && (r & 1u))) ++r;
    q.lo = r;
  }  // else m · 2^shift < ½: p = 0
  return q;
}

/// hi:lo = a · b.
ESPGRID_FS_HD void multiply(std::uint64_t a, std::uint64_t b, std::uint64_t& hi, std::uint64_t& lo) {
#if defined(__CUDA_ARCH__)
  lo = a * b;
  hi = __umul64hi(a, b);
#else
  __extension__ typedef unsigned __int128 Wide;  // GCC and Clang; __extension__: no -Wpedantic
  const Wide p = static_cast<Wide>(a) * b;
  lo = static_cast<std::uint64_t>(p);
  hi = static_cast<std::uint64_t>(p >> 64);
#endif
}

/// sum += x, returning the carry out (0 or 1).
ESPGRID_FS_HD std::uint64_t add_carry(std::uint64_t& sum, std::uint64_t x, std::uint64_t carry_in) {
  const std::uint64_t s = sum + x;
  const std::uint64_t c1 = s < x;
  sum = s + carry_in;
  return c1 + (sum < carry_in);
}

/// p² of |p| < 2^79 as three limbs (< 2^158).
ESPGRID_FS_HD void square(const Quantized& p, std::uint64_t out[3]) {
  std::uint64_t a1, a0, b1, b0;
  multiply(p.lo, p.lo, a1, a0);
  multiply(p.lo, p.hi, b1, b0);  // p.hi < 2^15: lo·hi < 2^79, so 2·lo·hi < 2^80 fits b1:b0 doubled
  const std::uint64_t d1 = (b1 << 1) | (b0 >> 63), d0 = b0 << 1;
  out[0] = a0;
  out[1] = a1;
  out[2] = p.hi * p.hi;
  const std::uint64_t c = add_carry(out[1], d0, 0);
  add_carry(out[2], d1, c);
}

/// Adds one frame's φ at point `p` of a map of `points` points to limbs laid out limb-major
/// (limb L of point p at sums[L · points + p]: coalesced on a GPU): Σp in limbs 0–1, Σp² in
/// limbs 2–4 when `squares`. False (nothing added) when φ is not finite or too large.
ESPGRID_FS_HD bool add_value(float phi, std::uint64_t* sums, std::int64_t points, std::int64_t p, bool squares) {
  const Quantized q = quantize(phi);
  if (!q.ok) return false;
  std::uint64_t& lo = sums[p];
  std::uint64_t& hi = sums[points + p];
  if (q.negative) {
    const std::uint64_t borrow = lo < q.lo;
    lo -= q.lo;
    hi -= q.hi + borrow;
  } else {
    hi += q.hi + add_carry(lo, q.lo, 0);
  }
  if (squares) {
    std::uint64_t sq[3];
    square(q, sq);
    std::uint64_t c = add_carry(sums[2 * points + p], sq[0], 0);
    c = add_carry(sums[3 * points + p], sq[1], c);
    add_carry(sums[4 * points + p], sq[2], c);
  }
  return true;
}

/// Undoes add_value(phi, ...) exactly (nothing when φ could not be added): Σp −= p, Σp² −= p².
ESPGRID_FS_HD void remove_value(float phi, std::uint64_t* sums, std::int64_t points, std::int64_t p, bool squares) {
  Quantized q = quantize(phi);
  if (!q.ok) return;
  q.negative = !q.negative;  // −p into Σp
  std::uint64_t& lo = sums[p];
  std::uint64_t& hi = sums[points + p];
  if (q.negative) {
    const std::uint64_t borrow = lo < q.lo;
    lo -= q.lo;
    hi -= q.hi + borrow;
  } else {
    hi += q.hi + add_carry(lo, q.lo, 0);
  }
  if (squares) {  // Σp² −= p²: 192-bit subtraction
    std::uint64_t sq[3];
    square(q, sq);
    std::uint64_t borrow = 0;
    for (int l = 0; l < 3; ++l) {
      std::uint64_t& limb = sums[(2 + l) * points + p];
      const std::uint64_t before = limb;
      limb = before - sq[l] - borrow;
      borrow = (before < sq[l] || (before == sq[l] && borrow)) ? 1 : 0;
    }
  }
}

}  // namespace espgrid::frame_sums
