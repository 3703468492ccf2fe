#include "src/physics/pb_options.h"

#include <cmath>

#include "src/core/errors.h"
#include "src/core/text_format.h"
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
  }
  return "?";
}

PbSurface parse_surface(const std::string& text) {
  for (const PbSurface s : {PbSurface::Mol, PbSurface::Smol, PbSurface::Spline})
    if (text == surface_name(s)) return s;
  throw UsageError("--surface must be mol, smol or spl2 (APBS's srfm), got '" + text + "'");
}

std::string formulation_name(PbFormulation formulation) {
  return formulation == PbFormulation::Split ? "split" : "direct";
}

PbFormulation parse_formulation(const std::string& text) {
  if (text == "split") return PbFormulation::Split;
  if (text == "direct") return PbFormulation::Direct;
  throw UsageError("--pb-formulation must be split or direct, got '" + text + "'");
}

std::string equation_name(PbEquation equation) { return equation == PbEquation::Linearized ? "lpbe" : "npbe"; }

PbEquation parse_equation(const std::string& text) {
  if (text == "lpbe") return PbEquation::Linearized;
  if (text == "npbe") return PbEquation::Nonlinear;
  throw UsageError("--pb-equation must be lpbe or npbe, got '" + text + "'");
}

namespace {

void require(bool ok, const std::string& option, const std::string& range, double value) {
  if (!ok) throw UsageError("--" + option + " must be " + range + ", got " + number_text(value));
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
  if (o.sampling != 0 && o.surface == PbSurface::Spline)
    throw UsageError("--surface-sampling applies to --surface mol and smol (spl2 is already smooth)");
  require(std::isfinite(o.temperature) && o.temperature >= kMinTemperature && o.temperature <= 1e5, "temperature",
          "0.001 to 100000 K", o.temperature);
  require(std::isfinite(o.tolerance) && o.tolerance >= 1e-14 && o.tolerance < 1, "pb-tolerance",
          "between 1e-14 and 1 (a relative residual)", o.tolerance);
  require(o.max_iterations >= 1 && o.max_iterations <= 100000, "pb-max-iterations", "1 to 100000", o.max_iterations);
}

double pb_kappa(const PbOptions& o) {
  // APBS: κ² = 8π N_A e² I / (1000 ε_w k_B T) for I = ½ Σ cᵢ zᵢ² (a 1:1 salt: I = c); the same as
  // espgrid's Debye–Hückel κ in the solvent dielectric.
  return o.ionic_strength > 0 ? debye_kappa(o.ionic_strength, o.solvent_dielectric, o.temperature) : 0.0;
}

std::string describe(const PbOptions& o) {
  std::string text = std::string(o.equation == PbEquation::Linearized ? "linearized" : "nonlinear") + " PB, pdie " +
                     shortest_text(o.solute_dielectric) + ", sdie " + shortest_text(o.solvent_dielectric) + ", I " +
                     shortest_text(o.ionic_strength) + " M";
  if (o.ionic_strength > 0) text += " (ion radius " + shortest_text(o.ion_radius) + " A)";
  text += ", srfm " + surface_name(o.surface);
  if (o.surface == PbSurface::Spline)
    text += " (swin " + shortest_text(o.spline_window) + " A)";
  else
    text += " (srad " + shortest_text(o.probe_radius) + " A, sdens " + shortest_text(o.surface_density) +
            (o.sampling ? ", sampled " + std::to_string(o.sampling) + "x per spacing" : std::string()) + ")";
  text += o.formulation == PbFormulation::Direct ? ", chgm spl2" : ", Coulomb part summed, not solved (split)";
  text += ", bcfl mdh";
  return text;
}

}  // namespace espgrid
