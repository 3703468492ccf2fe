// How long a map will take, said before it is computed (`espgrid map` prints it when it is more
// than a few seconds; `espgrid verify` before its reference map). The rate is measured:
// the chosen kernel computes the map's first planes (a probe of about 2·10^8 atom-evaluations,
// at most a tenth of the map) and the whole map's work is divided by it.
#pragma once

#include <optional>
#include <string>

#include "src/compute/prepared_problem.h"
#include "src/pipeline/map_pipeline.h"
#include "src/registry/kernel_registry.h"

namespace espgrid {

/// Atom evaluations per second of `kernel` on `problem`, timed on its first planes: enough of
/// them for about 2·10^8 evaluations (a few tenths of a second on one core) and one for each
/// thread of a multithreaded CPU kernel, at least one, at most a tenth of the map, so that the
/// probe costs little next to what it predicts.
double probe_rate(const KernelVariant& kernel, const PreparedProblem& problem, const RunOptions& run);

struct TimeEstimate {
  double seconds = 0;      ///< the whole map's kernel time, predicted
  double evaluations = 0;  ///< grid points × atoms
  double rate = 0;         ///< atom-evaluations per second measured by the probe
};

/// The kernel time of a prepared job's map, when it may exceed `threshold_seconds`: nothing for
/// maps that even a generous rate (about twice the fastest measured per CPU thread, 2·10^12/s a
/// GPU) computes sooner, for Poisson–Boltzmann maps and approximate methods (neither has a
/// rate per atom-evaluation), otherwise measured by a probe (probe_rate). The probe's planes
/// are computed again by the map.
std::optional<TimeEstimate> estimate_map_time(const MapJob& job, const PreparedJob& prepared, double threshold_seconds);

}  // namespace espgrid
