#include "src/physics/physics_options.h"

#include <cmath>

#include "src/core/errors.h"
#include "src/core/text_format.h"

namespace espgrid {

double coulomb_factor(const PhysicsOptions& options) {
  return coulomb_constant(options.unit, options.temperature) / options.dielectric;
}

PairParameters pair_parameters(const PhysicsOptions& options) {
  if (options.model == PairModel::Debye)
    return debye_parameters(debye_kappa(options.ionic_strength, options.dielectric, options.temperature));
  return PairParameters{};
}

double debye_kappa(double ionic_strength, double dielectric, double temperature) {
  const double kappa2 = 2.0 * kAvogadro * kElementaryCharge * kElementaryCharge * (1000.0 * ionic_strength) /
                        (kVacuumPermittivity * dielectric * kBoltzmann * temperature);  // 1/m²
  return std::sqrt(kappa2) * 1e-10;                                                   // 1/Å
}

void validate(const PhysicsOptions& options) {
  // Lower limits keep k/ε (and q·k/ε, which the kernels hold in float32) far from float
  // overflow: --dielectric 1e-300 once gave an infinite charge and a NaN map.
  if (!std::isfinite(options.dielectric) || options.dielectric < kMinDielectric)
    throw UsageError("dielectric must be a positive number (at least 0.001), got " + number_text(options.dielectric));
  if (!std::isfinite(options.temperature) || options.temperature < kMinTemperature)
    throw UsageError("temperature must be a positive number of kelvin (at least 0.001), got " +
                     number_text(options.temperature));
  if (!std::isfinite(options.ionic_strength) || options.ionic_strength < 0 ||
      options.ionic_strength > kMaxIonicStrength)
    throw UsageError("ionic strength must be 0 to 10 mol/L, got " + number_text(options.ionic_strength));
  if (options.poisson_boltzmann) {  // its ionic strength is options.pb's (issue 23)
    validate(options.pb);
    return;
  }
  if (options.ionic_strength != 0 && options.model != PairModel::Debye)
    throw UsageError("--ionic-strength applies to --model debye (the " + model_name(options.model) +
                     " model has no electrolyte)");
}

std::string model_name(PairModel model) {
  switch (model) {
    case PairModel::Coulomb: return "coulomb";
    case PairModel::Distance: return "distance";
    case PairModel::Debye: return "debye";
  }
  return "?";
}

PairModel parse_model(const std::string& text) {
  for (int m = 0; m < kPairModelCount; ++m)
    if (text == model_name(static_cast<PairModel>(m))) return static_cast<PairModel>(m);
  throw UsageError("unknown model '" + text + "' (use coulomb, distance, debye or pb)");
}

std::string model_label(const PhysicsOptions& options) {
  return options.poisson_boltzmann ? "pb" : model_name(options.model);
}

std::string describe_model(const PhysicsOptions& o) {
  if (o.poisson_boltzmann) return "pb (" + describe(o.pb) + ")";
  switch (o.model) {
    case PairModel::Coulomb: return "coulomb";
    case PairModel::Distance: return "distance (epsilon(r) = " + number_text(o.dielectric) + " r)";
    case PairModel::Debye: {
      const double kappa = debye_kappa(o.ionic_strength, o.dielectric, o.temperature);
      return "debye (I = " + number_text(o.ionic_strength) + " M, Debye length " +
             (kappa > 0 ? short_fixed(1.0 / kappa, 2) + " A" : std::string("infinite")) + ")";
    }
  }
  return "?";
}

std::string model_help() {
  return "Models (--model):\n"
         "  coulomb   phi = k sum q / (eps r): the bare sum in a uniform medium (VMD volmap coulomb). Near a\n"
         "            charged protein it is hundreds of kT/e everywhere: a surface coloured by it is one colour.\n"
         "  distance  phi = k sum q / (eps r^2), a distance-dependent dielectric eps(r) = eps r (r in A):\n"
         "            ChimeraX's `coulombic` default with --dielectric 4, usually coloured at +-10 kcal/mol/e.\n"
         "            Screens without an electrolyte; cheap (one reciprocal per pair, like coulomb).\n"
         "  debye     phi = k sum q exp(-kappa r) / (eps r), Debye-Hueckel screening by --ionic-strength I\n"
         "            (mol/L; kappa from I, eps and T: Debye length 7.86 A at 0.15 M, eps 78.54, 298.15 K).\n"
         "            With --dielectric 78.54 --ionic-strength 0.15 the values are on APBS's +-5 kT/e\n"
         "            scale. Two special functions per pair: about half coulomb's speed on a GPU.\n"
         "  pb        the linearized Poisson-Boltzmann equation solved on the map's grid (APBS mg-manual's\n"
         "            definitions and defaults): solute --dielectric (default 2 with pb), --solvent-dielectric\n"
         "            78.54, --ionic-strength (default 0.15 M with pb) of ions of --ion-radius 2 A, --surface\n"
         "            smol|mol|spl2 with --probe-radius 1.4 A, multiple Debye-Hueckel boundary values. The low\n"
         "            dielectric interior and the solvent boundary's shape: what no pair model has. Costs a\n"
         "            field solve (hypre on the CPU, espgrid's multigrid on a GPU); docs/pb.md.\n"
         "  For molecular surfaces coloured like APBS use pb (or, cheaper, debye); for the textbook sum (and\n"
         "  exact comparison with other DCS codes) coulomb. README, 'Physics models', has their measured\n"
         "  agreement with APBS.\n";
}

}  // namespace espgrid
