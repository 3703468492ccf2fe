#include "python/src/frame_average.h"

#include <omp.h>

#include <cmath>
#include <cstdint>

#include "src/core/errors.h"
#include "src/core/text_format.h"
#include "src/core/thread_count.h"
#include "src/structure/structure_reader.h"

namespace espgrid::python {

Atoms atoms_of(const double* xyz, std::size_t n) {
  Atoms atoms;
  atoms.x.resize(n);
  atoms.y.resize(n);
  atoms.z.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    atoms.x[i] = xyz[3 * i];
    atoms.y[i] = xyz[3 * i + 1];
    atoms.z[i] = xyz[3 * i + 2];
  }
  return atoms;
}

void check_positions(const double* xyz, std::size_t atoms, const std::string& what) {
  static const char* const kAxis[] = {"x", "y", "z"};
  for (std::size_t i = 0; i < atoms * 3; ++i) {
    const double c = xyz[i];
    if (const std::string_view problem = atom_value_problem(AtomField::Coordinate, c); !problem.empty())
      throw UsageError(what + "[" + std::to_string(i / 3) + ", " + std::to_string(i % 3) + "] (" + kAxis[i % 3] +
                       " of atom " + std::to_string(i / 3) + ") is " + number_text(c) +
                       ": coordinates must be finite numbers of Å within ±1e6 (it " + std::string(problem) + ")");
  }
}

void check_atom_values(const std::vector<double>& values, AtomField field, const std::string& what) {
  for (std::size_t i = 0; i < values.size(); ++i)
    if (const std::string_view problem = atom_value_problem(field, values[i]); !problem.empty())
      throw UsageError(what + "[" + std::to_string(i) + "] = " + number_text(values[i]) + " " + std::string(problem) +
                       (field == AtomField::Charge ? ": charges must be finite numbers of e within ±1000"
                                                   : ": radii must be finite numbers of Å from 0 to 100") +
                       ", as in a PQR file");
}

MapJob FrameAverage::with_grid(MapJob job, const GridSpec& grid, const std::string& source) {
  job.grid.origin = grid.origin;
  job.grid.dims = grid.dims;
  job.grid.spacing = grid.spacing;
  job.input.description = source;
  return job;
}

FrameAverage::FrameAverage(const MapJob& job, const GridSpec& grid, std::vector<double> charges, bool with_deviation,
                           std::string source)
    : job_(with_grid(job, grid, source)),
      session_(job_),
      charges_(std::move(charges)),
      with_deviation_(with_deviation),
      source_(std::move(source)) {
  if (charges_.empty()) throw UsageError("no atoms to average over");
  mean_.assign(session_.grid().point_count(), 0.0);
  if (with_deviation_) m2_.assign(session_.grid().point_count(), 0.0);
}

/// Planes of each frame to the caller's progress function.
class FrameProgress : public MapObserver {
 public:
  explicit FrameProgress(const ProgressFn& progress) : progress_(progress) {}
  void progress(std::size_t done, std::size_t total) override {
    if (progress_) progress_(done, total);
  }

 private:
  const ProgressFn& progress_;
};

void FrameAverage::add_frame(const double* xyz, const ProgressFn& progress) {
  const std::size_t n = charges_.size();
  check_positions(xyz, n, "positions");
  Atoms atoms = atoms_of(xyz, n);
  atoms.charge = charges_;
  atoms.radius.assign(n, 0.0);
  atoms.element.assign(n, ElementSymbol{});
  FrameProgress observer(progress);
  const MapResult result = session_.compute(atoms, observer);
  kernel_seconds_ += result.timing.kernel_seconds;
  transfer_seconds_ += result.timing.transfer_seconds;

  // Welford's update: mean += (φ − mean)/n, M2 += (φ − mean_old)(φ − mean_new).
  const double count = static_cast<double>(++frames_);
  const float* values = result.map.values.data();
  const auto points = static_cast<std::int64_t>(mean_.size());
  const int threads = threads_to_use(job_.compute.run.threads);
  double* mean = mean_.data();
  double* m2 = with_deviation_ ? m2_.data() : nullptr;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::int64_t p = 0; p < points; ++p) {
    const double phi = values[p];
    const double before = phi - mean[p];
    mean[p] += before / count;
    if (m2) m2[p] += before * (phi - mean[p]);
  }
}

PotentialMap FrameAverage::map_with(std::vector<float> values, const std::string& what) const {
  PotentialMap map;
  map.grid = session_.grid();
  map.physics = job_.physics;
  map.values = std::move(values);
  map.source = what + " over " + std::to_string(frames_) + (frames_ == 1 ? " frame" : " frames") + " of " + source_;
  return map;
}

PotentialMap FrameAverage::mean() const {
  if (frames_ == 0) throw Error("no frames were added, so there is no mean");
  return map_with(std::vector<float>(mean_.begin(), mean_.end()), "mean");
}

PotentialMap FrameAverage::deviation() const {
  if (!with_deviation_) throw Error("internal error: the standard deviation was not asked for");
  if (frames_ == 0) throw Error("no frames were added, so there is no standard deviation");
  std::vector<float> values(m2_.size());
  const double count = static_cast<double>(frames_);
  for (std::size_t p = 0; p < values.size(); ++p) values[p] = static_cast<float>(std::sqrt(m2_[p] / count));
  return map_with(std::move(values), "standard deviation");
}

}  // namespace espgrid::python
