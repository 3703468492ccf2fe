// The APBS front end's adapter to the PB physics (see apbs_solve.h). The mapping, keyword by
// keyword (PB_API.md names the PbOptions/PbRun fields):
//   lpbe/npbe → equation            bcfl zero|sdh|mdh → boundary; focus → PbRun::focus_parent
//   pdie, sdie, temp → dielectrics, temperature       etol → tolerance
//   ion lines → ions (PbIon species)                  chgm → charges
//   srfm mol|smol|spl2|spl4, srad, swin, sdens → surface
//   calcenergy → energy.level (every level of a block, as APBS computes each); a level the next
//               one focuses from also computes the energy outside that level (focus_child)
//   write TYPE → PbRun::maps (pot from the potential itself)
//
// Transition (issue 32): the PB physics of APBS's inputs lands on the pbphys branch (pb_energy.h,
// pb_maps.h, the enums of pb_options.h) and the nonlinear solver on npbe (pb_nonlinear.h). Until
// both are merged this file compiles against what the build has, found by __has_include: without
// pbphys's physics it solves what main's solve_pb solves (lpbe, mdh, spl2, one grid; several ion
// species as the ionic strength ½Σcz² and the largest radius, exactly what APBS's lpbe uses) and
// check_supported refuses the rest by keyword before anything runs. Once pbphys and npbe are
// merged, the #else branches and the two macros can go.
#include "src/apbs/apbs_solve.h"

#include <algorithm>

#include "src/pb/pb_solve.h"

#if __has_include("src/pb/pb_energy.h")
#define ESPGRID_APBS_PB_PHYSICS 1  // pbphys: boundaries, charges, spl4, species, energies, maps, focusing
#include "src/pb/pb_energy.h"
#include "src/pb/pb_maps.h"
#else
#define ESPGRID_APBS_PB_PHYSICS 0
#endif
#if __has_include("src/pb/pb_nonlinear.h")
#define ESPGRID_APBS_NONLINEAR 1  // npbe: the nonlinear equation's solver
#else
#define ESPGRID_APBS_NONLINEAR 0
#endif

