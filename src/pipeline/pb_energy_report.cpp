#include "src/pipeline/pb_energy_report.h"

#include <cstdio>

#include "src/core/errors.h"
#include "src/pipeline/map_pipeline.h"
#include "src/structure/structure_reader.h"

namespace espgrid {
namespace {

std::string energy_text(const pb::PbEnergy& e, double kt) {
  char text[96];
  std::snprintf(text, sizeof text, "%.6e kJ/mol (%.6e kT)", e.kj_per_mol(kt), kt);
  return text;
}

Json amount(const pb::PbEnergy& e, double kt) {
  return Json::object().set("kT", kt).set("kJ_per_mol", e.kj_per_mol(kt));
}

}  // namespace

PbEnergyReport pb_energy_report(const Atoms& atoms, const GridSpec& grid, const PbOptions& options, const PbRun& run,
                                const PbResult& solved) {
  PbEnergyReport report;
  report.energy = solved.energy;
  report.charge_method = charge_method_name(options.charges);
  report.nonlinear = options.equation == PbEquation::Nonlinear;
  PbOptions others = options;
  others.energy.level = PbEnergyLevel::Total;  // the extra solves report their totals only
  PbRun quiet = run;
  quiet.keep_potential = false;
  quiet.maps.clear();
  if (options.energy.solvation) {
    PbOptions reference = others;
    reference.solvent_dielectric = reference.solute_dielectric;
    reference.ions.clear();
    reference.ionic_strength = 0;
    report.reference = solve_pb(atoms, grid, reference, quiet).energy.total;
    report.solvation = solved.energy.total - *report.reference;
  }
  if (!options.energy.binding_parts.empty()) {
    double sum = 0;
    for (const std::string& path : options.energy.binding_parts) {
      const StructureFormat format = format_from_extension(path);
      if (needs_charge_assignment(format))
        throw UsageError("--binding-parts " + path +
                         ": give the parts as PQR (or XYZ) files with their charges and "
                         "radii, as the complex's");
      const Structure part = load_structure(path);
      PbEnergyReport::Part p;
      p.name = path;
      p.total = solve_pb(part.atoms, grid, others, quiet).energy.total;
      sum += p.total;
      report.parts.push_back(p);
    }
    report.binding = solved.energy.total - sum;
  }
  return report;
}

Json pb_energy_json(const PbEnergyReport& r) {
  const pb::PbEnergy& e = r.energy;
  Json j = Json::object();
  j.set("definition", r.nonlinear ? "APBS total electrostatic energy: qf - dielectric - mobile (npbe)"
                                  : "APBS total electrostatic energy: 1/2 sum q phi (chgm " + r.charge_method + ")");
  j.set("temperature", e.temperature);
  j.set("total", amount(e, e.total));
  if (e.level == PbEnergyLevel::Components) {
    j.set("fixed_charge", amount(e, 0.5 * e.terms.fixed_charge));  // APBS prints ½ qf as "Fixed charge energy"
    j.set("mobile_charge", amount(e, e.terms.mobile_charge));
    j.set("dielectric", amount(e, e.terms.dielectric));
    Json per_atom = Json::array();
    for (const double v : e.per_atom) per_atom.push(Json(e.kj_per_mol(v)));
    j.set("per_atom_kJ_per_mol", per_atom);
  }
  if (r.solvation) {
    j.set("solvation", Json::object()
                           .set("reference", amount(e, *r.reference))
                           .set("energy", amount(e, *r.solvation))
                           .set("definition", "solvated - reference (solvent dielectric = solute's, no ions)"));
  }
  if (r.binding) {
    Json parts = Json::array();
    for (const PbEnergyReport::Part& p : r.parts)
      parts.push(Json::object().set("file", p.name).set("total", amount(e, p.total)));
    j.set("binding",
          Json::object().set("parts", parts).set("energy", amount(e, *r.binding)).set("definition", "complex - parts"));
  }
  return j;
}

std::vector<std::string> pb_energy_lines(const PbEnergyReport& r) {
  const pb::PbEnergy& e = r.energy;
  std::vector<std::string> lines;
  if (e.level != PbEnergyLevel::None)
    lines.push_back("energy     " + energy_text(e, e.total) + ", APBS's total electrostatic energy" +
                    (r.nonlinear ? " (npbe)" : " (1/2 sum q phi, chgm " + r.charge_method + ")"));
  if (e.level == PbEnergyLevel::Components)
    lines.push_back("           fixed charge " + energy_text(e, 0.5 * e.terms.fixed_charge) + ", mobile charge " +
                    energy_text(e, e.terms.mobile_charge) + ", dielectric " + energy_text(e, e.terms.dielectric));
  if (r.solvation)
    lines.push_back("solvation  " + energy_text(e, *r.solvation) + " (solvated - reference with sdie = pdie, no ions)");
  if (r.binding) {
    std::string parts;
    for (const PbEnergyReport::Part& p : r.parts) parts += (parts.empty() ? "" : ", ") + p.name;
    lines.push_back("binding    " + energy_text(e, *r.binding) + " (complex - parts: " + parts + ")");
  }
  return lines;
}

}  // namespace espgrid
