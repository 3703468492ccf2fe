// The APBS front end's adapter to the PB physics (see apbs_solve.h). The mapping, keyword by
// keyword (PB_API.md names the PbOptions/PbRun fields):
//   lpbe/npbe → equation            bcfl zero|sdh|mdh → boundary; focus → PbRun::focus_parent
//   pdie, sdie, temp → dielectrics, temperature       etol → tolerance
//   ion lines → ions (PbIon species)                  chgm → charges
//   srfm mol|smol|spl2|spl4, srad, swin, sdens → surface
//   calcenergy → energy.level (every level of a block, as APBS computes each); a level the next
//               one focuses from also computes the energy outside that level (focus_child)
//   write TYPE → PbRun::maps (pot from the potential itself)

#include "src/apbs/apbs_solve.h"

#include "src/core/stopwatch.h"
#include "src/pb/pb_energy.h"
#include "src/pb/pb_maps.h"
#include "src/pb/pb_solve.h"

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
      return PbSurface::Spline4;
  }
  return PbSurface::Spline;
}

/// The options every calculation of `elec` shares (the boundary is the calculation's).
PbOptions pb_options(const ElecBlock& elec) {
  PbOptions o;
  o.solute_dielectric = elec.pdie.value;
  o.solvent_dielectric = elec.sdie.value;
  o.temperature = elec.temp.value;
  o.ionic_strength = 0;  // no `ion` lines: no salt (not espgrid map's default 0.15 M); else the species
  for (const IonSpecies& ion : elec.ions) o.ions.push_back(PbIon{ion.charge, ion.concentration, ion.radius});
  if (elec.srad.set) o.probe_radius = elec.srad.value;
  if (elec.swin.set) o.spline_window = elec.swin.value;
  if (elec.sdens.set) o.surface_density = elec.sdens.value;
  o.surface = surface_of(*elec.surface);
  o.formulation = PbFormulation::Direct;  // APBS's discretization: charges spread, the whole φ solved
  if (elec.etol) o.tolerance = *elec.etol;
  o.equation = *elec.equation == Equation::Nonlinear ? PbEquation::Nonlinear : PbEquation::Linearized;
  static constexpr PbChargeMethod kCharges[] = {PbChargeMethod::Spl0, PbChargeMethod::Spl2, PbChargeMethod::Spl4};
  o.charges = kCharges[static_cast<int>(*elec.charges)];
  o.energy.level = elec.energy == EnergyRequest::None    ? PbEnergyLevel::None
                   : elec.energy == EnergyRequest::Total ? PbEnergyLevel::Total
                                                         : PbEnergyLevel::Components;
  return o;
}

PbRun pb_run(const SolverChoice& choice) {
  PbRun run;
  switch (choice.backend) {
    case SolverChoice::Backend::Auto:
      run.solver = PbSolver::Auto;
      break;
    case SolverChoice::Backend::Cpu:
      run.solver = PbSolver::CpuMultigrid;
      break;
    case SolverChoice::Backend::Cuda:
      run.solver = PbSolver::CudaMultigrid;
      break;
    case SolverChoice::Backend::Hypre:
      run.solver = PbSolver::Hypre;
      break;
  }
  run.threads = choice.threads;
  run.device = choice.device;
  run.unit = PotentialUnit::KTPerE;
  return run;
}

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

}  // namespace

SolveOutcome solve_calculation(const SolveRequest& request) {
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
  run.energy_partition = request.energy_partition;
  if (request.next_level) {
    run.keep_potential = true;
    if (options.energy.level != PbEnergyLevel::None) run.focus_child = request.next_level;
  }
  for (WriteType type : request.maps)
    if (type != WriteType::Pot) run.maps.push_back(map_kind(type));
  const Stopwatch solve_clock;
  PbResult result = solve_pb(*request.atoms, out.grid, options, run);
  const double solve_seconds = solve_clock.seconds();
  const Stopwatch after_clock;
  // A finest level's float map is kept as it is (`write pot` writes floats): converting 51.8 M
  // values to doubles and back took 0.3 s of PDB2PQR's template for 47,000 atoms.
  if (!result.potential.empty())
    out.potential = std::move(result.potential);
  else if (request.next_level)
    out.potential.assign(result.values.begin(), result.values.end());
  else
    out.values = std::move(result.values);
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
  for (const PhaseTiming& p : result.phases) out.phases.emplace_back(p.name, p.seconds);
  out.phases.emplace_back("the solve's call, in all (the solver's set-up, its phases, its results)", solve_seconds);
  out.phases.emplace_back("this level's results kept (potential, maps)", after_clock.seconds());
  return out;
}

void check_solver_ranges(const ApbsInput& input) {
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
}

void check_atoms_on_grid(const ApbsInput& input, const Calculation& calc, int number, const Atoms& atoms) {
  try {
    pb::check_atoms_have_radii(atoms, pb_options(input.elecs[calc.elec]));
  } catch (const UsageError& e) {
    throw ApbsInputError(input.file, input.elecs[calc.elec].line,
                         "CALCULATION #" + std::to_string(number) + " of this block: " + e.what());
  }
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

bool may_use_cuda(const SolverChoice& choice) { return pb_solver_may_use_cuda(pb_run(choice).solver, false); }

SolverChoice::Backend parse_solver_backend(const std::string& text, const std::string& option) {
  if (text == "auto") return SolverChoice::Backend::Auto;
  if (text == "cpu") return SolverChoice::Backend::Cpu;
  if (text == "cuda") return SolverChoice::Backend::Cuda;
  if (text == "hypre") return SolverChoice::Backend::Hypre;
  throw UsageError(option + " must be auto, cpu, cuda or hypre, got '" + text + "'");
}

}  // namespace espgrid::apbs
