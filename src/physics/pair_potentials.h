// The physics of a map as small evaluator types (the pattern of HOOMD-blue's pair evaluators):
//
//   φ(point) = (k/ε) Σ_atoms q · f(r),   r² = |point − atom|² + a²  (a: softening length)
//
// Each evaluator gives q·f(r) from r², written once over a Math policy that says how the
// backend evaluates the primitives (reciprocal square root, reciprocal, exponential): the CPU
// kernels instantiate it with HostMath and Real = float (correctly rounded operations), the
// CUDA kernels with kernels/device_common.cuh's DeviceMath (one MUFU instruction each), and the
// double-precision oracle with HostMath and Real = double. Evaluators also give f(r), |f'(r)|
// and the float32 rounding of one term in double: the scales of the oracle's error bound.
// Adding a model: see docs/ARCHITECTURE.md.
//
// C++17 and header-only: nvcc compiles it into the device code.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "src/core/errors.h"
#include "src/core/number_parsing.h"
#include "src/core/text_format.h"

// Evaluators are always inlined, on the host too: cpu-simd instantiates them on vectors inside
// per-target code (Highway), and a term left out of line is compiled without that target's
// attributes, passes its vectors through memory and calls back for every operation.
#if defined(__CUDACC__)
#define ESPGRID_HOSTDEVICE __host__ __device__ __forceinline__
#else
#define ESPGRID_HOSTDEVICE inline __attribute__((always_inline))
#endif

