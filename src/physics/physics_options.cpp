#include "src/physics/physics_options.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "src/core/errors.h"
#include "src/core/text_format.h"

namespace espgrid {

double coulomb_factor(const PhysicsOptions& options) {
  return coulomb_constant(options.unit, options.temperature) / options.dielectric;
}

PairParameters pair_parameters(const PhysicsOptions& options) {
  return with_pair_potential(options.model, [&](auto potential) { return potential.pair_parameters(options); });
}

void PhysicsOptions::set_parameter(const std::string& name, double value) {
  for (ModelParameterValue& v : model_parameters)
    if (v.name == name) {
      v.value = value;
      return;
    }
  model_parameters.push_back({name, value});
}

double debye_kappa(double ionic_strength, double dielectric, double temperature) {
  const double kappa2 = 2.0 * kAvogadro * kElementaryCharge * kElementaryCharge * (1000.0 * ionic_strength) /
                        (kVacuumPermittivity * dielectric * kBoltzmann * temperature);  // 1/m²
  return std::sqrt(kappa2) * 1e-10;                                                     // 1/Å
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
  if (options.is_pb()) {  // its ionic strength is options.pb's
    validate(options.pb);
    return;
  }
  const bool screened = with_pair_potential(options.model, [](auto potential) { return potential.screened; });
  if (options.ionic_strength != 0 && !screened) {
    std::string screened_models;
    for_each_pair_model([&](auto potential) {
      if (potential.screened) screened_models += (screened_models.empty() ? "" : " or ") + std::string(potential.name);
    });
    throw UsageError("--ionic-strength applies to --model " + screened_models + " (the " + model_name(options.model) +
                     " model has no electrolyte)");
  }
  for (const ModelParameterValue& given : options.model_parameters) {
    bool own = false;
    with_pair_potential(options.model, [&](auto potential) {
      for (const ModelParameter& p : potential.parameters) {
        if (given.name != p.name) continue;
        own = true;
        if (!std::isfinite(given.value) || given.value < p.min || given.value > p.max)
          throw UsageError("--" + given.name + " must be " + number_text(p.min) + " to " + number_text(p.max) + " " +
                           p.unit + ", got " + number_text(given.value));
      }
    });
    if (!own) {
      std::string owners;
      for_each_pair_model([&](auto potential) {
        for (const ModelParameter& p : potential.parameters)
          if (given.name == p.name) owners += (owners.empty() ? "" : " or ") + std::string(potential.name);
      });
      throw UsageError("--" + given.name + " applies to --model " + owners + " (not to " + model_name(options.model) +
                       ")");
    }
  }
}

std::string model_name(PairModel model) {
  try {
    return with_pair_potential(model, [](auto potential) { return std::string(potential.name); });
  } catch (const Error&) {
    return "?";
  }
}

PairModel parse_model(const std::string& text) {
  std::optional<PairModel> found;
  std::string names;
  for_each_pair_model([&](auto potential) {
    if (text == potential.name) found = potential.model;
    names += (names.empty() ? "" : ", ") + std::string(potential.name);
  });
  if (!found) throw UsageError("unknown model '" + text + "' (use " + names + ")");
  return *found;
}

std::string model_label(const PhysicsOptions& options) { return options.is_pb() ? "pb" : model_name(options.model); }

std::string describe_model(const PhysicsOptions& o) {
  if (o.is_pb()) return "pb (" + describe(o.pb) + ")";
  return with_pair_potential(o.model, [&](auto potential) { return potential.describe(o); });
}

std::string model_header(const PhysicsOptions& o) {
  if (o.is_pb()) return ", model pb: " + describe(o.pb);
  return with_pair_potential(o.model, [&](auto potential) { return potential.header(o); });
}

bool parse_model_header(std::string_view text, PhysicsOptions& o) {
  if (text.rfind(", model pb", 0) == 0) {  // a Poisson-Boltzmann map (its parameters are not read back)
    o.method = MapMethod::PoissonBoltzmann;
    o.pb.solute_dielectric = o.dielectric;
    o.pb.temperature = o.temperature;
    return true;
  }
  bool parsed = false;
  for_each_pair_model([&](auto potential) {
    if (parsed) return;
    PhysicsOptions trial = o;
    trial.model = potential.model;
    if (potential.parse_header(text, trial)) {
      o = trial;
      parsed = true;
    }
  });
  return parsed;
}

std::string model_help() {
  std::string text = "Models (--model):\n";
  for_each_pair_model([&](auto potential) {
    std::string name(potential.name);
    name.resize(std::max<std::size_t>(name.size() + 1, 10), ' ');
    std::string_view help = potential.help;
    bool first = true;
    while (!help.empty()) {
      const std::size_t end = std::min(help.find('\n'), help.size());
      text += (first ? "  " + name : std::string(12, ' ')) + std::string(help.substr(0, end)) + "\n";
      help.remove_prefix(std::min(end + 1, help.size()));
      first = false;
    }
  });
  // Poisson-Boltzmann is a field solve, not a pair model (src/pb/).
  return text +
         "  pb        the linearized Poisson-Boltzmann equation solved on the map's grid (APBS mg-manual's\n"
         "            definitions and defaults): solute --dielectric (default 2 with pb), --solvent-dielectric\n"
         "            78.54, --ionic-strength (default 0.15 M with pb) of ions of --ion-radius 2 A (or --ion\n"
         "            species), --surface smol|mol|spl2|spl4 with --probe-radius 1.4 A, --boundary mdh|sdh|zero,\n"
         "            --charge-method spl2|spl0|spl4; reports APBS's total energy (--pb-energy). The low\n"
         "            dielectric interior and the solvent boundary's shape: what no pair model has. Costs a\n"
         "            field solve (hypre on the CPU, espgrid's multigrid on a GPU); docs/pb.md.\n"
         "  For molecular surfaces coloured like APBS use pb (or, cheaper, debye); for the textbook sum (and\n"
         "  exact comparison with other DCS codes) coulomb. README.md, section 'Pair models, and how close\n"
         "  they come to Poisson-Boltzmann', has the pair models' measured agreement with APBS.\n";
}

}  // namespace espgrid