namespace espgrid::apbs {
namespace {

PbSurface surface_of(SurfaceMethod surface) {
  switch (surface) {
    case SurfaceMethod::Mol:
      return PbSurface::Mol;
    case SurfaceMethod::Smol:
      return PbSurface::Smol;
    case SurfaceMethod::Spline2:
      return PbSurface::Spline;
    case SurfaceMethod::Spline4:
#if ESPGRID_APBS_PB_PHYSICS
      return PbSurface::Spline4;
#else
      break;  // refused by check_supported
#endif
  }
  return PbSurface::Spline;
}

/// The options every calculation of `elec` shares (the boundary is the calculation's).
PbOptions pb_options(const ElecBlock& elec) {
  PbOptions o;
  o.solute_dielectric = elec.pdie.value;
  o.solvent_dielectric = elec.sdie.value;
  o.temperature = elec.temp.value;
  double strength = 0, radius = 0;
  for (const IonSpecies& ion : elec.ions) {
    strength += 0.5 * ion.concentration * ion.charge * ion.charge;
    radius = std::max(radius, ion.radius);
  }
  o.ionic_strength = strength;  // no `ion` lines: no salt (not espgrid map's default 0.15 M)
  o.ion_radius = radius;
  if (elec.srad.set) o.probe_radius = elec.srad.value;
  if (elec.swin.set) o.spline_window = elec.swin.value;
  if (elec.sdens.set) o.surface_density = elec.sdens.value;
  o.surface = surface_of(*elec.surface);
  o.formulation = PbFormulation::Direct;  // APBS's discretization: charges spread, the whole φ solved
  if (elec.etol) o.tolerance = *elec.etol;
#if ESPGRID_APBS_PB_PHYSICS
  o.equation = *elec.equation == Equation::Nonlinear ? PbEquation::Nonlinear : PbEquation::Linearized;
  for (const IonSpecies& ion : elec.ions) o.ions.push_back(PbIon{ion.charge, ion.concentration, ion.radius});
  static constexpr PbChargeMethod kCharges[] = {PbChargeMethod::Spl0, PbChargeMethod::Spl2, PbChargeMethod::Spl4};
  o.charges = kCharges[static_cast<int>(*elec.charges)];
  o.energy.level = elec.energy == EnergyRequest::None    ? PbEnergyLevel::None
                   : elec.energy == EnergyRequest::Total ? PbEnergyLevel::Total
                                                         : PbEnergyLevel::Components;
#endif
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

#if ESPGRID_APBS_PB_PHYSICS
/// What a level keeps for the level that focuses from it, beside its grid and potential.
struct FocusState {
  pb::PbEnergyTerms outside;  ///< its energy outside the next level's domain (APBS extEnergy)
};

PbBoundary boundary_of(Boundary b) {
  switch (b) {
    case Boundary::Zero:
      return PbBoundary::Zero;
    case Boundary::SingleDebyeHuckel:
      return PbBoundary::Sdh;
    case Boundary::MultipleDebyeHuckel:
      return PbBoundary::Mdh;
    case Boundary::Focus:
      return PbBoundary::Focus;
  }
  return PbBoundary::Mdh;
}

pb::PbMapKind map_kind(WriteType type) { return pb::parse_pb_map_kind(std::string(write_type_name(type))); }

SolveOutcome solve_with_physics(const SolveRequest& request) {
  const ElecBlock& elec = *request.elec;
  const Calculation& calc = *request.calculation;
  SolveOutcome out;
  out.grid = calc.grid.grid();
  PbOptions options = pb_options(elec);
  options.boundary = boundary_of(calc.boundary);
  PbRun run = pb_run(request.solver);
  PbFocusParent parent;
  if (calc.boundary == Boundary::Focus) {
    if (!request.parent) throw Error("internal: a focusing level without the level before it");
    parent.grid = request.parent->grid;
    parent.potential = &request.parent->potential;
    if (request.parent->focus_state)
      parent.outside = static_cast<const FocusState*>(request.parent->focus_state.get())->outside;
    run.focus_parent = &parent;
    run.atoms_outside = true;  // APBS: atoms off a focusing level add nothing of that level
  }
  if (request.next_level) {
    run.keep_potential = true;
    if (options.energy.level != PbEnergyLevel::None) run.focus_child = request.next_level;
  }
  for (WriteType type : request.maps)
    if (type != WriteType::Pot) run.maps.push_back(map_kind(type));
  PbResult result = solve_pb(*request.atoms, out.grid, options, run);
  if (!result.potential.empty())
    out.potential = std::move(result.potential);
  else
    out.potential.assign(result.values.begin(), result.values.end());
  if (result.energy.level != PbEnergyLevel::None) out.energy = result.energy.total;
  if (result.energy.level == PbEnergyLevel::Components) {
    // As APBS prints them (routines.c energyMG): half the fixed-charge sum, the others as they are.
    out.components = EnergyComponents{0.5 * result.energy.terms.fixed_charge, result.energy.terms.mobile_charge,
                                      result.energy.terms.dielectric};
    out.atom_energies = result.energy.per_atom;
  }
  for (const pb::PbMapValues& m : result.maps)
    for (WriteType type : request.maps)
      if (type != WriteType::Pot && map_kind(type) == m.kind)
        out.maps.emplace_back(type, std::vector<float>(m.values.begin(), m.values.end()));
  out.focus_state = std::make_shared<FocusState>(FocusState{result.energy.outside_child});
  out.summary = result.summary;
  out.seconds = result.seconds;
  return out;
}
#endif

}  // namespace

std::vector<MissingPhysics> missing_physics(const ElecBlock& elec, const Calculation& calc) {
  std::vector<MissingPhysics> out;
  const auto lacks = [&](std::size_t line, std::string keyword, std::string what) {
    out.push_back({line, std::move(keyword), std::move(what)});
  };
  if (!ESPGRID_APBS_NONLINEAR && *elec.equation == Equation::Nonlinear)
    lacks(elec.line, "npbe", "the nonlinear PB equation");
  if (ESPGRID_APBS_PB_PHYSICS) return out;
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
  throw ApbsInputError(
      input.file, missing[0].line,
      "keyword " + missing[0].keyword + " is not supported yet (this build's Poisson-Boltzmann physics " + "lacks " +
          missing[0].what + (also.empty() ? std::string() : "; the input also needs " + also) + "; see docs/apbs.md)");
}

void check_atoms_on_grid(const ApbsInput& input, const Calculation& calc, int number, const Atoms& atoms) {
  if (calc.boundary == Boundary::Focus) return;  // a focusing level takes atoms off its grid, as APBS
  try {
    pb::check_atoms_inside(atoms, calc.grid.grid());
  } catch (const UsageError& e) {
    std::string why = e.what();
    const std::size_t cut = why.find(": enlarge");
    if (cut != std::string::npos) why.resize(cut);
    throw ApbsInputError(input.file, input.elecs[calc.elec].line,
                         "CALCULATION #" + std::to_string(number) + " of this block: " + why +
                             " (APBS would leave such atoms out with a warning; enlarge the grid)");
  }
}

SolveOutcome solve_calculation(const SolveRequest& request) {
#if ESPGRID_APBS_PB_PHYSICS
  return solve_with_physics(request);
#else
  SolveOutcome out;
  out.grid = request.calculation->grid.grid();
  const PbResult result = solve_pb(*request.atoms, out.grid, pb_options(*request.elec), pb_run(request.solver));
  out.potential.assign(result.values.begin(), result.values.end());
  out.summary = result.summary;
  out.seconds = result.seconds;
  return out;
#endif
}

}  // namespace espgrid::apbs
