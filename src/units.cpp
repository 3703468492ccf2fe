#include "src/units.h"

#include <cctype>
#include <cmath>
#include <cstdio>

#include "src/errors.h"

namespace espgrid {
namespace {

/// %g, so that 1e-300 does not print as 0.000000.
std::string number_text(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", value);
  return buffer;
}

}  // namespace

double coulomb_factor(const PhysicsOptions& options) {
  double k = kCoulombVoltAngstrom;  // V·Å/e
  switch (options.unit) {
    case PotentialUnit::Volt: break;
    case PotentialUnit::KcalPerMolPerE: k = kCoulombKcalAngstrom; break;
    case PotentialUnit::KTPerE: k = kCoulombVoltAngstrom * kElementaryCharge / (kBoltzmann * options.temperature); break;
  }
  return k / options.dielectric;
}

std::string unit_name(PotentialUnit unit) {
  switch (unit) {
    case PotentialUnit::KTPerE: return "kT/e";
    case PotentialUnit::KcalPerMolPerE: return "kcal/mol/e";
    case PotentialUnit::Volt: return "V";
  }
  return "?";
}

PotentialUnit parse_unit(const std::string& text) {
  std::string s;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s == "kt/e" || s == "kt") return PotentialUnit::KTPerE;
  if (s == "kcal/mol/e" || s == "kcal/(mol*e)" || s == "kcal/mol") return PotentialUnit::KcalPerMolPerE;
  if (s == "v" || s == "volt" || s == "volts") return PotentialUnit::Volt;
  throw UsageError("unknown unit '" + text + "' (use kT/e, kcal/mol/e or V)");
}

void validate(const PhysicsOptions& options) {
  // Lower limits keep k/ε (and q·k/ε, which the kernels hold in float32) far from float
  // overflow: --dielectric 1e-300 once gave an infinite charge and a NaN map.
  if (!std::isfinite(options.dielectric) || options.dielectric < kMinDielectric)
    throw UsageError("dielectric must be a positive number (at least 0.001), got " + number_text(options.dielectric));
  if (!std::isfinite(options.temperature) || options.temperature < kMinTemperature)
    throw UsageError("temperature must be a positive number of kelvin (at least 0.001), got " +
                     number_text(options.temperature));
}

}  // namespace espgrid
