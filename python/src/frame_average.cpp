#include "python/src/frame_average.h"

#include <omp.h>

#include <cmath>
#include <cstdint>

#include "src/core/errors.h"
#include "src/core/text_format.h"
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

FrameAverage::FrameAverage(const MapJob& job, const GridSpec& grid, std::vector<double> charges,
                           std::vector<double> radii, bool with_deviation, std::string source)
    : job_(with_grid(job, grid, source)),
      session_(job_),
      charges_(std::move(charges)),
      radii_(std::move(radii)),
      source_(std::move(source)),
      sums_(session_.grid().point_count(), with_deviation) {
  if (charges_.empty()) throw UsageError("no atoms to average over");
  if (!radii_.empty() && radii_.size() != charges_.size())
    throw UsageError("radii hold " + std::to_string(radii_.size()) + " atoms, the charges " +
                     std::to_string(charges_.size()));
  if (radii_.empty()) radii_.assign(charges_.size(), 0.0);
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
  atoms.radius = radii_;
  atoms.element.assign(n, ElementSymbol{});
  FrameProgress observer(progress);
  const MapResult result = session_.compute(atoms, observer);
  kernel_seconds_ += result.timing.kernel_seconds;
  transfer_seconds_ += result.timing.transfer_seconds;
  if (job_.physics.poisson_boltzmann) last_solve_ = result.timing.method;
  sums_.add(result.map.values.data(), job_.compute.run.threads);
}

PotentialMap FrameAverage::map_with(std::vector<float> values, const std::string& what) const {
  PotentialMap map;
  map.grid = session_.grid();
  map.physics = job_.physics;
  map.values = std::move(values);
  const std::size_t count = frames();
  map.source = what + " over " + std::to_string(count) + (count == 1 ? " frame" : " frames") + " of " + source_;
  return map;
}

PotentialMap FrameAverage::mean() const { return map_with(sums_.mean(job_.compute.run.threads), "mean"); }

PotentialMap FrameAverage::deviation() const {
  return map_with(sums_.deviation(job_.compute.run.threads), "standard deviation");
}

}  // namespace espgrid::python
