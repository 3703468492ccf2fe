// The formulas of multilevel summation (MSM) that the CPU phases (double) and the CUDA phases
// (float) share: the softening γ of the kernel splitting and the nodal interpolants φ with
// their restriction weights. C++17 and header-only: nvcc compiles it into the device code.
//
// Splitting (Hardy, Stone, Schulten 2009; Hardy et al. 2015), with a_l = 2^(l-1)·a:
//   1/r = [1/r − g_a(r)] + Σ_{l<L} [g_{a_l}(r) − g_{a_{l+1}}(r)] + g_{a_L}(r),   g_s(r) = γ(r/s)/s,
// where γ(ρ) = 1/ρ for ρ ≥ 1 and, for ρ < 1, the Taylor expansion of (1 + (ρ² − 1))^(−1/2) about
// ρ² = 1 to k terms (C^k at ρ = 1). The first bracket is the short range (zero beyond a),
// the middle ones live on grids of spacing h·2^(l-1) (zero beyond 2·a_l), the last on the top grid.
// A degree-p interpolant pairs with k = (p + 1)/2: cubic with Taylor-2, quintic with Taylor-3.
#pragma once

#include <cmath>

#if defined(__CUDACC__)
#define ESPGRID_MSM_HOSTDEVICE __host__ __device__ __forceinline__
#else
#define ESPGRID_MSM_HOSTDEVICE inline
#endif

