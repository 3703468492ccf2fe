// The per-node arithmetic of the nonlinear Poisson–Boltzmann equation (APBS `npbe`), written once
// for the host (src/pb/pb_nonlinear.cpp) and the device (kernels/pb/pb_nonlinear.cu).
//
// APBS 3.4.1's definitions (src/mg/vpmg.c Vpmg_ctor2, src/pmgc/mypdec.c Vc_vecpmg/Vdc_vecpmg): at
// an interior node of mass c = ε_w κ² λ · volume (pb_system.h's c, the linear equation's term),
// the ions' term is
//
//   N(u) = c · n(u),   n(u) = −Σₛ αₛ zₛ exp(s · clamp(−zₛ u, −85, 85)),   αₛ = cₛ / (2I),
//
// I = ½ Σ cₛ zₛ² the bulk ionic strength, so n'(0) = Σ αₛ zₛ² = 1 (the linear term again) and for a
// 1:1 salt n(u) = sinh u. APBS clips the exponent at ±85 (SINH_MIN/SINH_MAX) and, where |αₛ zₛ c|
// < 1e-20, scales it by s = |αₛ zₛ c|·1e20 (ZSMALL/ZLARGE; s = 1 everywhere else). Both are kept
// so the discrete equation is APBS's. The Jacobian's slope is the exact derivative of this n.
//
// The Newton iteration's line search (src/pb_numerics/pb_newton.h) uses the equation's energy: N is the
// derivative of c · B(u), B(u) = Σₛ αₛ Gₛ(−zₛ u), Gₛ' = exp(s · clamp(·)), Gₛ(0) = 0: convex, so
// the discrete equation is the minimum of a strictly convex function and any descent direction
// with a sufficient-decrease step converges.
//
// C++17 and header-only: nvcc compiles it into the device code.
#pragma once

#include <cmath>

#include "src/pb_numerics/pb_multigrid_math.h"

#if defined(__CUDACC__)
#define ESPGRID_NL_HD __host__ __device__ __forceinline__
#else
#define ESPGRID_NL_HD inline
#endif

namespace espgrid::pb {

/// APBS's exponent limit (mypdec.h SINH_MAX; vcap.h EXPMAX for the energy): e^85 ≈ 8.2e36.
constexpr double kExponentLimit = 85.0;
/// APBS's ZSMALL / ZLARGE: below this |αzc| the exponent is scaled down (see above).
constexpr double kTinyCoefficient = 1e-20;
/// The most ion species the nonlinear term carries (APBS allows 50; a kernel argument stays small).
constexpr int kMaxIonSpecies = 16;

/// The ion species of the Boltzmann term as plain numbers (a kernel argument).
struct BoltzmannSpecies {
  int count = 0;
  double charge[kMaxIonSpecies] = {};  ///< zₛ, e
  double weight[kMaxIonSpecies] = {};  ///< αₛ = cₛ / (2I): Σ αₛ zₛ² = 1
};

/// The exponent's scale at a node: 1, or APBS's |αzc|·1e20 where that is below 1; 0 where c = 0.
ESPGRID_NL_HD double exponent_scale(double coefficient) {
  const double a = std::fabs(coefficient);
  return (a < kTinyCoefficient ? a : kTinyCoefficient) * (1.0 / kTinyCoefficient);
}

ESPGRID_NL_HD double clamp_exponent(double t) {
  return t > kExponentLimit ? kExponentLimit : (t < -kExponentLimit ? -kExponentLimit : t);
}

/// N(u) = c·n(u) at a node of mass c (0 where c = 0).
ESPGRID_NL_HD double boltzmann_value(const BoltzmannSpecies& ions, double c, double u) {
  double sum = 0.0;
  for (int s = 0; s < ions.count; ++s) {
    const double coefficient = -ions.weight[s] * ions.charge[s] * c;
    sum += coefficient * std::exp(exponent_scale(coefficient) * clamp_exponent(-ions.charge[s] * u));
  }
  return sum;
}

/// dN/du = c·n'(u) ≥ 0 (the Jacobian's diagonal term): beyond the clip the exponential is constant,
/// and its slope is 0 there.
ESPGRID_NL_HD double boltzmann_slope(const BoltzmannSpecies& ions, double c, double u) {
  double sum = 0.0;
  for (int s = 0; s < ions.count; ++s) {
    const double coefficient = -ions.weight[s] * ions.charge[s] * c;
    const double scale = exponent_scale(coefficient);
    const double t = -ions.charge[s] * u;
    if (t > kExponentLimit || t < -kExponentLimit) continue;
    sum += ions.weight[s] * ions.charge[s] * ions.charge[s] * c * scale * std::exp(scale * t);
  }
  return sum;
}

/// Whether the exponent is clipped at this node for some species (APBS counts these as "trapped
/// exp overflows").
ESPGRID_NL_HD bool boltzmann_clipped(const BoltzmannSpecies& ions, double c, double u) {
  if (c == 0.0) return false;
  for (int s = 0; s < ions.count; ++s)
    if (std::fabs(ions.charge[s] * u) > kExponentLimit) return true;
  return false;
}

/// G(t) − G(t0) − (t − t0)·G'(t0) for G' = exp(s·clamp(t)): the second-order remainder of one
/// species' energy, ≥ 0, computed without cancellation where both ends are inside the clip.
ESPGRID_NL_HD double exponential_remainder(double scale, double t0, double t1) {
  const double lim = kExponentLimit;
  const double g0 = std::exp(scale * clamp_exponent(t0));
  if (t0 >= -lim && t0 <= lim && t1 >= -lim && t1 <= lim) {
    const double d = scale * (t1 - t0);
    return g0 * (std::expm1(d) - d) / scale;
  }
  // G(t) itself, piecewise: exponential inside the clip, its tangent line beyond.
  const auto primitive = [scale, lim](double t) {
    if (t > lim) return std::expm1(scale * lim) / scale + std::exp(scale * lim) * (t - lim);
    if (t < -lim) return std::expm1(-scale * lim) / scale + std::exp(-scale * lim) * (t + lim);
    return std::expm1(scale * t) / scale;
  };
  return primitive(t1) - primitive(t0) - (t1 - t0) * g0;
}

/// c·[B(u + h) − B(u) − h·n(u)]: what the node adds to the energy's change along a step h beyond the
/// linear term (≥ 0).
ESPGRID_NL_HD double boltzmann_remainder(const BoltzmannSpecies& ions, double c, double u, double h) {
  if (c == 0.0 || h == 0.0) return 0.0;
  double sum = 0.0;
  for (int s = 0; s < ions.count; ++s) {
    const double z = ions.charge[s];
    const double scale = exponent_scale(-ions.weight[s] * z * c);
    sum += ions.weight[s] * c * exponential_remainder(scale, -z * u, -z * (u + h));
  }
  return sum;
}

/// The conductances' part of the operator at an interior node, (A₀x)ᵢ = Σ_faces w (xᵢ − x_nb):
/// the linear operator without its mass term, which the nonlinear term replaces.
ESPGRID_NL_HD double conductance_row(const MgOperator& a, const double* x, long idx) {
  const long sy = a.sy(), sz = a.sz();
  const double w = a.wx[idx - 1] + a.wx[idx] + a.wy[idx - sy] + a.wy[idx] + a.wz[idx - sz] + a.wz[idx];
  return w * x[idx] - neighbour_sum(a, x, idx);
}

}  // namespace espgrid::pb
