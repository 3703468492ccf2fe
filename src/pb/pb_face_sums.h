// The boundary's direct sum by distance bands (`--boundary-accuracy`): the multiple Debye–Hückel
// values (bcfl mdh) on the six faces without summing every atom at every face node.
//
// Seen from one face, the atoms fall into bands by their distance ρ from the face's plane. The
// near band (ρ < D₀ = 32 node spacings) is summed exactly at every face node. A farther band
// [D, 2D) makes a potential on the face that varies only on the scale D, so it is summed on a
// lattice of spacing ~D/8 laid over the face and interpolated (bicubic, Lagrange) to the nodes.
// Each lattice's error is measured, not assumed: the band is also summed exactly at every lattice
// cell's centre (where a cubic's error peaks; a far band's error varies on the scale D, so within a
// cell it follows the interpolation's own shape), and while a face's measured errors add up to more
// than the bound, its worst band's lattice is halved, down to the exact sum. On a 270 Å box the
// lattices hold 1/16 to 1/1000 of the nodes and the near band a few % of the atoms.
//
// The map's error from this is at most the faces' (the discrete maximum principle of the
// M-matrix PB operator: the difference of two solutions with the same coefficients solves the
// homogeneous equation with the faces' difference as its boundary values).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "src/compute/compute_timing.h"
#include "src/core/atoms.h"
#include "src/core/grid.h"

namespace espgrid::pb {

/// One sum to evaluate: the terms of `atoms` (indices into the caller's atoms) at the nodes of a
/// uniform plane parallel to a face: node (a, b) at origin + a·spacing[0] along axis u and
/// b·spacing[1] along axis v, at `level` along the face's normal axis.
struct FacePlaneSum {
  int normal = 2;                   ///< the face's normal axis (0 x, 1 y, 2 z)
  int u = 0, v = 1;                 ///< the plane's axes, u fastest (the lower of the other two first)
  std::array<double, 2> origin{};   ///< Å along u and v
  std::array<double, 2> spacing{};  ///< Å
  std::array<std::int64_t, 2> dims{};
  double level = 0;                                   ///< Å along the normal
  const std::vector<std::uint32_t>* atoms = nullptr;  ///< indices of the atoms summed (owned by the plan)
  std::size_t node_count() const { return static_cast<std::size_t>(dims[0] * dims[1]); }
};

/// Evaluates every sum (the caller's kernel and physics): values u fastest, kT/e, one vector a sum.
using FaceSumEvaluator = std::function<std::vector<std::vector<double>>(const std::vector<FacePlaneSum>&)>;

/// The values of `sums` from one array holding them all in order (a device's floats, or the ranks'
/// doubles), as an evaluator returns them: a vector a sum, each made on one of `threads` (0: all cores),
/// so that their new pages are faulted in on many (the capsid's 2.8 M values took 13-15 ms on one).
template <class T>
std::vector<std::vector<double>> split_sums(const std::vector<FacePlaneSum>& sums, const T* values, int threads);

/// The sums shared out among the ranks of a solve across MPI ranks: each rank evaluates the sums
/// given to it (by their cost, atoms × nodes, the same assignment on every rank), and
/// `add_across_ranks` adds every rank's values in place (zeros where a sum is another's: each value
/// has one owner, so the sum is exact), so every rank gets every value. Collective: every rank calls
/// the evaluator with the same sums, as banded_face_values does, its refinement deciding on values
/// every rank holds.
struct FaceSumShare {
  int rank = 0;
  int ranks = 1;
  std::function<void(std::vector<double>&)> add_across_ranks;
};
FaceSumEvaluator shared_among_ranks(FaceSumEvaluator sum, FaceSumShare share);

/// What the banded sum did: for the summary and the tests.
struct FaceSumReport {
  double bound = 0;             ///< kT/e: the accuracy asked for
  double measured_error = 0;    ///< kT/e: the largest face's sum of its bands' measured errors (≤ bound)
  double pair_terms = 0;        ///< atom-node terms evaluated
  double exact_pair_terms = 0;  ///< what the exact sum over every face node would evaluate
  int rounds = 0;               ///< evaluation rounds (1 when every first lattice met the bound)
  double plan_seconds = 0;      ///< the bands and their first lattices
  double sum_seconds = 0;       ///< the evaluator's calls (all rounds)
  double device_seconds = 0;    ///< of which the device's kernels (CUDA events; 0 on the CPU)
  double check_seconds = 0;     ///< the centres' errors and the refinement
  double assemble_seconds = 0;  ///< the interpolation and the boundary nodes' order
};

/// ", faces by distance bands: measured error E kT/e (bound B), P% of the exact sum's terms"; empty
/// for an exact sum (rounds 0).
std::string describe(const FaceSumReport& report);

/// The "boundary" phase (`seconds`, the whole boundary) and, for a banded sum, its parts after it:
/// the bands' planning, the sums (and their device kernels), the error checks and the assembly.
void add_boundary_phases(std::vector<PhaseTiming>& phases, double seconds, const FaceSumReport& report);

/// The near band's reach in node spacings, and a far band's lattice spacing as a fraction of its
/// inner distance: measured on the actin dimer (docs/pb.md).
inline constexpr double kNearBandNodes = 32;
inline constexpr double kLatticePerDistance = 1.0 / 8.0;

/// The face values (boundary_nodes' order) summed band by band with `sum`, each face's measured
/// error at most `bound` kT/e (> 0); the nodes put in order on `threads` (0: all cores). Throws Error
/// when a sum returns the wrong number of values.
std::vector<double> banded_face_values(const Atoms& atoms, const GridSpec& grid, double bound,
                                       const FaceSumEvaluator& sum, FaceSumReport* report = nullptr, int threads = 0);

}  // namespace espgrid::pb