namespace espgrid::msm {

/// Half-width of the interpolant's support in grid spacings: φ(t) = 0 for |t| ≥ it. A point
/// x with m = floor(x/h) touches lattice points m − (width − 1) ... m + width.
ESPGRID_MSM_HOSTDEVICE constexpr int support_width(int order) { return (order + 1) / 2; }
/// Taylor terms of γ that pair with a degree-`order` interpolant (C^k smoothness).
ESPGRID_MSM_HOSTDEVICE constexpr int taylor_terms(int order) { return (order + 1) / 2; }
/// Half-width of the 1-D restriction stencil (in fine-grid points): 2·width − 1.
ESPGRID_MSM_HOSTDEVICE constexpr int restriction_width(int order) { return 2 * support_width(order) - 1; }

/// γ(ρ) for ρ² < 1: Σ_{n≤k} C(−1/2, n)(ρ² − 1)^n, k = taylor_terms(order). Taylor-2 is
/// 15/8 − 5/4·ρ² + 3/8·ρ⁴; Taylor-3 adds −5/16·(ρ² − 1)³.
template <class Real>
ESPGRID_MSM_HOSTDEVICE Real gamma_inside(Real rho2, int order) {
  const Real s = rho2 - Real(1);
  // Horner in s: 1 − s/2 + 3/8 s² (− 5/16 s³)
  if (order >= 5) return Real(1) + s * (Real(-0.5) + s * (Real(0.375) + s * Real(-0.3125)));
  return Real(1) + s * (Real(-0.5) + s * Real(0.375));
}

/// γ(ρ) from ρ² ≥ 0: the polynomial inside the unit ball, 1/ρ outside (host, double).
inline double gamma_of(double rho2, int order) {
  return rho2 < 1.0 ? gamma_inside(rho2, order) : 1.0 / std::sqrt(rho2);
}

/// g_s(r) = γ(r/s)/s, 1/Å, from r² (Å²) and the softening scale s (Å).
inline double smoothed_coulomb(double r2, double s, int order) { return gamma_of(r2 / (s * s), order) / s; }

/// The kernel a run splits, f(r) = e^(−κr)/r^power (r in Å): Coulomb (power 1, κ = 0), Debye
/// (power 1, κ > 0) and the distance-dependent dielectric's 1/r² (power 2, κ = 0). The
/// splitting below holds for any f whose softened form g_s (f beyond s, its Taylor polynomial
/// in r² about r² = s² inside, k terms: C^k at r = s) is smooth; for Coulomb g_s is γ(r/s)/s.
/// Screened and 1/r² kernels are not scale-free like 1/r (K_l(r) ≠ 2^-(l-1) K_1(r/2^(l-1)) for
/// κ > 0), so each level gets its own stencil (msm_plan.h).
struct SplitKernel {
  int power = 1;     ///< 1 or 2
  double kappa = 0;  ///< κ, 1/Å
  bool coulomb() const noexcept { return power == 1 && kappa == 0; }
};

/// e^x for x ≤ 0 (double) in plain operations, so that a vector lane computes the very bits of
/// the scalar code (cpu-msm's short range, msm_cpu_vectors.cpp, does these steps in vectors): x
/// = k·ln 2 + f with k = round(x·log₂e) and ln 2 in two parts (Cody–Waite: k·ln2_hi exact),
/// e^f by its Taylor polynomial of degree 13 (|f| ≤ ln 2 / 2: truncation ≤ 4e-18 relative), times
/// 2^k exactly. Within 2 ulp of std::exp (tests/test_msm.cpp); x below −700 is taken as −700
/// (e^−700 ≈ 1e-304: nothing a map can hold).
struct ExpSteps {
  static constexpr double kLowest = -700.0;
  static constexpr double kLog2e = 1.4426950408889634;
  static constexpr double kLn2Hi = 6.93147180369123816490e-01;  // 0x3FE62E42FEE00000: k·kLn2Hi exact
  static constexpr double kLn2Lo = 1.90821492927058770002e-10;
  static constexpr int kDegree = 13;
  static constexpr double kTaylor[kDegree + 1] = {
      1.0,        1.0,         1.0 / 2,      1.0 / 6,       1.0 / 24,       1.0 / 120,       1.0 / 720,
      1.0 / 5040, 1.0 / 40320, 1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600, 1.0 / 6227020800};
};
inline double exp_nonpositive(double x) {
  if (x < ExpSteps::kLowest) x = ExpSteps::kLowest;
  const double k = std::nearbyint(x * ExpSteps::kLog2e);
  const double f = (x - k * ExpSteps::kLn2Hi) - k * ExpSteps::kLn2Lo;
  double p = ExpSteps::kTaylor[ExpSteps::kDegree];
  for (int n = ExpSteps::kDegree - 1; n >= 0; --n) p = p * f + ExpSteps::kTaylor[n];
  return std::ldexp(p, static_cast<int>(k));  // exact: the result is a normal number
}

/// f(r) from r² (Å²), double; the screening by exp_nonpositive (one definition of e^(−κr) for the
/// plan's stencils and the short range, scalar or in vectors).
inline double kernel_value(double r2, const SplitKernel& k) {
  const double r = std::sqrt(r2);
  const double screen = k.kappa > 0 ? exp_nonpositive(-k.kappa * r) : 1.0;
  return k.power == 2 ? screen / r2 : screen / r;
}

/// The Taylor coefficients of f as a function of t = r² about t = s²: c_n = f⁽ⁿ⁾(s²)/n!, n = 0 ...
/// taylor_terms(order) (the rest zero), so that g_s(r) = Σ c_n (r² − s²)ⁿ inside s. With
/// u = √t, f = e^(−κu)·Σ_j b_j u^(−j) and d/dt = (1/2u)·d/du maps e^(−κu)u^(−j) to
/// e^(−κu)(−κ/2·u^(−j−1) − j/2·u^(−j−2)): the b_j are carried through that rule exactly.
inline void taylor_coefficients(const SplitKernel& k, double s, int order, double c[4]) {
  double b[16] = {};  // b[j]: coefficient of u^(−j); power + 2·3 < 16
  b[k.power] = 1.0;
  const double screen = k.kappa > 0 ? exp_nonpositive(-k.kappa * s) : 1.0;
  double factorial = 1.0;
  for (int n = 0; n < 4; ++n) {
    if (n > taylor_terms(order)) {
      c[n] = 0.0;
      continue;
    }
    double value = 0.0;
    for (int j = 15; j >= 1; --j) value = value / s + b[j];  // Σ_j b_j s^(−j), Horner in 1/s
    c[n] = screen * value / s / factorial;
    double next[16] = {};
    for (int j = 1; j + 2 < 16; ++j) {
      next[j + 1] += -0.5 * k.kappa * b[j];
      next[j + 2] += -0.5 * j * b[j];
    }
    for (int j = 0; j < 16; ++j) b[j] = next[j];
    factorial *= n + 1;
  }
}

/// Σ c_n tⁿ (t = r² − s², Å²) by Horner: the softened kernel inside s, host and device alike.
template <class Real>
ESPGRID_MSM_HOSTDEVICE Real softened_inside(Real t, const Real* c) {
  return c[0] + t * (c[1] + t * (c[2] + t * c[3]));
}

/// g_s for one kernel and softening scale s (Å), in double: smoothed_coulomb for Coulomb (its
/// own formula, so Coulomb maps keep their bits), else f beyond s and the Taylor polynomial
/// inside, its coefficients computed once here (a plan evaluates g_s at tens of thousands of
/// lattice distances per level).
struct SoftenedKernel {
  SplitKernel kernel;
  double s = 0;  ///< Å
  int order = 3;
  double c[4] = {};  ///< the Taylor coefficients (kernels other than Coulomb)
  SoftenedKernel() = default;
  SoftenedKernel(const SplitKernel& k, double scale, int interpolant_order)
      : kernel(k), s(scale), order(interpolant_order) {
    if (!k.coulomb()) taylor_coefficients(k, s, order, c);
  }
  /// g_s(r) from r² (Å²), 1/Å (1/Å² for 1/r²).
  double operator()(double r2) const {
    if (kernel.coulomb()) return smoothed_coulomb(r2, s, order);
    if (r2 >= s * s) return kernel_value(r2, kernel);
    return softened_inside(r2 - s * s, c);
  }
};

/// The nodal interpolant φ(t): φ(0) = 1, φ(k) = 0 at other integers, C¹, even, zero for
/// |t| ≥ support_width. Cubic: reproduces polynomials of degree ≤ 2 (Catmull–Rom / Keys a = −1/2);
/// quintic: degree ≤ 4.
template <class Real>
ESPGRID_MSM_HOSTDEVICE Real phi(Real t, int order) {
  const Real u = t < Real(0) ? -t : t;
  if (order >= 5) {
    if (u <= Real(1))
      return (Real(1) - u * u) * (Real(2) - u) * (Real(6) + u * (Real(3) - Real(5) * u)) * Real(1.0 / 12.0);
    if (u <= Real(2))
      return -(u - Real(1)) * (Real(2) - u) * (Real(3) - u) * (Real(4) + u * (Real(9) - Real(5) * u)) *
             Real(1.0 / 24.0);
    if (u < Real(3))
      return (u - Real(1)) * (u - Real(2)) * (Real(3) - u) * (Real(3) - u) * (Real(4) - u) * Real(1.0 / 24.0);
    return Real(0);
  }
  if (u <= Real(1)) return (Real(1) - u) * (Real(1) + u - Real(1.5) * u * u);
  if (u < Real(2)) return Real(-0.5) * (u - Real(1)) * (Real(2) - u) * (Real(2) - u);
  return Real(0);
}

/// The 2·width weights of a point at fractional position t ∈ [0, 1) past lattice point m
/// (t = x/h − m): w[k] multiplies lattice point m − (width − 1) + k.
template <class Real>
ESPGRID_MSM_HOSTDEVICE void point_weights(Real t, int order, Real* w) {
  const int width = support_width(order);
  for (int k = 0; k < 2 * width; ++k) w[k] = phi(t - Real(k - (width - 1)), order);
}

/// Restriction weight of fine point 2n + j for coarse point n: φ(j/2), j ∈ [−rw, rw]
/// (rw = restriction_width). Cubic: −1/16, 0, 9/16, 1, 9/16, 0, −1/16. Prolongation uses the
/// same weights (it is restriction's transpose).
inline double restriction_weight(int j, int order) { return phi(0.5 * j, order); }

}  // namespace espgrid::msm
