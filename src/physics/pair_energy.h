// The electrostatic energy of a configuration under a pair model (energies per frame of
// a trajectory, the cheap option beside PB): exact double-precision sums over the pairs, with
// the same evaluator the maps use (pair_potentials.h, softening length included), so
//   E = ½ Σᵢ qᵢ φ_others(rᵢ) = Σ_{i<j} qᵢ qⱼ (k/ε) f(rᵢⱼ).
#pragma once

#include <cstdint>
#include <vector>

#include "src/core/atoms.h"
#include "src/physics/physics_options.h"

namespace espgrid {

/// Σ over the pairs of distinct atoms of `members` (indices into `atoms`) of qᵢ qⱼ (k/ε) f(rᵢⱼ),
/// in `physics.unit` × e (kT for kT/e, kcal/mol for kcal/mol/e, eV for V). Atoms are split over
/// `threads` OpenMP threads (0: all); each atom's row is summed in index order and the rows are
/// added in index order, so the result does not depend on the thread count.
double pair_energy(const Atoms& atoms, const PhysicsOptions& physics, const std::vector<std::int32_t>& members,
                   int threads = 0);

/// Σ over i in `a`, j in `b` of qᵢ qⱼ (k/ε) f(rᵢⱼ): the interaction of two disjoint groups, which is
/// E(a ∪ b) − E(a) − E(b) exactly. Throws UsageError when an atom is in both.
double pair_interaction(const Atoms& atoms, const PhysicsOptions& physics, const std::vector<std::int32_t>& a,
                        const std::vector<std::int32_t>& b, int threads = 0);

}  // namespace espgrid
