#include "src/pipeline/time_estimate.h"

#include <algorithm>
#include <vector>

#include "src/core/stopwatch.h"
#include "src/core/thread_count.h"

namespace espgrid {

double probe_rate(const KernelVariant& kernel, const PreparedProblem& problem, const RunOptions& run) {
  const GridSumProblem p = problem.view(nullptr);
  const double plane_evaluations = static_cast<double>(p.plane_points()) * static_cast<double>(p.atom_count);
  // A multithreaded CPU kernel shares planes out to its threads: a plane for each at least, or
  // the probe would measure one thread's rate.
  const int threads = kernel.backend == Backend::Cpu && !kernel.serial ? threads_to_use(run.threads) : 1;
  const auto wanted =
      std::max<std::int64_t>(static_cast<std::int64_t>(2e8 / std::max(plane_evaluations, 1.0)), threads);
  const auto planes = std::clamp<std::int64_t>(wanted, 1, std::max<std::int64_t>(1, p.nz / 10));
  std::vector<float> out(p.plane_points() * static_cast<std::size_t>(planes));
  RunOptions quiet = run;
  quiet.progress = nullptr;
  quiet.planes_done = nullptr;
  const Stopwatch clock;
  compute_planes(kernel, problem, out.data(), 0, planes, quiet);
  return plane_evaluations * static_cast<double>(planes) / std::max(clock.seconds(), 1e-9);
}

std::optional<TimeEstimate> estimate_map_time(const MapJob& job, const PreparedJob& prepared,
                                              double threshold_seconds) {
  const KernelVariant& kernel = *prepared.kernel.kernel;
  if (job.physics.is_pb() || kernel.approximate()) return std::nullopt;
  TimeEstimate e;
  e.evaluations =
      static_cast<double>(prepared.grid.point_count()) * static_cast<double>(prepared.structure.atoms.size());
  // Generous ceilings: cpu-simd measured 5·10^9 atom-evaluations/s a thread (AVX2, 2026-11);
  // GPUs of the H100's class about 10^12/s. A map that these finish within the threshold is
  // not probed.
  const RunOptions& run = job.compute.run;
  double ceiling = 0;
  if (kernel.backend == Backend::Cuda) {
    ceiling = 2e12 * static_cast<double>(std::max<std::size_t>(1, run.devices.size()));
  } else {
    const int threads = kernel.serial ? 1 : threads_to_use(run.threads);
    ceiling = 1e10 * static_cast<double>(threads);
  }
  if (e.evaluations < ceiling * threshold_seconds) return std::nullopt;
  const PreparedProblem problem = PreparedProblem::for_physics(prepared.structure.atoms, prepared.grid, job.physics);
  e.rate = probe_rate(kernel, problem, run);
  e.seconds = e.evaluations / e.rate;
  if (e.seconds < threshold_seconds) return std::nullopt;
  return e;
}

}  // namespace espgrid