namespace espgrid {

/// Which f(r) a map sums (r in Å): the evaluator's place in PairModels. Plain data: it travels in
/// GridSumProblem to every backend. The built-in models are named; models appended to PairModels
/// take the next numbers.
enum class PairModel : int {
  Coulomb = 0,   ///< f = 1/r: Coulomb's law in a uniform medium of permittivity ε
  Distance = 1,  ///< f = 1/r² (r/Å as the dielectric's distance factor): ε(r) = ε·r, ChimeraX's default
  Debye = 2,     ///< f = e^(−κr)/r: Debye–Hückel screening by an ionic strength I
};

/// Parameters of the pair models, plain data passed to the device by value.
struct PairParameters {
  float kappa = 0;  ///< Debye: inverse screening length κ, 1/Å
  float exp2_scale = 0;  ///< Debye: −κ·log₂e, 1/Å, so that e^(−κr) = 2^(exp2_scale·r): one multiply fewer per pair
  /// A model's own parameters beyond κ, in the order its evaluator's pair_parameters fills them
  /// (the evaluator says what each holds: the test model's softening width² in own[0], Å²).
  float own[2] = {0, 0};
};

/// A model's own parameter, beyond the medium (dielectric, temperature, ionic strength): a
/// Physics option --NAME, checked against [min, max] and recorded in every file.
struct ModelParameter {
  const char* name;  ///< option name, e.g. "softening-width"
  const char* help;
  const char* unit;  ///< "Å", "1/Å", ... (ASCII in file headers)
  double fallback;   ///< the value when the option is not given
  double min, max;
};

/// The Debye–Hückel inverse screening length κ, 1/Å, for an ionic strength (mol/L), relative
/// permittivity and temperature (K); defined in physics_options.cpp.
double debye_kappa(double ionic_strength, double dielectric, double temperature);

/// The Debye parameters for κ (1/Å).
inline PairParameters debye_parameters(double kappa) {
  PairParameters p;
  p.kappa = static_cast<float>(kappa);
  p.exp2_scale = static_cast<float>(-kappa * 1.4426950408889634);  // log₂e
  return p;
}

/// 2^x for x ≤ 0 in float32 from adds, multiplies and integer operations only: x = n + f with
/// n = round(x) by adding 1.5·2²³ (the sum's low mantissa bits are then n: no float-to-int
/// conversion, which would run on the GPU's SFU and defeat the purpose there, and SSE2
/// vectorizes it, unlike floor) and |f| ≤ 1/2; 2^f by its Taylor polynomial of degree 7 in
/// Horner form (truncation ≤ 5e-9 relative, below float's 6e-8 ulp: ≤ 3 ulp with rounding);
/// then times 2^n built in the exponent bits. Arguments below −126 give 0 (flushed, as on the
/// GPU with --ftz). Written out rather than calling exp2f so that the CPU loops vectorize
/// (libm's vector exp2f is only declared under -ffast-math), a scalar loop gives the same bits
/// as a vector one, every machine gives the same map, and the GPU can run it on its FMA pipe.
ESPGRID_HOSTDEVICE float exp2_polynomial(float x) {
  x = x < -127.0f ? -127.0f : (x > 0.0f ? 0.0f : x);
  constexpr float kRound = 12582912.0f;  // 1.5·2²³
  const float shifted = x + kRound;      // exact integer n = round(x) in the low mantissa bits
  const float n = shifted - kRound;
  const float f = x - n;  // exact: |f| ≤ 1/2
  // ln2^k / k!, k = 7 .. 1, then 1.
  float p = 1.5252733804059841e-05f;
  p = p * f + 1.5403530393381609e-04f;
  p = p * f + 1.3333558146428443e-03f;
  p = p * f + 9.6181291076284772e-03f;
  p = p * f + 5.5504108664821580e-02f;
  p = p * f + 2.4022650695910071e-01f;
  p = p * f + 6.9314718055994531e-01f;
  p = p * f + 1.0f;
  std::int32_t shifted_bits;
#if defined(__CUDA_ARCH__)
  shifted_bits = __float_as_int(shifted);
#else
  std::memcpy(&shifted_bits, &shifted, sizeof shifted_bits);
#endif
  // n + 127 is 2^n's biased exponent: 0 for n = −127, i.e. 2^n flushes to 0.
  const std::int32_t exponent_bits = (shifted_bits - 0x4B400000 + 127) << 23;
  float scale;
#if defined(__CUDA_ARCH__)
  scale = __int_as_float(exponent_bits);
#else
  std::memcpy(&scale, &exponent_bits, sizeof scale);
#endif
  return p * scale;
}

/// Host arithmetic. Division and square root are IEEE, each correctly rounded; the float
/// exponential is exp2_polynomial (≤ 3 ulp, vectorizable, the same on every machine), the
/// double one libm's. With Real = float it is what cpu-reference computes; with Real = double
/// it is the oracle.
struct HostMath {
  template <class Real>
  static Real over_sqrt(Real q, Real r2) {
    return q / std::sqrt(r2);
  }
  template <class Real>
  static Real over(Real q, Real r2) {
    return q / r2;
  }
  template <class Real>
  static Real rsqrt(Real x) {
    return Real(1) / std::sqrt(x);
  }
  static float exp2(float x) { return exp2_polynomial(x); }
  static double exp2(double x) { return std::exp2(x); }
};

/// f(r) = 1/r.
struct CoulombPotential {
  static constexpr PairModel model = PairModel::Coulomb;
  static constexpr std::string_view name = "coulomb";
  static constexpr std::string_view help =
      "phi = k sum q / (eps r): the bare sum in a uniform medium (VMD volmap coulomb). Near a\n"
      "charged protein it is hundreds of kT/e everywhere: a surface coloured by it is one colour.";
  static constexpr bool screened = false;  ///< takes --ionic-strength
  static constexpr std::array<ModelParameter, 0> parameters{};
  template <class Physics>
  static PairParameters pair_parameters(const Physics&) {
    return {};
  }
  /// The model with its parameters, for summaries ("coulomb").
  template <class Physics>
  static std::string describe(const Physics&) {
    return std::string(name);
  }
  /// What file headers add after "Potential in U (T = X K), dielectric E": nothing, the line
  /// espgrid has always written (readers that parse it keep working).
  template <class Physics>
  static std::string header(const Physics&) {
    return "";
  }
  template <class Physics>
  static bool parse_header(std::string_view rest, Physics&) {
    return rest.empty();
  }
  /// q·f(r) from r² (Å², softening included), in the backend's arithmetic: one rsqrt (or IEEE
  /// sqrt and division) and one multiply, which a sum contracts into one FMA.
  template <class Math, class Real>
  ESPGRID_HOSTDEVICE static Real term(Real q, Real r2, const PairParameters&) {
    return Math::over_sqrt(q, r2);
  }
  /// f(r), 1/Å, in double.
  static double value(double r2, const PairParameters&) { return 1.0 / std::sqrt(r2); }
  /// |f'(r)|, 1/Å²: how far f moves per Å of position error.
  static double slope(double r2, const PairParameters&) { return 1.0 / r2; }
  /// Relative float32 rounding of one term, ulp: rsqrt ≤ 2, the products and r² a few more.
  static double term_ulps(double, const PairParameters&) { return 8.0; }
  /// term_ulps averaged over a sum's terms weighted by |q|·f: for kernel-to-kernel bounds
  /// where only the magnitude map Σ|q|·f is known.
  static double typical_term_ulps(const PairParameters&) { return 8.0; }
};

/// f(r) = 1/r²: the Coulomb potential in a medium whose permittivity grows linearly with
/// distance, ε(r) = ε·r (r in Å). ChimeraX's `coulombic` default is ε = 4.
struct DistancePotential {
  static constexpr PairModel model = PairModel::Distance;
  static constexpr std::string_view name = "distance";
  static constexpr std::string_view help =
      "phi = k sum q / (eps r^2), a distance-dependent dielectric eps(r) = eps r (r in A):\n"
      "ChimeraX's `coulombic` default with --dielectric 4, usually coloured at +-10 kcal/mol/e.\n"
      "Screens without an electrolyte; cheap (one reciprocal per pair, like coulomb).";
  static constexpr bool screened = false;
  static constexpr std::array<ModelParameter, 0> parameters{};
  template <class Physics>
  static PairParameters pair_parameters(const Physics&) {
    return {};
  }
  template <class Physics>
  static std::string describe(const Physics& physics) {
    return "distance (epsilon(r) = " + number_text(physics.dielectric) + " r)";
  }
  template <class Physics>
  static std::string header(const Physics&) {
    return std::string(kHeader);
  }
  template <class Physics>
  static bool parse_header(std::string_view rest, Physics&) {
    return rest.substr(0, 16) == kHeader.substr(0, 16);  // ", model distance", whatever follows
  }
  static constexpr std::string_view kHeader = ", model distance (epsilon(r) = epsilon r, r in A)";
  /// One reciprocal (IEEE division, or one MUFU.RCP) and one multiply: Coulomb's cost.
  template <class Math, class Real>
  ESPGRID_HOSTDEVICE static Real term(Real q, Real r2, const PairParameters&) {
    return Math::over(q, r2);
  }
  static double value(double r2, const PairParameters&) { return 1.0 / r2; }
  static double slope(double r2, const PairParameters&) { return 2.0 / (r2 * std::sqrt(r2)); }
  /// rcp ≤ 1 ulp and r² rounding: within Coulomb's budget.
  static double term_ulps(double, const PairParameters&) { return 8.0; }
  static double typical_term_ulps(const PairParameters&) { return 8.0; }
};

/// f(r) = e^(−κr)/r: Debye–Hückel screening (the linearized Poisson–Boltzmann potential of a
/// point charge in an electrolyte; HOOMD-blue's Yukawa pair). κ = 0 is Coulomb.
struct DebyePotential {
  static constexpr PairModel model = PairModel::Debye;
  static constexpr std::string_view name = "debye";
  static constexpr std::string_view help =
      "phi = k sum q exp(-kappa r) / (eps r), Debye-Hueckel screening by --ionic-strength I\n"
      "(mol/L; kappa from I, eps and T: Debye length 7.86 A at 0.15 M, eps 78.54, 298.15 K).\n"
      "With --dielectric 78.54 --ionic-strength 0.15 the values are on APBS's +-5 kT/e\n"
      "scale. Two special functions per pair: about half coulomb's speed on a GPU.";
  static constexpr bool screened = true;
  static constexpr std::array<ModelParameter, 0> parameters{};
  template <class Physics>
  static PairParameters pair_parameters(const Physics& physics) {
    return debye_parameters(debye_kappa(physics.ionic_strength, physics.dielectric, physics.temperature));
  }
  template <class Physics>
  static std::string describe(const Physics& physics) {
    const double kappa = debye_kappa(physics.ionic_strength, physics.dielectric, physics.temperature);
    return "debye (I = " + number_text(physics.ionic_strength) + " M, Debye length " +
           (kappa > 0 ? short_fixed(1.0 / kappa, 2) + " A" : std::string("infinite")) + ")";
  }
  template <class Physics>
  static std::string header(const Physics& physics) {
    return std::string(kHeader) + shortest_text(physics.ionic_strength) + " M";
  }
  template <class Physics>
  static bool parse_header(std::string_view rest, Physics& physics) {
    if (rest.substr(0, kHeader.size()) != kHeader || rest.size() < kHeader.size() + 2 ||
        rest.substr(rest.size() - 2) != " M")
      return false;
    const std::string number(rest.substr(kHeader.size(), rest.size() - kHeader.size() - 2));
    const std::optional<double> strength = parse_number(number);  // std::from_chars: any locale
    if (!strength || !std::isfinite(*strength)) return false;
    physics.ionic_strength = *strength;
    return true;
  }
  static constexpr std::string_view kHeader = ", model debye, ionic strength ";
  /// rsqrt, then r = r²·(1/r) and the exponential as 2^(−κ·log₂e·r): two special functions
  /// per pair (MUFU.RSQ and MUFU.EX2 on the GPU), so at most half of Coulomb's rate where the
  /// SFU is the limit.
  template <class Math, class Real>
  ESPGRID_HOSTDEVICE static Real term(Real q, Real r2, const PairParameters& pair) {
    const Real inv_r = Math::rsqrt(r2);
    const Real r = r2 * inv_r;
    return q * inv_r * Math::exp2(static_cast<Real>(pair.exp2_scale) * r);
  }
  static double value(double r2, const PairParameters& pair) {
    const double r = std::sqrt(r2);
    return std::exp(-static_cast<double>(pair.kappa) * r) / r;
  }
  static double slope(double r2, const PairParameters& pair) {
    const double r = std::sqrt(r2);
    return std::exp(-static_cast<double>(pair.kappa) * r) * (1.0 / r2 + static_cast<double>(pair.kappa) / r);
  }
  /// The exponential's float32 argument x = −κr·log₂e carries half an ulp of its size, which
  /// moves 2^x by |x|·ln2·2⁻²⁴ relative: about |κr|/2 ulp, |κr| ulp with the rounding of the
  /// product itself. Add the exponential's own error (ex2.approx ≤ 2 ulp, exp2_polynomial ≤ 3),
  /// rsqrt's and the products': 10 + |κr| ulp bounds a term; cuda-dualpipe's exponential chain
  /// (kernels/tile_loop.cuh) adds up to 2 ulp for each of its ≤ 3 steps: 16 + |κr|.
  static double term_ulps(double r2, const PairParameters& pair) {
    return 16.0 + static_cast<double>(pair.kappa) * std::sqrt(r2);
  }
  /// Weighted by |q|·e^(−κr)/r over a uniform density of atoms, the mean of κr is
  /// κ∫r²e^(−κr)dr / ∫r e^(−κr)dr = 2; 4 leaves room for atoms clustered far away.
  static double typical_term_ulps(const PairParameters&) { return 16.0 + 4.0; }
};

/// The pair models, in PairModel order: what the kernels instantiate and the options, formats
/// and summaries iterate.
template <class... Potentials>
struct ModelList {
  static constexpr int size = sizeof...(Potentials);
};
}  // namespace espgrid
#ifdef ESPGRID_EXTRA_MODEL_HEADER
#include ESPGRID_EXTRA_MODEL_HEADER  // defines more evaluators and ESPGRID_EXTRA_MODELS: ", Model1, Model2"
#endif
namespace espgrid {
#ifndef ESPGRID_EXTRA_MODELS
#define ESPGRID_EXTRA_MODELS
#endif
using PairModels = ModelList<CoulombPotential, DistancePotential, DebyePotential ESPGRID_EXTRA_MODELS>;
inline constexpr int kPairModelCount = PairModels::size;

namespace detail {
template <class... Potentials>
constexpr bool numbered_in_order(ModelList<Potentials...>) {
  int index = 0;
  return ((static_cast<int>(Potentials::model) == index++) && ...);
}
template <class... Potentials, class Body>
void for_each(ModelList<Potentials...>, Body&& body) {
  (body(Potentials{}), ...);
}
}  // namespace detail
static_assert(detail::numbered_in_order(PairModels{}), "each model's PairModel value is its place in PairModels");

/// Calls `body(Evaluator{})` for every model, in PairModel order (host code: options, formats).
template <class Body>
void for_each_pair_model(Body&& body) {
  detail::for_each(PairModels{}, body);
}

/// with_pair_potential over an explicit list (the first model whose value is `model`).
template <class First, class... Rest, class Body>
decltype(auto) with_pair_potential_in(ModelList<First, Rest...>, PairModel model, Body&& body) {
  if (model == First::model) return body(First{});
  if constexpr (sizeof...(Rest) > 0) {
    return with_pair_potential_in(ModelList<Rest...>{}, model, body);
  } else {
    throw Error("unknown pair model " + std::to_string(static_cast<int>(model)));
    return body(First{});  // never reached: gives the function its return type
  }
}

/// Calls `body(Evaluator{})` with the evaluator type of `model`, for the CPU loops, the oracle
/// and the CUDA launch functions alike: the one place the run-time model becomes a template
/// argument. Every model in PairModels is instantiated; an unknown value is an Error.
template <class Body>
decltype(auto) with_pair_potential(PairModel model, Body&& body) {
  return with_pair_potential_in(PairModels{}, model, body);
}

/// The same switch restricted to `Potentials...`: a kernel family instantiated for some models
/// only (its registry entry's ModelSet lists them) dispatches with this, so the others are never
/// compiled for it. Any other model is an Error (the registry refuses it before a launch).
template <class... Potentials, class Body>
void with_pair_potential_among(PairModel model, Body&& body) {
  const bool found = ((model == Potentials::model ? (body(Potentials{}), true) : false) || ...);
  if (!found)
    throw Error("internal error: pair model " + std::to_string(static_cast<int>(model)) +
                " is not instantiated for this kernel");
}

}  // namespace espgrid
