// What a Poisson–Boltzmann map is asked for: the linearized PB equation's parameters (APBS's
// names in the comments, so an APBS input and an espgrid command can be read side by side) and
// how the solve is run. Plain data, no dependencies: the physics options carry it
// (physics/physics_options.h), the CLI fills it, src/pb/ solves it.
//
// The equation, in APBS's conventions (u = eφ/kT, lengths in Å):
//   −∇·(ε(r) ∇u) + ε_w κ² λ(r) u = (4π e²/kT) Σ qᵢ δ(r − rᵢ)
// ε(r): solute dielectric inside the molecular surface, solvent dielectric outside;
// λ(r) ∈ [0, 1]: ion accessibility (0 within ion radius + atom radius of any atom);
// κ: the Debye–Hückel inverse length of the bulk electrolyte in the solvent dielectric.
#pragma once

#include <string>

namespace espgrid {

/// How the dielectric boundary is drawn (APBS `srfm`).
enum class PbSurface {
  Mol,     ///< `mol`: inside the union of (atom + probe) spheres, except within a probe radius of an
           ///< accessible point of that union's surface (APBS's discrete SAS points, `sdens` per Å²)
  Smol,    ///< `smol`: `mol`, then each face value replaced by the harmonic mean of 9 nearby face values
  Spline,  ///< `spl2`: a product of per-atom cubic switching functions of width `spline_window` (no probe)
};

/// Which equation is solved (APBS `lpbe` | `npbe`).
enum class PbEquation {
  Linearized,  ///< `lpbe`
  Nonlinear,   ///< `npbe` (src/pb/pb_nonlinear.h: pb::solve_nonlinear)
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

struct PbOptions {
  double solute_dielectric = 2.0;     ///< `pdie`
  double solvent_dielectric = 78.54;  ///< `sdie`
  double ionic_strength = 0.15;       ///< mol/L of a 1:1 salt (`ion charge ±1 conc I`); 0: no ions
  double ion_radius = 2.0;            ///< Å (`ion ... radius`): the ion-exclusion layer around atoms
  double probe_radius = 1.4;          ///< Å (`srad`)
  PbSurface surface = PbSurface::Smol;
  double spline_window = 0.3;     ///< Å (`swin`), spl2 only
  double surface_density = 10.0;  ///< SAS points per Å² (`sdens`), mol and smol
  /// mol and smol: 0 puts the dielectric on the faces APBS's way (one sample at each face's centre;
  /// smol then smooths); s ≥ 2 samples the same surface s times finer and averages each face's flux
  /// tube (espgrid's: closer to the converged map at a given spacing, docs/pb.md).
  int sampling = 0;
  double temperature = 298.15;  ///< K (`temp`)
  PbFormulation formulation = PbFormulation::Direct;
  PbEquation equation = PbEquation::Linearized;  ///< `lpbe` or `npbe`
  double tolerance = 1e-6;   ///< relative residual ‖b − Au‖₂/‖b‖₂ at which the solve stops (APBS `etol`)
  int max_iterations = 200;  ///< of the Krylov solver (APBS's multigrid stops at 200 too)
};

/// Names as APBS spells them: "mol", "smol", "spl2".
std::string surface_name(PbSurface surface);
/// Parses "mol", "smol" or "spl2"; UsageError listing them otherwise.
PbSurface parse_surface(const std::string& text);
/// "split" or "direct".
std::string formulation_name(PbFormulation formulation);
/// Parses "split" or "direct"; UsageError otherwise.
PbFormulation parse_formulation(const std::string& text);

std::string equation_name(PbEquation equation);
PbEquation parse_equation(const std::string& text);

/// Throws UsageError naming the option (by its espgrid name) when a value is out of range.
void validate(const PbOptions& options);

/// The parameters in one line for summaries and file headers (ASCII):
/// "linearized PB, pdie 2, sdie 78.54, I 0.15 M (ion radius 2 A), srad 1.4 A, srfm smol, chgm spl2, bcfl mdh, split".
std::string describe(const PbOptions& options);

/// κ of the bulk electrolyte, 1/Å (0 without salt): APBS's `xkappa`, computed in the solvent dielectric.
double pb_kappa(const PbOptions& options);

}  // namespace espgrid
