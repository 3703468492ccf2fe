// What a Poisson–Boltzmann map is asked for: the linearized PB equation's parameters (APBS's
// names in the comments, so an APBS input and an espgrid command can be read side by side) and
// how the solve is run. Plain data, no dependencies: the physics options carry it
// (physics/physics_options.h), the CLI fills it, src/pb/ solves it.
//
// The equation, in APBS's conventions (u = eφ/kT, lengths in Å):
//   linearized: −∇·(ε(r) ∇u) + ε_w κ² λ(r) u = (4π e²/kT) Σ qᵢ δ(r − rᵢ)
//   nonlinear:  −∇·(ε(r) ∇u) − ε_w κ² λ(r) (1/2I) Σⱼ cⱼ zⱼ e^(−zⱼ u) = (4π e²/kT) Σ qᵢ δ(r − rᵢ)
// ε(r): solute dielectric inside the molecular surface, solvent dielectric outside;
// λ(r) ∈ [0, 1]: ion accessibility (0 within the largest ion radius + atom radius of any atom);
// κ: the Debye–Hückel inverse length of the bulk electrolyte in the solvent dielectric, from the
// ionic strength I = ½ Σⱼ cⱼ zⱼ² of the ion species j (concentration cⱼ, valence zⱼ).
#pragma once

#include <string>
#include <vector>

