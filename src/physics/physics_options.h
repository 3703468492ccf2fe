// What a map means physically: the unit, the medium and the pair model. The CLI, the library
// facade and the Python module all describe a map's physics with this one struct; the output
// files record it (physics/potential_map.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "src/core/units.h"
#include "src/physics/pair_potentials.h"
#include "src/physics/pb_options.h"

namespace espgrid {

/// A value given for a model's own parameter (pair_potentials.h: ModelParameter).
struct ModelParameterValue {
  std::string name;
  double value = 0;
};

/// How a map's potential is obtained: a sum over atoms of a pair model, or a field solve.
enum class MapMethod {
  PairSum,           ///< Σ over atoms of `model`'s pair potential (coulomb, distance, debye, ...)
  PoissonBoltzmann,  ///< `--model pb`: the Poisson–Boltzmann equation solved on the grid (src/pb/)
};

struct PhysicsOptions {
  PotentialUnit unit = PotentialUnit::KTPerE;
  double dielectric = 1.0;      ///< relative permittivity ε of the medium (distance model: ε(r) = ε·r/Å)
  double temperature = 298.15;  ///< K; used by kT/e and by the Debye length
  PairModel model = PairModel::Coulomb;
  double ionic_strength = 0;                          ///< mol/L; the electrolyte of screened models (0 for the others)
  std::vector<ModelParameterValue> model_parameters;  ///< the model's own parameters that were given

  /// The value of the model parameter `p`: given, or its fallback.
  double parameter(const ModelParameter& p) const {
    for (const ModelParameterValue& v : model_parameters)
      if (v.name == p.name) return v.value;
    return p.fallback;
  }
  /// Sets (or replaces) a model parameter's value.
  void set_parameter(const std::string& name, double value);
  /// PairSum: `model` says which pair potential. PoissonBoltzmann (`--model pb`): `model` stays
  /// Coulomb (the direct sums the solve makes), `dielectric` is the solute's, `pb` has the rest.
  MapMethod method = MapMethod::PairSum;
  PbOptions pb;  ///< the PB parameters (pb.solute_dielectric == dielectric, pb.temperature == temperature)
  bool is_pb() const noexcept { return method == MapMethod::PoissonBoltzmann; }
};

/// "pb" for a Poisson-Boltzmann map, else model_name(options.model).
std::string model_label(const PhysicsOptions& options);

/// Softening length a, Å. Every kernel evaluates f at r² + a², so a grid point on top of an
/// atom gives a large finite value (q/a for Coulomb) instead of inf or NaN. With a = 1e-4 Å the
/// change is below float32 resolution for r > 0.35 Å and below 5e-5 relative for r > 0.01 Å.
inline constexpr double kSofteningLength = 1.0e-4;

/// Smallest relative permittivity and temperature accepted: with them k/ε stays below
/// about 2e11 in every unit, so charges times k/ε and their sums stay finite in float32.
inline constexpr double kMinDielectric = 1.0e-3;
inline constexpr double kMinTemperature = 1.0e-3;  ///< K

/// k/ε: multiply Σ q·f(r) (q in e, r in Å) by this to get the potential in `options.unit`.
double coulomb_factor(const PhysicsOptions& options);
/// The model's parameters as the kernels take them.
PairParameters pair_parameters(const PhysicsOptions& options);
/// Largest ionic strength accepted, mol/L (saturated NaCl is about 6 M).
inline constexpr double kMaxIonicStrength = 10.0;
/// Throws UsageError unless dielectric and temperature are finite and at least the minima
/// above, the ionic strength is finite, in [0, kMaxIonicStrength] and set only for a screened
/// model, and every model parameter given is the model's own and within its range.
void validate(const PhysicsOptions& options);

// debye_kappa (pair_potentials.h), the Debye–Hückel inverse screening length κ, 1/Å:
//   κ² = 2 N_A e² (1000 I) / (ε₀ ε k_B T),  I in mol/L (1000 I mol/m³)
// (7.86 Å Debye length at 0.15 M, ε = 78.54, 298.15 K).

/// The model's name ("coulomb", "distance", "debye", ...), from its evaluator.
std::string model_name(PairModel model);
/// Parses a model name (see model_name); throws UsageError listing the models otherwise.
PairModel parse_model(const std::string& text);
/// The model with its parameters, for summaries and file headers: "coulomb",
/// "distance (epsilon(r) = 4 r)", "debye (I = 0.15 M, Debye length 7.86 A)" (ASCII: headers).
std::string describe_model(const PhysicsOptions& options);
/// What file headers add after the medium for the model (its evaluator's header text).
std::string model_header(const PhysicsOptions& options);
/// Reads a model_header text back into `options` (model and parameters); false when no model
/// wrote it.
bool parse_model_header(std::string_view text, PhysicsOptions& options);
/// When to use which model: the text of `espgrid map --help`, from every evaluator's help.
std::string model_help();

}  // namespace espgrid
