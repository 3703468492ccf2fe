#include "src/apbs/apbs_report.h"

#include <cstdarg>
#include <cstdio>

namespace espgrid::apbs {
namespace {

/// A calculation's phases as {name: seconds}, in the solver's order.
Json phases_json(const std::vector<std::pair<std::string, double>>& phases) {
  Json out = Json::object();
  for (const auto& [name, seconds] : phases) out.set(name, seconds);
  return out;
}

void append(std::string& out, const char* format, ...) __attribute__((format(printf, 2, 3)));
void append(std::string& out, const char* format, ...) {
  char line[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(line, sizeof line, format, args);
  va_end(args);
  out += line;
}

const char* equation_text(Equation e) {
  return e == Equation::Linearized ? "  Linearized traditional PBE\n" : "  Nonlinear traditional PBE\n";
}

const char* boundary_text(Boundary b) {
  switch (b) {
    case Boundary::Zero:
      return "  Zero boundary conditions\n";
    case Boundary::SingleDebyeHuckel:
      return "  Single Debye-Huckel sphere boundary conditions\n";
    case Boundary::MultipleDebyeHuckel:
      return "  Multiple Debye-Huckel sphere boundary conditions\n";
    case Boundary::Focus:
      return "  Boundary conditions from focusing\n";
  }
  return "";
}

const char* write_text(WriteType type) {
  switch (type) {
    case WriteType::Charge:
      return "  Charge distribution to be written to ";
    case WriteType::Pot:
      return "  Potential to be written to ";
    case WriteType::Smol:
      return "  Molecular solvent accessibility to be written to ";
    case WriteType::Sspl:
      return "  Spline-based solvent accessibility to be written to ";
    case WriteType::Vdw:
      return "  van der Waals solvent accessibility to be written to ";
    case WriteType::Ivdw:
      return "  Ion accessibility to be written to ";
    case WriteType::Lap:
      return "  Potential Laplacian to be written to ";
    case WriteType::Edens:
      return "  Energy density to be written to ";
    case WriteType::Ndens:
      return "  Ion number density to be written to ";
    case WriteType::Qdens:
      return "  Ion charge density to be written to ";
    case WriteType::DielX:
      return "  X-shifted dielectric map to be written to ";
    case WriteType::DielY:
      return "  Y-shifted dielectric map to be written to ";
    case WriteType::DielZ:
      return "  Z-shifted dielectric map to be written to ";
    case WriteType::Kappa:
      return "  Kappa map to be written to ";
  }
  return "";
}

/// What APBS's writedataMG says it writes ("  Writing potential to ...").
const char* writing_text(WriteType type) {
  switch (type) {
    case WriteType::Charge:
      return "charge distribution";
    case WriteType::Pot:
      return "potential";
    case WriteType::Smol:
      return "molecular accessibility";
    case WriteType::Sspl:
      return "spline-based accessibility";
    case WriteType::Vdw:
      return "van der Waals accessibility";
    case WriteType::Ivdw:
      return "ion accessibility";
    case WriteType::Lap:
      return "potential Laplacian";
    case WriteType::Edens:
      return "energy density";
    case WriteType::Ndens:
      return "number density";
    case WriteType::Qdens:
      return "charge density";
    case WriteType::DielX:
      return "x-shifted dielectric map";
    case WriteType::DielY:
      return "y-shifted dielectric map";
    case WriteType::DielZ:
      return "z-shifted dielectric map";
    case WriteType::Kappa:
      return "kappa map";
  }
  return "";
}

/// The block's parameters as printPBEPARM prints them.
void equation_lines(std::string& out, const ElecBlock& elec, const CalculationResult& result) {
  double strength = 0;
  for (const IonSpecies& ion : elec.ions) strength += 0.5 * ion.charge * ion.charge * ion.concentration;
  append(out, "  Molecule ID: %d\n", elec.molecule);
  out += equation_text(*elec.equation);
  out += boundary_text(result.calculation.boundary);
  append(out, "  %zu ion species (%4.3f M ionic strength):\n", elec.ions.size(), strength);
  for (const IonSpecies& ion : elec.ions)
    append(out, "    %4.3f A-radius, %4.3f e-charge, %4.3f M concentration\n", ion.radius, ion.charge,
           ion.concentration);
  append(out, "  Solute dielectric: %4.3f\n", elec.pdie.value);
  append(out, "  Solvent dielectric: %4.3f\n", elec.sdie.value);
  switch (*elec.surface) {
    case SurfaceMethod::Mol:
      out += "  Using \"molecular\" surface definition; no smoothing\n";
      append(out, "  Solvent probe radius: %4.3f A\n", elec.srad.value);
      break;
    case SurfaceMethod::Smol:
      out += "  Using \"molecular\" surface definition;harmonic average smoothing\n";
      append(out, "  Solvent probe radius: %4.3f A\n", elec.srad.value);
      break;
    case SurfaceMethod::Spline2:
      append(out, "  Using spline-based surface definition;window = %4.3f\n", elec.swin.value);
      break;
    case SurfaceMethod::Spline4:
      break;  // APBS prints nothing for spl4
  }
  append(out, "  Temperature:  %4.3f K\n", elec.temp.value);
  if (elec.energy != EnergyRequest::None) out += "  Electrostatic energies will be calculated\n";
  if (result.calculation.finest())
    for (const WriteRequest& w : elec.writes)
      out += std::string(write_text(w.type)) + w.stem + (w.format == WriteFormat::Gz ? ".dx.gz\n" : ".dx\n");
}

}  // namespace

std::string calculation_text(const ApbsInput& input, const CalculationResult& result) {
  const Calculation& c = result.calculation;
  const ElecBlock& elec = input.elecs[c.elec];
  std::string out = "----------------------------------------\n";
  if (elec.name.empty())
    append(out, "CALCULATION #%d: MULTIGRID\n", result.number);
  else
    append(out, "CALCULATION #%d (%s): MULTIGRID\n", result.number, elec.name.c_str());
  if (*elec.charges == ChargeMethod::Spline0) out += "  Using linear spline charge discretization.\n";
  if (*elec.charges == ChargeMethod::Spline2) out += "  Using cubic spline charge discretization.\n";
  if (elec.method == ElecMethod::Parallel) {
    append(out, "  Partition overlap fraction = %g\n", elec.ofrac.value);
    append(out, "  Processor array = %d x %d x %d\n", elec.pdime.value[0], elec.pdime.value[1], elec.pdime.value[2]);
  }
  const LevelGrid& g = c.grid;
  append(out, "  Grid dimensions: %d x %d x %d\n", g.dime[0], g.dime[1], g.dime[2]);
  append(out, "  Grid spacings: %4.3f x %4.3f x %4.3f\n", g.spacing[0], g.spacing[1], g.spacing[2]);
  append(out, "  Grid lengths: %4.3f x %4.3f x %4.3f\n", g.length[0], g.length[1], g.length[2]);
  append(out, "  Grid center: (%4.3f, %4.3f, %4.3f)\n", g.center[0], g.center[1], g.center[2]);
  append(out, "  Multigrid levels: %d\n", c.multigrid_levels);
  equation_lines(out, elec, result);
  if (result.energy) append(out, "  Total electrostatic energy = %1.12E kJ/mol\n", *result.energy);
  if (result.components) {  // energyMG's lines for calcenergy comps
    append(out, "  Fixed charge energy = %g kJ/mol\n", result.components->fixed_charge);
    append(out, "  Mobile charge energy = %g kJ/mol\n", result.components->mobile_charge);
    append(out, "  Dielectric energy = %g kJ/mol\n", result.components->dielectric);
  }
  if (!result.atom_energies.empty()) {
    out += "  Per-atom energies:\n";
    for (std::size_t i = 0; i < result.atom_energies.size(); ++i)
      append(out, "      Atom %zu:  %1.12E kJ/mol\n", i, result.atom_energies[i]);
  }
  if (!result.solver.empty()) out += "  Solved by espgrid: " + result.solver + "\n";
  for (const auto& [type, file] : result.files)
    out += "  Writing " + std::string(writing_text(type)) + " to " + file + "\n";
  return out;
}

std::string print_text(const ApbsResult& result) {
  if (result.prints.empty()) return "----------------------------------------\n";
  std::string out = "----------------------------------------\nPRINT STATEMENTS\n";
  for (const PrintResult& p : result.prints) {
    // APBS's printElecEnergy starts with an empty line; the deprecated printEnergy does not.
    if (!p.deprecated_energy) out += "\n";
    out += "print energy " + p.expression + " end\n";
    append(out, "  Local net energy (PE 0) = %1.12E kJ/mol\n", p.energy);
    append(out, "  Global net ELEC energy = %1.12E kJ/mol\n", p.energy);
  }
  out += "----------------------------------------\n";
  return out;
}

Json result_json(const ApbsResult& result) {
  const ApbsInput& input = result.input;
  Json calculations = Json::array();
  for (const CalculationResult& r : result.calculations) {
    const Calculation& c = r.calculation;
    Json grid = Json::object();
    grid.set("dime", Json::numbers(c.grid.dime));
    grid.set("spacing", Json::numbers(c.grid.spacing));
    grid.set("length", Json::numbers(c.grid.length));
    grid.set("center", Json::numbers(c.grid.center));
    Json files = Json::array();
    for (const auto& f : r.files) files.push(f.second);
    calculations.push(Json::object()
                          .set("number", r.number)
                          .set("elec", static_cast<int>(c.elec + 1))
                          .set("name", input.elecs[c.elec].name)
                          .set("level", c.level)
                          .set("levels", c.levels)
                          .set("grid", std::move(grid))
                          .set("bcfl", std::string(boundary_name(c.boundary)))
                          .set("energy_kj_per_mol", r.energy ? Json(*r.energy) : Json())
                          .set("components_kj_per_mol", r.components
                                                            ? Json::object()
                                                                  .set("fixed_charge", r.components->fixed_charge)
                                                                  .set("mobile_charge", r.components->mobile_charge)
                                                                  .set("dielectric", r.components->dielectric)
                                                            : Json())
                          .set("files", std::move(files))
                          .set("solver", r.solver)
                          .set("seconds", r.seconds)
                          .set("phases_seconds", phases_json(r.phases)));
  }
  Json elecs = Json::array();
  for (std::size_t e = 0; e < result.elecs.size(); ++e) {
    const ElecResult& r = result.elecs[e];
    Json block = Json::object()
                     .set("elec", static_cast<int>(e + 1))
                     .set("name", r.name)
                     .set("calculation", r.calculation)
                     .set("energy_kj_per_mol", r.energy ? Json(*r.energy) : Json());
    if (!r.atom_energies.empty()) block.set("atom_energies_kj_per_mol", Json::numbers(r.atom_energies));
    elecs.push(std::move(block));
  }
  Json prints = Json::array();
  for (const PrintResult& p : result.prints)
    prints.push(Json::object().set("expression", p.expression).set("energy_kj_per_mol", p.energy));
  Json maps = Json::array();
  for (const ApbsMap& m : result.maps)
    maps.push(Json::object()
                  .set("path", m.path)
                  .set("type", std::string(write_type_name(m.type)))
                  .set("elec", static_cast<int>(m.elec + 1))
                  .set("dims", Json::numbers(m.grid.dims))
                  .set("origin", Json::numbers(m.grid.origin))
                  .set("spacing", Json::numbers(m.grid.spacing)));
  Json notices = Json::array();
  for (const std::string& n : result.notices) notices.push(n);
  return Json::object()
      .set("input", input.file)
      .set("calculations", std::move(calculations))
      .set("elecs", std::move(elecs))
      .set("prints", std::move(prints))
      .set("maps", std::move(maps))
      .set("notices", std::move(notices))
      .set("seconds", result.seconds);
}

}  // namespace espgrid::apbs
