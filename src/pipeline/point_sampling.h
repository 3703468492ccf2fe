// The potential at a list of points (`espgrid sample`, Python's potential_at and Map.sample).
// The points are no grid, so the registry's map kernels do not serve them; a job's
// Physics and Compute options choose between two point evaluators of the same pair models:
//
//   CPU   the exact sum in double precision over the pair evaluator (surface::potential_at, the
//         evaluator `espgrid view` and `espgrid surface` colour vertices with), on OpenMP threads;
//         each point's sum runs over the atoms in order, so any thread count gives the same bits
//   CUDA  the same sum in float32 on one GPU (kernels/points.cu: the map kernels' arithmetic,
//         within the float32 bound of compute/oracle.h of the CPU's values)
//
// --backend auto takes the GPU when one is usable, as `espgrid map` does. Or the values of a map,
// interpolated trilinearly (surface::interpolate, `espgrid view`'s rule).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "src/core/atoms.h"
#include "src/job/map_job.h"
#include "src/physics/potential_map.h"

namespace espgrid {

struct PointValues {
  std::vector<float> values;  ///< one a point, in the physics' unit
  std::string method;         ///< "exact direct sum over 906 atoms, double precision", ...
  std::string device;         ///< "CPU, 2 threads" or the GPU's description
  std::string why;            ///< how the evaluator was chosen: "backend auto: no GPU (...)"
  double seconds = 0;         ///< the evaluation's wall time
  double kernel_seconds = 0;  ///< GPU: its kernels' time (CUDA events); CPU: the same as seconds
};

/// The checks sample_points makes of a job before anything is read: UsageError for --model pb
/// (a field solve has no sum at a point: sample its map with --map), the approximate method's
/// options, a map kernel named with --kernel and several devices; Error for --backend cuda
/// without a usable GPU.
void check_point_job(const MapJob& job);

/// φ at each point (x, y, z a point, Å) of `atoms` (charges in e) with the job's physics and
/// compute options (backend, device, threads). `progress(done, total)` in points, from the
/// calling thread after each chunk of points (about 2^28 pair terms each).
PointValues sample_points(const MapJob& job, const Atoms& atoms, const std::vector<double>& points,
                          const ProgressFn& progress = nullptr);

/// The map's values at each point by trilinear interpolation. The indices of the points outside
/// its box go to `outside` (their values are NaN), those inside whose value is not finite (a
/// map made in Python may hold NaN; files read back cannot) to `not_finite`.
PointValues interpolate_points(const PotentialMap& map, const std::vector<double>& points,
                               std::vector<std::size_t>& outside, std::vector<std::size_t>& not_finite);

/// "(x0 to x1, y0 to y1, z0 to z1 Å)": a map's box, for messages about points outside it.
std::string box_text(const GridSpec& grid);

}  // namespace espgrid
