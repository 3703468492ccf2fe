// The potential at arbitrary points: the exact direct sum over the atoms (for the vertices of
// a surface: better than interpolating a map where the potential bends sharply near atoms),
// or trilinear interpolation of a map (any map, APBS's included, and structures too large to
// sum over every vertex). Used by `espgrid view` and `espgrid surface`.
#pragma once

#include <cstddef>
#include <vector>

#include "src/core/atoms.h"
#include "src/physics/physics_options.h"
#include "src/physics/potential_map.h"
#include "src/view/mesh.h"

namespace espgrid::surface {

/// The points p + offset·n for every vertex p of `mesh` with normal n, Å (x, y, z each):
/// where the potential colouring a molecular surface is sampled (1.4 Å outside it, as ChimeraX
/// and the renderer sample it).
std::vector<double> offset_points(const TriangleMesh& mesh, double offset);

/// φ(p) = k/ε Σᵢ qᵢ f(|p − rᵢ|² + a²) at each point, in physics.unit, by the pair evaluator of
/// physics.model (src/physics/pair_potentials.h) in double precision: what the map's kernels
/// compute at their grid points, here at any point (a: the kernels' softening length). Points
/// are split over OpenMP threads; each sum runs over the atoms in order, so the result is the
/// same on any number of threads. `points` holds 3 values a point. `threads`: OpenMP threads,
/// 0 for OpenMP's default.
std::vector<float> potential_at(const Atoms& atoms, const PhysicsOptions& physics, const std::vector<double>& points,
                                int threads = 0);

/// φ at each atom's centre from every other atom: potential_at's sum without the atom's own
/// term (q/a with the kernels' softening length a: 10⁴ q Å⁻¹, which is no potential the atom
/// feels), in double precision, each atom's sum over the others in order, so any thread count
/// gives the same bits. Atoms [first, first + count) only; `threads` as potential_at's.
std::vector<double> potential_at_atoms(const Atoms& atoms, const PhysicsOptions& physics, std::size_t first,
                                       std::size_t count, int threads = 0);

/// Whether the point (x, y, z) lies in the grid's box: within a millionth of a spacing of it
/// counts as on its face. interpolate() samples exactly these points.
bool inside_box(const GridSpec& grid, double x, double y, double z);

/// Trilinear interpolation of `map` at each point; NaN for points outside the map's box.
std::vector<float> interpolate(const PotentialMap& map, const std::vector<double>& points);

}  // namespace espgrid::surface
