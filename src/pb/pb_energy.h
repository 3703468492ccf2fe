// APBS 3.4.1's electrostatic energies of a solved PB map (src/mg/vpmg.c: Vpmg_energy, qfEnergy,
// qmEnergy, dielEnergy, qfAtomEnergy; focusing's extEnergy), all in kT:
//
//   fixed charge  qf = Σ qᵢ φ(rᵢ)      spl2: Σ over nodes of φ · (spread charge); spl0, spl4:
//                                      φ trilinear at each atom on the grid
//   mobile charge qm = lpbe: ½ Σ ε_w κ² λ φ² V/zmagic;  npbe: Σ λ (ε_w κ²/2I) Σⱼ cⱼ (e^(−zⱼφ) − 1) V/zmagic
//   dielectric    di = ½ Σ over faces ε (Δφ/h)² V/zmagic
//   total         lpbe (and npbe without ions): ½ qf;  npbe with ions: qf − di − qm
//
// V: the cell volume, zmagic = 4π e²/(kT·Å) (pb::source_scale). On a focusing level each term also
// holds the coarser levels' share from outside this level's domain (APBS extEnergy), which the
// coarser solve computed for this domain (PbRun::focus_child → PbResult::energy.outside_child).
#pragma once

#include <array>
#include <vector>

#include "src/core/atoms.h"
#include "src/core/grid.h"
#include "src/pb_surface/pb_coefficients.h"
#include "src/physics/pb_options.h"

namespace espgrid::pb {

/// APBS's three energy terms, kT.
struct PbEnergyTerms {
  double fixed_charge = 0;   ///< qf: Σ qᵢ φ(rᵢ) (APBS prints ½ of it as "Fixed charge energy")
  double mobile_charge = 0;  ///< qm: the mobile ions' term (0 without ions)
  double dielectric = 0;     ///< di: the field energy in the dielectric
  PbEnergyTerms& operator+=(const PbEnergyTerms& o) {
    fixed_charge += o.fixed_charge;
    mobile_charge += o.mobile_charge;
    dielectric += o.dielectric;
    return *this;
  }
};

/// The energies of one solve (PbResult::energy).
struct PbEnergy {
  PbEnergyLevel level = PbEnergyLevel::None;  ///< what was computed (None: nothing below is set)
  double temperature = 298.15;                ///< K, for the conversion to kJ/mol
  double total = 0;                           ///< kT: APBS's "Total electrostatic energy"
  PbEnergyTerms terms;                        ///< kT: this level's own terms plus from_coarser
  PbEnergyTerms from_coarser;  ///< kT: the part of `terms` from outside this level's domain (focusing; else 0)
  /// Components: ½ qᵢ φ(rᵢ) per atom, kT, φ trilinear at the atom as APBS's per-atom energies
  /// (whatever the charge method); 0 for an atom off the grid.
  std::vector<double> per_atom;
  /// With PbRun::focus_child: the terms over this level outside the child's domain (APBS extEnergy),
  /// this level's own from_coarser included; the child's PbFocusParent::outside.
  PbEnergyTerms outside_child;
  /// kT → kJ/mol at `temperature` (k_B T N_A / 1000, CODATA 2018).
  double kj_per_mol(double kt) const;
  double total_kj_per_mol() const { return kj_per_mol(total); }
};

/// An axis-aligned box, Å: an mg-para block's global fine box (its partitions' union).
struct EnergyBox {
  std::array<double, 3> lower{}, upper{};
};
/// From the first node of `grid` to its last.
EnergyBox box_of(const GridSpec& grid);

/// What the energy of one solved level needs (host memory, x fastest).
struct EnergyInputs {
  const Atoms* atoms = nullptr;
  const GridSpec* grid = nullptr;
  const PbOptions* options = nullptr;
  const std::vector<double>* potential = nullptr;  ///< φ, kT/e, every node (boundary values on the faces)
  /// The spread charges, e per node (PbCoefficients::charge); needed for spl2's fixed-charge term.
  const std::vector<double>* charge = nullptr;
  /// λ per node, and ε on the faces; needed for the mobile and dielectric terms (Components, npbe).
  const PbCoefficients* coefficients = nullptr;
  /// APBS's partition (Vpmg_setPart, set on every level of an mg-para block): each node's term
  /// weighted by its cell's share of the box, each atom's by whether it lies in it; null: all count.
  const EnergyBox* partition = nullptr;
  int threads = 0;  ///< OpenMP's count for the sums (0: threads_to_use's default), the run's --threads
};

/// The energies APBS reports for this level at `level` (from_coarser added to every term).
PbEnergy apbs_energy(const EnergyInputs& in, PbEnergyLevel level, const PbEnergyTerms& from_coarser = {});
/// The terms over the nodes and atoms of this level outside `child` (APBS extEnergy: a node counts
/// unless its cell overlaps the child's box; an atom counts unless it lies inside the box), plus
/// `from_coarser`. Needs `charge` (spl2) and `coefficients`.
PbEnergyTerms energy_outside(const EnergyInputs& in, const GridSpec& child, const PbEnergyTerms& from_coarser);
/// φ at `p` by trilinear interpolation on the nodes (APBS's rule: nodes floor/ceil of the
/// fractional index); false when p is off the grid.
bool trilinear_at(const GridSpec& grid, const std::vector<double>& values, const double p[3], double& value);

}  // namespace espgrid::pb
