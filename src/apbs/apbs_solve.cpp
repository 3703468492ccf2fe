// The APBS front end's adapter to the PB physics (see apbs_solve.h). The mapping, keyword by
// keyword (PB_API.md names the PbOptions/PbRun fields each lands in):
//   lpbe/npbe → equation          bcfl → boundary (focus: PbRun's focusing parent)
//   pdie, sdie, temp → dielectrics, temperature     etol → tolerance
//   ion lines → the ion species (lpbe: APBS itself uses only their ionic strength ½Σcz² and
//               largest radius, which is how this build's 1:1-salt options carry them exactly)
//   srfm mol|smol|spl2|spl4, srad, swin, sdens → surface     chgm → charge spreading
//   calcenergy → energies         write TYPE → maps
// What this build's physics lacks is refused in check_supported with the keyword's line.
#include "src/apbs/apbs_solve.h"

#include <algorithm>

#include "src/pb/pb_solve.h"

namespace espgrid::apbs {
namespace {

double ionic_strength(const ElecBlock& elec) {
  double strength = 0;
  for (const IonSpecies& ion : elec.ions) strength += 0.5 * ion.concentration * ion.charge * ion.charge;
  return strength;
}

double largest_ion_radius(const ElecBlock& elec) {
  double radius = 0;
  for (const IonSpecies& ion : elec.ions) radius = std::max(radius, ion.radius);
  return radius;
}

PbOptions pb_options(const ElecBlock& elec) {
  PbOptions o;
  o.solute_dielectric = elec.pdie.value;
  o.solvent_dielectric = elec.sdie.value;
  o.temperature = elec.temp.value;
  o.ionic_strength = ionic_strength(elec);
  o.ion_radius = largest_ion_radius(elec);
  if (elec.srad.set) o.probe_radius = elec.srad.value;
  if (elec.swin.set) o.spline_window = elec.swin.value;
  if (elec.sdens.set) o.surface_density = elec.sdens.value;
  switch (*elec.surface) {
    case SurfaceMethod::Mol:
      o.surface = PbSurface::Mol;
      break;
    case SurfaceMethod::Smol:
      o.surface = PbSurface::Smol;
      break;
    case SurfaceMethod::Spline2:
      o.surface = PbSurface::Spline;
      break;
    case SurfaceMethod::Spline4:
      break;  // refused by check_supported
  }
  o.formulation = PbFormulation::Direct;  // APBS's discretization: charges spread, the whole φ solved
  if (elec.etol) o.tolerance = *elec.etol;
  return o;
}

PbRun pb_run(const SolverChoice& choice) {
  PbRun run;
  switch (choice.backend) {
    case SolverChoice::Backend::Auto:
      run.solver = PbSolver::Auto;
      break;
    case SolverChoice::Backend::Cpu:
      run.solver = PbSolver::Hypre;
      break;
    case SolverChoice::Backend::Cuda:
      run.solver = PbSolver::CudaMultigrid;
      break;
    case SolverChoice::Backend::CpuEmulation:
      run.solver = PbSolver::CpuMultigrid;
      break;
  }
  run.threads = choice.threads;
  run.device = choice.device;
  run.unit = PotentialUnit::KTPerE;
  return run;
}

}  // namespace

std::vector<MissingPhysics> missing_physics(const ElecBlock& elec, const Calculation& calc) {
  std::vector<MissingPhysics> out;
  const auto lacks = [&](std::size_t line, std::string keyword, std::string what) {
    out.push_back({line, std::move(keyword), std::move(what)});
  };
  if (*elec.equation == Equation::Nonlinear) lacks(elec.line, "npbe", "the nonlinear PB equation");
  if (calc.boundary == Boundary::Focus)
    lacks(calc.level > 0 ? elec.line : elec.boundary_line,
          calc.level > 0 ? std::string(method_name(elec.method)) + " focusing" : "bcfl focus",
          "focusing (boundary values from a coarser level)");
  else if (calc.boundary != Boundary::MultipleDebyeHuckel)
    lacks(elec.boundary_line, "bcfl " + std::string(boundary_name(calc.boundary)),
          "the " + std::string(boundary_name(calc.boundary)) + " boundary condition");
  if (*elec.charges != ChargeMethod::Spline2)
    lacks(elec.charges_line, "chgm " + std::string(charge_method_name(*elec.charges)),
          "the " + std::string(charge_method_name(*elec.charges)) + " charge spreading");
  if (*elec.surface == SurfaceMethod::Spline4) lacks(elec.surface_line, "srfm spl4", "the spl4 surface");
  if (elec.energy != EnergyRequest::None)
    lacks(elec.energy_line, "calcenergy " + std::string(energy_request_name(elec.energy)), "the PB energies");
  for (const WriteRequest& w : elec.writes)
    if (w.type != WriteType::Pot)
      lacks(w.line, "write " + std::string(write_type_name(w.type)),
            "APBS's " + std::string(write_type_name(w.type)) + " map");
  return out;
}

void check_supported(const ApbsInput& input, const CalculationPlan& plan) {
  // The solver's own ranges (physics/pb_options.h validate): its message names espgrid's option
  // for the value; the line is the block's.
  for (const ElecBlock& elec : input.elecs) {
    try {
      validate(pb_options(elec));
    } catch (const UsageError& e) {
      throw ApbsInputError(input.file, elec.line,
                           std::string("a value of this block is outside what espgrid's PB solver takes: ") + e.what());
    }
  }
  std::vector<MissingPhysics> missing;
  for (const Calculation& c : plan.calculations)
    for (MissingPhysics& m : missing_physics(input.elecs[c.elec], c)) {
      bool seen = false;
      for (const MissingPhysics& earlier : missing) seen = seen || earlier.keyword == m.keyword;
      if (!seen) missing.push_back(std::move(m));
    }
  if (missing.empty()) return;
  std::string also;
  for (std::size_t i = 1; i < missing.size(); ++i) also += (i > 1 ? ", " : "") + missing[i].keyword;
  throw ApbsInputError(input.file, missing[0].line,
                       "keyword " + missing[0].keyword +
                           " is not supported yet (this build's Poisson-Boltzmann physics "
                           "lacks " +
                           missing[0].what + (also.empty() ? std::string() : "; the input also needs " + also) +
                           "; see docs/apbs.md)");
}

SolveOutcome solve_calculation(const SolveRequest& request) {
  const ElecBlock& elec = *request.elec;
  const Calculation& calc = *request.calculation;
  SolveOutcome out;
  out.grid = calc.grid.grid();
  const PbOptions options = pb_options(elec);
  const PbRun run = pb_run(request.solver);
  const PbResult result = solve_pb(*request.atoms, out.grid, options, run);
  out.potential.assign(result.values.begin(), result.values.end());
  out.summary = result.summary;
  out.seconds = result.seconds;
  return out;
}

}  // namespace espgrid::apbs
