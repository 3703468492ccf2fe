// A pair model added in this one file, to prove that a model is one place: the
// Coulomb potential of a smeared charge, f(r) = 1/√(r² + w²), with its own parameter w
// (--softening-width, Å). tests/CMakeLists.txt compiles the core a second time with
// -DESPGRID_EXTRA_MODEL_HEADER naming this file; tests/test_added_model.cpp then checks that
// every kernel templated on the evaluator computes it (against the double oracle), the option
// table offers it and its parameter, and every output format records it.
#pragma once

#include <string>
#include <string_view>

namespace espgrid {

struct SoftenedPotential {
  static constexpr PairModel model = static_cast<PairModel>(3);  // its place in PairModels
  static constexpr std::string_view name = "softened";
  static constexpr std::string_view help =
      "phi = k sum q / (eps sqrt(r^2 + w^2)): charges smeared over --softening-width w (A).\n"
      "A test model: it exists to show that a model added in one file reaches everything.";
  static constexpr bool screened = false;
  static constexpr std::array<ModelParameter, 1> parameters{
      {{"softening-width", "width w of the smeared charges", "A", 1.0, 0.0, 100.0}}};

  template <class Physics>
  static PairParameters pair_parameters(const Physics& physics) {
    PairParameters p;
    const double w = physics.parameter(parameters[0]);
    p.own[0] = static_cast<float>(w * w);  // w², Å²
    return p;
  }
  template <class Physics>
  static std::string describe(const Physics& physics) {
    return "softened (w = " + number_text(physics.parameter(parameters[0])) + " A)";
  }
  template <class Physics>
  static std::string header(const Physics& physics) {
    return std::string(kHeader) + shortest_text(physics.parameter(parameters[0])) + " A";
  }
  template <class Physics>
  static bool parse_header(std::string_view rest, Physics& physics) {
    if (rest.substr(0, kHeader.size()) != kHeader || rest.size() < kHeader.size() + 2) return false;
    const std::string number(rest.substr(kHeader.size(), rest.size() - kHeader.size() - 2));
    char* end = nullptr;
    const double w = std::strtod(number.c_str(), &end);
    if (number.empty() || end != number.c_str() + number.size()) return false;
    physics.set_parameter(parameters[0].name, w);
    return true;
  }
  static constexpr std::string_view kHeader = ", model softened, width ";

  /// q/√(r² + w²): Coulomb's arithmetic on a larger r².
  template <class Math, class Real>
  ESPGRID_HOSTDEVICE static Real term(Real q, Real r2, const PairParameters& pair) {
    return Math::over_sqrt(q, r2 + static_cast<Real>(pair.own[0]));
  }
  static double value(double r2, const PairParameters& pair) { return 1.0 / std::sqrt(r2 + pair.own[0]); }
  static double slope(double r2, const PairParameters& pair) {
    const double s = r2 + pair.own[0];
    return std::sqrt(r2) / (s * std::sqrt(s));
  }
  /// Coulomb's budget plus the rounding of the added w².
  static double term_ulps(double, const PairParameters&) { return 9.0; }
  static double typical_term_ulps(const PairParameters&) { return 9.0; }
};

}  // namespace espgrid

#define ESPGRID_EXTRA_MODELS , SoftenedPotential
