#include "src/physics/pb_options.h"

#include <algorithm>
#include <cmath>

#include "src/core/errors.h"
#include "src/core/number_parsing.h"
#include "src/core/text_format.h"
#include "src/core/text_parsing.h"
#include "src/physics/apbs_constants.h"
#include "src/physics/physics_options.h"

namespace espgrid {

std::string surface_name(PbSurface surface) {
  switch (surface) {
    case PbSurface::Mol:
      return "mol";
    case PbSurface::Smol:
      return "smol";
    case PbSurface::Spline:
      return "spl2";
    case PbSurface::Spline4:
      return "spl4";
  }
  return "?";
}

PbSurface parse_surface(const std::string& text) {
  for (const PbSurface s : {PbSurface::Mol, PbSurface::Smol, PbSurface::Spline, PbSurface::Spline4})
    if (text == surface_name(s)) return s;
  throw UsageError("--surface must be mol, smol, spl2 or spl4 (APBS's srfm), got '" + text + "'");
}

std::string equation_name(PbEquation equation) { return equation == PbEquation::Linearized ? "lpbe" : "npbe"; }

PbEquation parse_equation(const std::string& text) {
  if (text == "lpbe") return PbEquation::Linearized;
  if (text == "npbe") return PbEquation::Nonlinear;
  throw UsageError("--pb-equation must be lpbe or npbe, got '" + text + "'");
}

std::string boundary_name(PbBoundary boundary) {
  switch (boundary) {
    case PbBoundary::Zero:
      return "zero";
    case PbBoundary::Sdh:
      return "sdh";
    case PbBoundary::Mdh:
      return "mdh";
    case PbBoundary::Focus:
      return "focus";
  }
  return "?";
}

PbBoundary parse_boundary(const std::string& text) {
  for (const PbBoundary b : {PbBoundary::Zero, PbBoundary::Sdh, PbBoundary::Mdh, PbBoundary::Focus})
    if (text == boundary_name(b)) return b;
  throw UsageError("--boundary must be zero, sdh, mdh or focus (APBS's bcfl), got '" + text + "'");
}

std::string charge_method_name(PbChargeMethod method) {
  switch (method) {
    case PbChargeMethod::Spl0:
      return "spl0";
    case PbChargeMethod::Spl2:
      return "spl2";
    case PbChargeMethod::Spl4:
      return "spl4";
  }
  return "?";
}

PbChargeMethod parse_charge_method(const std::string& text) {
  for (const PbChargeMethod m : {PbChargeMethod::Spl0, PbChargeMethod::Spl2, PbChargeMethod::Spl4})
    if (text == charge_method_name(m)) return m;
  throw UsageError("--charge-method must be spl0, spl2 or spl4 (APBS's chgm), got '" + text + "'");
}

std::string energy_level_name(PbEnergyLevel level) {
  switch (level) {
    case PbEnergyLevel::None:
      return "no";
    case PbEnergyLevel::Total:
      return "total";
    case PbEnergyLevel::Components:
      return "comps";
  }
  return "?";
}

PbEnergyLevel parse_energy_level(const std::string& text) {
  for (const PbEnergyLevel l : {PbEnergyLevel::None, PbEnergyLevel::Total, PbEnergyLevel::Components})
    if (text == energy_level_name(l)) return l;
  throw UsageError("--pb-energy must be no, total or comps (APBS's calcenergy), got '" + text + "'");
}

PbIon parse_ion(const std::string& text, const std::string& option) {
  std::vector<double> v;
  for (const std::string& word : split_commas(text)) {
    const auto number = parse_number(word);
    if (!number || !std::isfinite(*number))
      throw UsageError(option + " expects Z,C,R (valence, mol/L, Å), got '" + text + "'");
    v.push_back(*number);
  }
  if (v.size() != 3) throw UsageError(option + " expects Z,C,R (valence, mol/L, Å), got '" + text + "'");
  return PbIon{v[0], v[1], v[2]};
}

std::vector<PbIon> ion_species(const PbOptions& o) {
  if (!o.ions.empty()) return o.ions;
  if (!(o.ionic_strength > 0)) return {};
  return {PbIon{1.0, o.ionic_strength, o.ion_radius}, PbIon{-1.0, o.ionic_strength, o.ion_radius}};
}

double pb_ionic_strength(const PbOptions& o) {
  double strength = 0;
  for (const PbIon& ion : ion_species(o)) strength += 0.5 * ion.concentration * ion.charge * ion.charge;
  return strength;
}

double pb_ion_radius(const PbOptions& o) {
  double radius = 0;
  for (const PbIon& ion : ion_species(o)) radius = std::max(radius, ion.radius);
  return radius;
}

bool pb_has_ions(const PbOptions& o) { return pb_ionic_strength(o) > kApbsPmgSmall; }

std::string formulation_name(PbFormulation formulation) {
  return formulation == PbFormulation::Split ? "split" : "direct";
}

PbFormulation parse_formulation(const std::string& text) {
  if (text == "split") return PbFormulation::Split;
  if (text == "direct") return PbFormulation::Direct;
  throw UsageError("--pb-formulation must be split or direct, got '" + text + "'");
}

namespace {

void require(bool ok, const std::string& option, const std::string& range, double value) {
  if (!ok) throw UsageError("--" + option + " must be " + range + ", got " + number_text(value));
}

/// The species one by one (valence, concentration, radius in range), then APBS's electroneutrality.
void validate_ions(const PbOptions& o) {
  if (o.ions.size() > 10)
    throw UsageError("--ion: at most 10 ion species (APBS's MAXION), got " + std::to_string(o.ions.size()));
  double net = 0;
  for (const PbIon& ion : o.ions) {
    const std::string which = "--ion " + shortest_text(ion.charge) + "," + shortest_text(ion.concentration) + "," +
                              shortest_text(ion.radius) + ": ";
    if (!std::isfinite(ion.charge) || ion.charge == 0 || std::fabs(ion.charge) > 10)
      throw UsageError(which + "the valence must be a non-zero number of -10 to 10 e");
    if (!std::isfinite(ion.concentration) || ion.concentration < 0 || ion.concentration > kMaxIonicStrength)
      throw UsageError(which + "the concentration must be 0 to 10 mol/L");
    if (!std::isfinite(ion.radius) || ion.radius < 0 || ion.radius > 10)
      throw UsageError(which + "the radius must be 0 to 10 Å");
    net += ion.charge * ion.concentration;
  }
  // APBS (Vpbe_ctor2) refuses a net charge of the bulk above 1e-9 M·e: the bulk must be neutral.
  if (std::fabs(net) > 1e-9)
    throw UsageError("--ion: the species are not electroneutral (sum of valence x concentration = " +
                     shortest_text(net) + " M); add the counter-ions");
  require(pb_ionic_strength(o) <= kMaxIonicStrength, "ion", "species of ionic strength 0 to 10 mol/L",
          pb_ionic_strength(o));
}

}  // namespace

void validate(const PbOptions& o) {
  // The dielectric limits keep the operator's coefficients (ε·area/length) and their ratio
  // (the multigrid's difficulty) within what a double-precision solve handles.
  require(std::isfinite(o.solute_dielectric) && o.solute_dielectric >= 1e-3 && o.solute_dielectric <= 1e4, "dielectric",
          "0.001 to 10000 for --model pb (the solute's)", o.solute_dielectric);
  require(std::isfinite(o.solvent_dielectric) && o.solvent_dielectric >= 1e-3 && o.solvent_dielectric <= 1e4,
          "solvent-dielectric", "0.001 to 10000", o.solvent_dielectric);
  require(std::isfinite(o.ionic_strength) && o.ionic_strength >= 0 && o.ionic_strength <= kMaxIonicStrength,
          "ionic-strength", "0 to 10 mol/L", o.ionic_strength);
  // Radii beyond 10 Å are typing errors (a probe of 14 instead of 1.4): they would also make
  // the surface construction's neighbour search quadratic.
  require(std::isfinite(o.ion_radius) && o.ion_radius >= 0 && o.ion_radius <= 10, "ion-radius", "0 to 10 Å",
          o.ion_radius);
  require(std::isfinite(o.probe_radius) && o.probe_radius >= 0 && o.probe_radius <= 10, "probe-radius", "0 to 10 Å",
          o.probe_radius);
  require(std::isfinite(o.spline_window) && o.spline_window > 0 && o.spline_window <= 5, "surface-window",
          "more than 0 and at most 5 Å", o.spline_window);
  require(std::isfinite(o.surface_density) && o.surface_density > 0 && o.surface_density <= 1000, "surface-density",
          "more than 0 and at most 1000 points per Å²", o.surface_density);
  require(o.sampling == 0 || (o.sampling >= 2 && o.sampling <= 16), "surface-sampling", "0 (APBS's rule) or 2 to 16",
          o.sampling);
  if (o.sampling != 0 && (o.surface == PbSurface::Spline || o.surface == PbSurface::Spline4))
    throw UsageError("--surface-sampling applies to --surface mol and smol (spl2 and spl4 are already smooth)");
  // Below 1e-9 kT/e the float32 sums' own rounding decides every lattice check: ask for 0 (exact).
  require(std::isfinite(o.boundary_accuracy) &&
              (o.boundary_accuracy == 0 || (o.boundary_accuracy >= 1e-9 && o.boundary_accuracy <= 1)),
          "boundary-accuracy", "0 (the exact sum) or 1e-9 to 1 kT/e", o.boundary_accuracy);
  validate_ions(o);
  if (o.formulation == PbFormulation::Split && o.energy.any())
    throw UsageError(
        "PB energies are APBS's, from the spread charges of --pb-formulation direct (split spreads "
        "none): use direct, or --pb-energy no");
  if (o.formulation == PbFormulation::Split && o.charges != PbChargeMethod::Spl2)
    throw UsageError("--charge-method applies to --pb-formulation direct (split spreads no charges)");
  require(std::isfinite(o.temperature) && o.temperature >= kMinTemperature && o.temperature <= 1e5, "temperature",
          "0.001 to 100000 K", o.temperature);
  require(std::isfinite(o.tolerance) && o.tolerance >= 1e-14 && o.tolerance < 1, "pb-tolerance",
          "between 1e-14 and 1 (a relative residual)", o.tolerance);
  require(o.max_iterations >= 1 && o.max_iterations <= 100000, "pb-max-iterations", "1 to 100000", o.max_iterations);
}

double pb_kappa(const PbOptions& o) {
  // APBS: κ² = 8π N_A e² I / (1000 ε_w k_B T) for I = ½ Σ cᵢ zᵢ² (a 1:1 salt: I = c); the same as
  // espgrid's Debye–Hückel κ in the solvent dielectric.
  const double strength = pb_ionic_strength(o);
  return strength > kApbsSmall ? debye_kappa(strength, o.solvent_dielectric, o.temperature) : 0.0;
}

std::string describe(const PbOptions& o) {
  // The defaults' text is what file headers have always said (maps' md5s stay the same).
  std::string text = std::string(o.equation == PbEquation::Linearized ? "linearized" : "nonlinear") + " PB, pdie " +
                     shortest_text(o.solute_dielectric) + ", sdie " + shortest_text(o.solvent_dielectric);
  if (o.ions.empty()) {
    text += ", I " + shortest_text(o.ionic_strength) + " M";
    if (o.ionic_strength > 0) text += " (ion radius " + shortest_text(o.ion_radius) + " A)";
  } else {
    text += ", ions";
    for (std::size_t i = 0; i < o.ions.size(); ++i)
      text += std::string(i ? ";" : "") + " z " + shortest_text(o.ions[i].charge) + " c " +
              shortest_text(o.ions[i].concentration) + " M r " + shortest_text(o.ions[i].radius) + " A";
    text += " (I " + shortest_text(pb_ionic_strength(o)) + " M)";
  }
  text += ", srfm " + surface_name(o.surface);
  if (o.surface == PbSurface::Spline || o.surface == PbSurface::Spline4)
    text += " (swin " + shortest_text(o.spline_window) + " A)";
  else
    text += " (srad " + shortest_text(o.probe_radius) + " A, sdens " + shortest_text(o.surface_density) +
            (o.sampling ? ", sampled " + std::to_string(o.sampling) + "x per spacing" : std::string()) + ")";
  text += o.formulation == PbFormulation::Direct ? ", chgm " + charge_method_name(o.charges)
                                                 : ", Coulomb part summed, not solved (split)";
  text += ", bcfl " + boundary_name(o.boundary);
  return text;
}

}  // namespace espgrid
