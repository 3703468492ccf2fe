#include "src/physics/physics_options.h"

#include <cmath>

#include "src/core/errors.h"
#include "src/core/text_format.h"

namespace espgrid {

double coulomb_factor(const PhysicsOptions& options) {
  return coulomb_constant(options.unit, options.temperature) / options.dielectric;
}

PairParameters pair_parameters(const PhysicsOptions&) { return PairParameters{}; }

void validate(const PhysicsOptions& options) {
  // Lower limits keep k/ε (and q·k/ε, which the kernels hold in float32) far from float
  // overflow: --dielectric 1e-300 once gave an infinite charge and a NaN map.
  if (!std::isfinite(options.dielectric) || options.dielectric < kMinDielectric)
    throw UsageError("dielectric must be a positive number (at least 0.001), got " + number_text(options.dielectric));
  if (!std::isfinite(options.temperature) || options.temperature < kMinTemperature)
    throw UsageError("temperature must be a positive number of kelvin (at least 0.001), got " +
                     number_text(options.temperature));
}

std::string model_name(PairModel model) {
  switch (model) {
    case PairModel::Coulomb:
      return "coulomb";
  }
  return "?";
}

PairModel parse_model(const std::string& text) {
  if (text == "coulomb") return PairModel::Coulomb;
  throw UsageError("unknown model '" + text + "' (use coulomb)");
}

}  // namespace espgrid
