// The physics of a map as small evaluator types (the pattern of HOOMD-blue's pair evaluators):
//
//   φ(point) = (k/ε) Σ_atoms q · f(r),   r² = |point − atom|² + a²  (a: softening length)
//
// Each evaluator gives q·f(r) from r², written once over a Math policy that says how the
// backend evaluates square roots (and later exponentials): the CPU kernels instantiate it
// with IeeeMath<float> (correctly rounded division and sqrt), the CUDA kernels with
// kernels/device_math.cuh (rsqrtf: one MUFU instruction), and the double-precision oracle
// with IeeeMath<double>. Evaluators also give f(r) and |f'(r)| in double: the scales of the
// oracle's float32 error bound. Adding a model: see docs/ARCHITECTURE.md.
//
// C++17 and header-only: nvcc compiles it into the device code.
#pragma once

#include <cmath>
#include <string>

#include "src/core/errors.h"

#if defined(__CUDACC__)
#define ESPGRID_HOSTDEVICE __host__ __device__ __forceinline__
#else
#define ESPGRID_HOSTDEVICE inline
#endif

namespace espgrid {

/// Which f(r) a map sums. Plain data: it travels in DcsProblem to every backend.
enum class PairModel : int {
  Coulomb = 0,  ///< f(r) = 1/r: vacuum (or uniform-medium) Coulomb potential
};

/// Parameters of the pair models, plain data passed to the device by value.
struct PairParameters {
  float unused = 0;  ///< Coulomb has none; models with parameters add them here
};

/// Host arithmetic: IEEE division and square root, each correctly rounded. With Real = float
/// it is what cpu-reference computes; with Real = double it is the oracle.
struct IeeeMath {
  template <class Real>
  static Real over_sqrt(Real q, Real r2) {
    return q / std::sqrt(r2);
  }
};

/// f(r) = 1/r.
struct CoulombPotential {
  static constexpr PairModel model = PairModel::Coulomb;
  /// q·f(r) from r² (Å², softening included), in the backend's arithmetic.
  template <class Math, class Real>
  ESPGRID_HOSTDEVICE static Real term(Real q, Real r2, const PairParameters&) {
    return Math::over_sqrt(q, r2);
  }
  /// f(r), 1/Å, in double.
  static double value(double r2, const PairParameters&) { return 1.0 / std::sqrt(r2); }
  /// |f'(r)|, 1/Å², in double: how far f moves per Å of position error.
  static double slope(double r2, const PairParameters&) { return 1.0 / r2; }
};

/// Calls `body(Evaluator{})` with the evaluator type of `model`: the one switch that turns
/// the run-time model into a template argument, for the CPU loops, the oracle and the CUDA
/// launch functions alike.
template <class Body>
decltype(auto) with_pair_potential(PairModel model, Body&& body) {
  switch (model) {
    case PairModel::Coulomb:
      return body(CoulombPotential{});
  }
  throw Error("unknown pair model " + std::to_string(static_cast<int>(model)));
}

}  // namespace espgrid
