#include "src/core/units.h"

#include <cctype>

#include "src/core/errors.h"

namespace espgrid {

double coulomb_constant(PotentialUnit unit, double temperature) {
  switch (unit) {
    case PotentialUnit::Volt:
      return kCoulombVoltAngstrom;
    case PotentialUnit::KcalPerMolPerE:
      return kCoulombKcalAngstrom;
    case PotentialUnit::KTPerE:
      return kCoulombVoltAngstrom * kElementaryCharge / (kBoltzmann * temperature);
  }
  return kCoulombVoltAngstrom;
}

std::string unit_name(PotentialUnit unit) {
  switch (unit) {
    case PotentialUnit::KTPerE:
      return "kT/e";
    case PotentialUnit::KcalPerMolPerE:
      return "kcal/mol/e";
    case PotentialUnit::Volt:
      return "V";
  }
  return "?";
}

PotentialUnit parse_unit(const std::string& text) {
  std::string s;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c)))
      s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s == "kt/e" || s == "kt") return PotentialUnit::KTPerE;
  if (s == "kcal/mol/e" || s == "kcal/(mol*e)" || s == "kcal/mol") return PotentialUnit::KcalPerMolPerE;
  if (s == "v" || s == "volt" || s == "volts") return PotentialUnit::Volt;
  throw UsageError("unknown unit '" + text + "' (use kT/e, kcal/mol/e or V)");
}

}  // namespace espgrid
