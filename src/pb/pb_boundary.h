// The Dirichlet values on the grid's six faces, kT/e, for each of APBS 3.4.1's boundary conditions
// (src/mg/vpmg.c: bcCalc, bcfl_sdh/multipolebc, bcflnew, focusFillBound). Every function returns a
// full grid of values, 0 at the interior nodes.
#pragma once

#include <array>
#include <vector>

#include "src/core/atoms.h"
#include "src/core/grid.h"
#include "src/pb/pb_face_sums.h"
#include "src/physics/pb_options.h"
#include "src/physics/physics_options.h"
#include "src/registry/kernel_registry.h"

namespace espgrid::pb {

/// The sum of `kernel` with `physics` over `atoms` on `grid`, kT/e as doubles (the kernels write floats).
std::vector<double> direct_sum(const Atoms& atoms, const GridSpec& grid, const PhysicsOptions& physics,
                               const KernelVariant& kernel, const RunOptions& run);

/// φ_Coulomb = k Σ q / (ε_solute r) at every node, kT/e, by `kernel`.
std::vector<double> coulomb_map(const Atoms& atoms, const GridSpec& grid, const PbOptions& options,
                                const KernelVariant& kernel, const RunOptions& run);

/// `bcfl mdh`: Σ q e^(−κ(d − a)) / ((1 + κa) d) · k/ε_w over the atoms (a: atom radius). `kernel`
/// must compute the Debye model (and Coulomb without salt): the registry's exact direct sums.
/// With options.boundary_accuracy > 0 the faces are summed by distance bands (pb_face_sums.h),
/// each face within that many kT/e of the exact sum (measured: `report`), their sums shared among
/// the ranks of a solve across MPI ranks with `share` (collective then).
std::vector<double> mdh_boundary(const Atoms& atoms, const GridSpec& grid, const PbOptions& options,
                                 const KernelVariant& kernel, const RunOptions& run, FaceSumReport* report = nullptr,
                                 const FaceSumShare* share = nullptr);

/// `bcfl mdh` at the face nodes only, in boundary_nodes' order, by the CUDA point kernel on `device`
/// (the face values of mdh_boundary with a CUDA kernel). The bands only from kDeviceBandTerms
/// atom-node terms on: below, the exact sum takes under ~20 ms on an H200 and the bands' host work
/// more (the actin dimer at 1 Å, 8·10⁸ terms: 3.6 ms exact, 7.2 ms banded; 290k atoms, 1.4·10¹¹:
/// 116 ms exact, 87 ms banded).
inline constexpr double kDeviceBandTerms = 2e10;
std::vector<double> mdh_face_values(const Atoms& atoms, const GridSpec& grid, const PbOptions& options, int device,
                                    FaceSumReport* report = nullptr, int threads = 0);

/// `bcfl mdh` at one point in double precision, term by term: the oracle of the float32 sums.
double mdh_reference(const Atoms& atoms, const PbOptions& options, const std::array<double, 3>& point);

/// `bcfl sdh`: the molecule as one sphere at the centre of the atoms' bounding box, radius the
/// largest (distance to the centre + atom radius), holding the total charge, the dipole and the
/// traceless quadrupole about the centre: APBS's multipole expansion outside a dielectric sphere
/// (with κ: the Debye–Hückel form of each order).
std::vector<double> sdh_boundary(const Atoms& atoms, const GridSpec& grid, const PbOptions& options);
/// `bcfl sdh` at the face nodes only, in boundary_nodes' order (the same values as sdh_boundary's:
/// the device pipeline takes these, without a grid-sized array on the host). `threads`: OpenMP's
/// count (0: threads_to_use's default), as for every CPU loop of a run (--threads).
std::vector<double> sdh_face_values(const Atoms& atoms, const GridSpec& grid, const PbOptions& options,
                                    int threads = 0);

/// `bcfl focus`: each face node's value by trilinear interpolation of `parent_potential` (kT/e on
/// `parent`, x fastest). Throws UsageError naming the corner when `grid` is not inside `parent`
/// (APBS allows 1e-9 Å of rounding).
std::vector<double> focus_boundary(const GridSpec& grid, const GridSpec& parent,
                                   const std::vector<double>& parent_potential);
/// `bcfl focus` at the face nodes only, in boundary_nodes' order (`threads` as above).
std::vector<double> focus_face_values(const GridSpec& grid, const GridSpec& parent,
                                      const std::vector<double>& parent_potential, int threads = 0);

/// The linear indices of the grid's boundary nodes (every node on one of the six faces), once each.
std::vector<std::size_t> boundary_nodes(const GridSpec& grid);

/// A full grid of 0 with `face_values` (boundary_nodes' order) on the faces.
std::vector<double> on_the_faces(const GridSpec& grid, const std::vector<double>& face_values);

}  // namespace espgrid::pb
