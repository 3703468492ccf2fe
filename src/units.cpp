#include "src/units.h"

#include <cctype>
#include <cmath>

#include "src/errors.h"

namespace espgrid {

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
  if (!std::isfinite(options.dielectric) || options.dielectric <= 0.0)
    throw UsageError("dielectric must be a positive number, got " + std::to_string(options.dielectric));
  if (!std::isfinite(options.temperature) || options.temperature <= 0.0)
    throw UsageError("temperature must be a positive number of kelvin, got " + std::to_string(options.temperature));
}

}  // namespace espgrid
