// The mean (and standard deviation) of the potential over the frames of a trajectory, on one
// fixed grid: the C++ half of espgrid.average_map (python/espgrid/trajectory.py). Python reads
// the frames (MDAnalysis) and hands over each frame's positions; the map of every frame is
// computed through the library facade and folded into running sums in double precision.
//
// Every frame is computed by one ComputeSession (pipeline/map_pipeline.h): the kernel is chosen
// once for the job's physics and grid, and each frame brings only new positions. The frames are
// summed exactly (compute/frame_sums.h), so MPI ranks and devices that each average some frames
// merge into the same bits as one process that averages them all.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "src/compute/frame_sums.h"
#include "src/physics/potential_map.h"
#include "src/pipeline/map_pipeline.h"
#include "src/structure/structure_reader.h"

namespace espgrid::python {

class FrameAverage {
 public:
  /// Selects the kernel once (so a missing GPU fails before any frame is read) for `charges`
  /// (e) and `radii` (Å; empty: none, for the pair models; --model pb needs them) on `grid`.
  /// `source` describes the frames for the output files' headers. `job` gives the physics and
  /// compute options; its grid is replaced by `grid`.
  FrameAverage(const MapJob& job, const GridSpec& grid, std::vector<double> charges, std::vector<double> radii,
               bool with_deviation, std::string source);

  std::size_t atom_count() const noexcept { return charges_.size(); }
  const KernelSelection& kernel() const noexcept { return session_.kernel(); }

  /// Computes the map of one frame from `xyz` (atom_count() × 3 positions, Å, row-major) and
  /// adds it to the exact sums (src/compute/frame_sums.h: the same bits in any order, on any
  /// number of ranks). `progress` reports the frame's planes and may throw to stop (an interrupt).
  void add_frame(const double* xyz, const ProgressFn& progress);
  std::size_t frames() const noexcept { return static_cast<std::size_t>(sums_.frames()); }
  /// The sums so far: another rank's or device's are merged into them (FrameSums::merge).
  FrameSums& sums() noexcept { return sums_; }
  const FrameSums& sums() const noexcept { return sums_; }
  /// Kernel and transfer seconds summed over the frames so far.
  double kernel_seconds() const noexcept { return kernel_seconds_; }
  double transfer_seconds() const noexcept { return transfer_seconds_; }
  /// --model pb: the last frame's solve (method, iterations, residual) for the summary; empty otherwise.
  const std::string& last_solve() const noexcept { return last_solve_; }

  /// The mean over the frames, float32 (rounded once, from the exact sums).
  PotentialMap mean() const;
  /// The standard deviation over the frames, √(Σ(φ − mean)² / frames) (population form:
  /// the frames are the whole set being described). Error unless built with_deviation.
  PotentialMap deviation() const;

 private:
  PotentialMap map_with(std::vector<float> values, const std::string& what) const;

  /// The job with the exact grid, and the session that computes every frame of it.
  static MapJob with_grid(MapJob job, const GridSpec& grid, const std::string& source);
  MapJob job_;
  ComputeSession session_;
  std::vector<double> charges_;
  std::vector<double> radii_;
  std::string source_;
  FrameSums sums_;
  double kernel_seconds_ = 0;
  double transfer_seconds_ = 0;
  std::string last_solve_;
};

/// Throws UsageError naming the first coordinate the structure readers would refuse (not finite,
/// beyond ±1e6 Å: atom_value_problem); `what` names the array, e.g. "positions".
void check_positions(const double* xyz, std::size_t atoms, const std::string& what);
/// Throws UsageError naming the first of `values` (charges in e, radii in Å) the readers would
/// refuse as `field` (atom_value_problem: NaN, infinite, negative radii, beyond the limits).
void check_atom_values(const std::vector<double>& values, AtomField field, const std::string& what);

/// Atoms at `n` positions `xyz` (n × 3, Å, row-major); charges, radii and elements left empty.
Atoms atoms_of(const double* xyz, std::size_t n);

}  // namespace espgrid::python