namespace espgrid {

/// How the dielectric boundary is drawn (APBS `srfm`).
enum class PbSurface {
  Mol,      ///< `mol`: inside the union of (atom + probe) spheres, except within a probe radius of an
            ///< accessible point of that union's surface (APBS's discrete SAS points, `sdens` per Å²)
  Smol,     ///< `smol`: `mol`, then each face value replaced by the harmonic mean of 9 nearby face values
  Spline,   ///< `spl2`: a product of per-atom cubic switching functions of width `spline_window` (no probe)
  Spline4,  ///< `spl4`: the same with APBS's 7th-order polynomial switching functions (C³ at both ends)
};

/// Which equation is solved (APBS `lpbe` | `npbe`).
enum class PbEquation {
  Linearized,  ///< `lpbe`
  Nonlinear,   ///< `npbe` (src/pb/pb_solve.h: pb::solve_nonlinear)
};

/// The potential on the grid's six faces (APBS `bcfl`).
enum class PbBoundary {
  Zero,  ///< `zero`: φ = 0
  /// `sdh`: one Debye–Hückel sphere at the centre of the atoms' bounding box, of the radius that
  /// encloses every atom, holding the molecule's charge, dipole and (traceless) quadrupole
  Sdh,
  Mdh,    ///< `mdh`: one Debye–Hückel sphere of its own radius per atom (the default)
  Focus,  ///< `focus`: trilinear interpolation of a coarser level's potential (PbRun::focus_parent)
};

/// How the atoms' point charges are put onto the grid's nodes (APBS `chgm`).
enum class PbChargeMethod {
  Spl0,  ///< `spl0`: trilinear (the 8 nodes around each charge)
  Spl2,  ///< `spl2`: quadratic B-splines (27 nodes; the default)
  Spl4,  ///< `spl4`: quartic B-splines (125 nodes)
};

/// One mobile ion species (APBS `ion charge Z conc C radius R`).
struct PbIon {
  double charge = 0;         ///< valence, e
  double concentration = 0;  ///< bulk concentration, mol/L
  double radius = 0;         ///< Å: no ion of any species within the largest radius of an atom's surface
};

/// Which energies a solve reports (APBS `calcenergy`). A request, not physics: it changes no map.
enum class PbEnergyLevel {
  None,        ///< `no`
  Total,       ///< `total`: APBS's total electrostatic energy
  Components,  ///< `comps`: also the fixed-charge, mobile-charge and dielectric terms and per-atom energies
};

/// How φ is split for the solve. Direct is the default: at the molecular surface the dielectric
/// boundary's discretization error is ~50× the charges' (measured, docs/pb.md), so splitting off
/// the exact Coulomb part gains nothing there, and Direct is APBS's map.
enum class PbFormulation {
  /// φ = φ_Coulomb(ε_solute) + φ_reaction: the point charges' Coulomb field is summed exactly at
  /// every grid point (the direct sum), only the smooth remainder is solved on the grid.
  Split,
  /// APBS's own discretization: the charges spread onto the grid by quadratic B-splines (`chgm spl2`)
  /// and the whole potential solved on the grid. Equals APBS `mg-manual` to solver tolerance.
  Direct,
};

/// What to compute beyond the map, in the solve's own terms (`espgrid map --pb-energy`, Python).
struct PbEnergyRequest {
  PbEnergyLevel level = PbEnergyLevel::None;
  /// Also solve the reference (solvent dielectric = solute dielectric, no ions; everything else,
  /// the grid included, the same) and report the solvation energy = solvated − reference.
  bool solvation = false;
  /// Structure files of the parts of a complex: each is solved on the complex's grid with the same
  /// options and the binding energy = E(complex) − Σ E(part) is reported.
  std::vector<std::string> binding_parts;
  bool any() const { return level != PbEnergyLevel::None || solvation || !binding_parts.empty(); }
};

struct PbOptions {
  PbEquation equation = PbEquation::Linearized;  ///< `lpbe` | `npbe`
  double solute_dielectric = 2.0;                ///< `pdie`
  double solvent_dielectric = 78.54;             ///< `sdie`
  double ionic_strength =
      0.15;                 ///< mol/L of a 1:1 salt (`ion charge ±1 conc I`); 0: no ions. Unused when `ions` is given
  double ion_radius = 2.0;  ///< Å (`ion ... radius`): the 1:1 salt's ion-exclusion layer around atoms
  /// Ion species as APBS's `ion` lines (any number; together electroneutral). Empty: the 1:1 salt
  /// of `ionic_strength` and `ion_radius`. ion_species() gives the species either way.
  std::vector<PbIon> ions;
  PbBoundary boundary = PbBoundary::Mdh;  ///< `bcfl`
  /// mdh: kT/e each face value may differ from the exact sum by (measured; the map's error from it
  /// is at most that); > 0 sums the faces by distance bands (pb/pb_face_sums.h), 0 exactly.
  double boundary_accuracy = 1e-5;
  PbChargeMethod charges = PbChargeMethod::Spl2;  ///< `chgm` (Direct formulation)
  double probe_radius = 1.4;                      ///< Å (`srad`)
  PbSurface surface = PbSurface::Smol;
  double spline_window = 0.3;     ///< Å (`swin`), spl2 only
  double surface_density = 10.0;  ///< SAS points per Å² (`sdens`), mol and smol
  /// mol and smol: 0 puts the dielectric on the faces APBS's way (one sample at each face's centre;
  /// smol then smooths); s ≥ 2 samples the same surface s times finer and averages each face's flux
  /// tube (espgrid's: closer to the converged map at a given spacing, docs/pb.md).
  int sampling = 0;
  double temperature = 298.15;  ///< K (`temp`)
  PbFormulation formulation = PbFormulation::Direct;
  double tolerance = 1e-6;   ///< relative residual ‖b − Au‖₂/‖b‖₂ at which the solve stops (APBS `etol`)
  int max_iterations = 200;  ///< of the Krylov solver (APBS's multigrid stops at 200 too)
  PbEnergyRequest energy;    ///< energies to report (none by default; `espgrid map --model pb` asks for the total)
};

/// Names as APBS spells them: "mol", "smol", "spl2", "spl4".
std::string surface_name(PbSurface surface);
/// Parses "mol", "smol", "spl2" or "spl4"; UsageError listing them otherwise.
PbSurface parse_surface(const std::string& text);
/// "lpbe" or "npbe".
std::string equation_name(PbEquation equation);
PbEquation parse_equation(const std::string& text);
/// "zero", "sdh", "mdh" or "focus".
std::string boundary_name(PbBoundary boundary);
PbBoundary parse_boundary(const std::string& text);
/// "spl0", "spl2" or "spl4".
std::string charge_method_name(PbChargeMethod method);
PbChargeMethod parse_charge_method(const std::string& text);
/// "no", "total" or "comps".
std::string energy_level_name(PbEnergyLevel level);
PbEnergyLevel parse_energy_level(const std::string& text);
/// Parses "Z,C,R" (valence e, concentration mol/L, radius Å); UsageError naming `option` otherwise.
PbIon parse_ion(const std::string& text, const std::string& option = "--ion");

/// The ion species APBS solves with: `ions`, or the 1:1 salt (+1 and −1 at `ionic_strength`,
/// radius `ion_radius`) when `ions` is empty and the ionic strength is above 0; none otherwise.
std::vector<PbIon> ion_species(const PbOptions& options);
/// ½ Σ cᵢ zᵢ² over the species, mol/L (APBS's bulk ionic strength).
double pb_ionic_strength(const PbOptions& options);
/// The largest species radius, Å (APBS's maxIonRadius: the one ion-exclusion radius it uses); 0 without ions.
double pb_ion_radius(const PbOptions& options);
/// Whether the bulk has ions (APBS: ionic strength above its VPMGSMALL, 1e-12 M).
bool pb_has_ions(const PbOptions& options);
/// "split" or "direct".
std::string formulation_name(PbFormulation formulation);
/// Parses "split" or "direct"; UsageError otherwise.
PbFormulation parse_formulation(const std::string& text);

/// Throws UsageError naming the option (by its espgrid name) when a value is out of range, the
/// ions are not electroneutral (APBS refuses them too) or options contradict each other.
void validate(const PbOptions& options);

/// The parameters in one line for summaries and file headers (ASCII):
/// "linearized PB, pdie 2, sdie 78.54, I 0.15 M (ion radius 2 A), srad 1.4 A, srfm smol, chgm spl2, bcfl mdh, split".
std::string describe(const PbOptions& options);

/// κ of the bulk electrolyte, 1/Å (0 without salt): APBS's `xkappa`, computed in the solvent
/// dielectric from pb_ionic_strength.
double pb_kappa(const PbOptions& options);

}  // namespace espgrid
