// APBS's `write` maps of a PB solve (src/mg/vpmg.c Vpmg_fillArray; src/routines.c writedataMG), as
// values on a grid the APBS front end writes as .dx. Definitions and units are APBS 3.4.1's:
//
//   pot     φ, kT/e
//   charge  the spread charges divided by the cell volume, e/Å³ (APBS's title says "(e)")
//   kappa   the ion accessibility λ ∈ [0, 1] (not κ²), nodes
//   dielx   ε on the x faces, written on a grid shifted by +hx/2 (likewise diely, dielz)
//   smol    1 outside the molecular surface of probe `srad` (APBS Vacc_molAcc), 0 inside
//   sspl    the spl2 switching product of window `swin` (Vacc_splineAcc), atom radii only
//   vdw     1 outside every van der Waals sphere, 0 inside (Vacc_vdwAcc)
//   ivdw    1 outside every sphere of atom + largest ion radius, 0 inside (Vacc_ivdwAcc)
//   lap     (∂²φ/∂x² + ∂²φ/∂y² + ∂²φ/∂z²)/3 by central differences, kT/e/Å² (APBS divides by 3); 0 on the faces
//   edens   ε(r) |∇φ|², ε = pdie + (sdie − pdie)·smol, ∇ by central (one-sided on the faces) differences, (kT/e/Å)²
//   ndens   Σⱼ cⱼ (1 − zⱼφ + ½zⱼ²φ²) (lpbe) or Σⱼ cⱼ e^(−zⱼφ) (npbe) where ivdw is 1, else 0; mol/L
//   qdens   the same with each term times zⱼ: the ions' charge density, e·mol/L
#pragma once

#include <string>
#include <vector>

#include "src/core/atoms.h"
#include "src/core/grid.h"
#include "src/physics/pb_options.h"

namespace espgrid::pb {

struct PbCoefficients;

/// The maps APBS's `write` keyword names, in its order.
enum class PbMapKind { Potential, Charge, Kappa, DielX, DielY, DielZ, Smol, Sspl, Vdw, Ivdw, Lap, Edens, Ndens, Qdens };
/// APBS's keyword: "pot", "charge", "kappa", "dielx", "diely", "dielz", "smol", "sspl", "vdw",
/// "ivdw", "lap", "edens", "ndens", "qdens".
std::string pb_map_name(PbMapKind kind);
/// Parses APBS's keyword; UsageError listing them otherwise.
PbMapKind parse_pb_map_kind(const std::string& text);
/// Whether the map needs the potential (pot, lap, edens, ndens, qdens) or the solve's coefficient
/// maps (charge, kappa, diel*); the others need only the atoms, grid and options.
bool pb_map_needs_potential(PbMapKind kind);
bool pb_map_needs_coefficients(PbMapKind kind);

/// One written map: values on `grid` (x fastest; dielx/y/z's grid is the nodes' shifted by half a
/// spacing along its axis, as APBS writes it), its unit and APBS's title line.
struct PbMapValues {
  PbMapKind kind = PbMapKind::Potential;
  GridSpec grid;
  std::vector<double> values;
  std::string unit;   ///< "kT/e", "e/A^3", "1", "kT/e/A^2", "(kT/e/A)^2", "mol/L", "e mol/L"
  std::string title;  ///< APBS's DX title: "POTENTIAL (kT/e)", "CHARGE DISTRIBUTION (e)", ...
};

/// What the maps are made from. `potential` (kT/e, every node) is needed for the maps that
/// pb_map_needs_potential, `coefficients` (with its charge array) for pb_map_needs_coefficients.
struct PbMapInputs {
  const Atoms* atoms = nullptr;
  const GridSpec* grid = nullptr;
  const PbOptions* options = nullptr;
  const std::vector<double>* potential = nullptr;
  const PbCoefficients* coefficients = nullptr;
  int threads = 0;
};

/// The map `kind`, as APBS's `write KIND` writes it for the same solve. Throws Error when an input
/// it needs is missing.
PbMapValues pb_map(PbMapKind kind, const PbMapInputs& inputs);

}  // namespace espgrid::pb
