// Physical constants and potential units. Kernels sum q/r with q already multiplied by
// k/ε (see coulomb_factor), so every kernel writes the map directly in the chosen unit.
#pragma once

#include <string>

namespace espgrid {

enum class PotentialUnit { KTPerE, KcalPerMolPerE, Volt };

struct PhysicsOptions {
  PotentialUnit unit = PotentialUnit::KTPerE;
  double dielectric = 1.0;      ///< relative permittivity ε of the uniform medium
  double temperature = 298.15;  ///< K; only used by kT/e
};

// CODATA 2018 exact and recommended values.
inline constexpr double kElementaryCharge = 1.602176634e-19;  ///< C
inline constexpr double kVacuumPermittivity = 8.8541878128e-12;  ///< F/m
inline constexpr double kBoltzmann = 1.380649e-23;            ///< J/K
inline constexpr double kAvogadro = 6.02214076e23;            ///< 1/mol
inline constexpr double kPi = 3.14159265358979323846;

/// e / (4π ε0 · 1 Å) in volts: potential of one elementary charge at 1 Å, ≈ 14.399645 V.
inline constexpr double kCoulombVoltAngstrom =
    kElementaryCharge / (4.0 * kPi * kVacuumPermittivity * 1e-10);
/// The same in kcal/(mol·e), ≈ 332.0637.
inline constexpr double kCoulombKcalAngstrom =
    kCoulombVoltAngstrom * kElementaryCharge * kAvogadro / 4184.0;

/// Softening length a, Å. Every kernel evaluates q / sqrt(r² + a²), so a grid point on top
/// of an atom gives a large finite value (q/a) instead of inf or NaN. With a = 1e-4 Å the
/// change is below float32 resolution for r > 0.35 Å and below 5e-5 relative for r > 0.01 Å.
inline constexpr double kSofteningLength = 1.0e-4;

/// k/ε: multiply Σ q/r (q in e, r in Å) by this to get the potential in `options.unit`.
double coulomb_factor(const PhysicsOptions& options);

/// "kT/e", "kcal/mol/e", "V".
std::string unit_name(PotentialUnit unit);
/// Parses "kT/e", "kcal/mol/e" (also "kcal/(mol*e)"), "V"; throws UsageError otherwise.
PotentialUnit parse_unit(const std::string& text);
/// Smallest relative permittivity and temperature accepted: with them k/ε stays below
/// about 2e11 in every unit, so charges times k/ε and their sums stay finite in float32.
inline constexpr double kMinDielectric = 1.0e-3;
inline constexpr double kMinTemperature = 1.0e-3;  ///< K

/// Throws UsageError unless dielectric and temperature are finite and at least the minima above.
void validate(const PhysicsOptions& options);

}  // namespace espgrid
