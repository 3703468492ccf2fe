// Physical constants and potential units. The kernels sum q·f(r) with q already multiplied by
// k/ε (physics/physics_options.h: coulomb_factor), so every kernel writes the map directly in
// the chosen unit.
#pragma once

#include <string>

namespace espgrid {

enum class PotentialUnit { KTPerE, KcalPerMolPerE, Volt };

// CODATA 2018 exact and recommended values.
inline constexpr double kElementaryCharge = 1.602176634e-19;     ///< C
inline constexpr double kVacuumPermittivity = 8.8541878128e-12;  ///< F/m
inline constexpr double kBoltzmann = 1.380649e-23;               ///< J/K
inline constexpr double kAvogadro = 6.02214076e23;               ///< 1/mol
inline constexpr double kPi = 3.14159265358979323846;

/// e / (4π ε0 · 1 Å) in volts: potential of one elementary charge at 1 Å, ≈ 14.399645 V.
inline constexpr double kCoulombVoltAngstrom = kElementaryCharge / (4.0 * kPi * kVacuumPermittivity * 1e-10);
/// The same in kcal/(mol·e), ≈ 332.0637.
inline constexpr double kCoulombKcalAngstrom = kCoulombVoltAngstrom * kElementaryCharge * kAvogadro / 4184.0;

/// Coulomb's constant k in `unit`·Å/e: the potential of 1 e at 1 Å in vacuum. kT/e depends on
/// the temperature (K): k = 560.459 kT·Å/e² at 298.15 K.
double coulomb_constant(PotentialUnit unit, double temperature);

/// "kT/e", "kcal/mol/e", "V".
std::string unit_name(PotentialUnit unit);
/// Parses "kT/e", "kcal/mol/e" (also "kcal/(mol*e)"), "V"; throws UsageError otherwise.
PotentialUnit parse_unit(const std::string& text);

}  // namespace espgrid
