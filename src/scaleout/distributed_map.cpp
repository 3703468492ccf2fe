#include "src/scaleout/distributed_map.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <set>

#include "src/core/errors.h"
#include "src/core/number_parsing.h"
#include "src/core/stopwatch.h"
#include "src/pipeline/map_pipeline.h"

namespace espgrid::scaleout {

bool failure_injected(int rank) {
  const char* value = std::getenv("ESPGRID_TEST_FAIL_RANK");
  if (!value || !*value) return false;
  const auto parsed = parse_integer(value);
  return parsed && *parsed == rank;
}

int rank_local_device(const Cluster& cluster, const std::vector<int>& usable_devices) {
  if (usable_devices.empty()) return -1;
  return usable_devices[static_cast<std::size_t>(cluster.local_rank()) % usable_devices.size()];
}

DistributedRun compute_distributed(Cluster& cluster, const KernelVariant& kernel, const PreparedProblem& problem,
                                   float* root_map, const RunOptions& options) {
  const auto start = Clock::now();
  const GridSumProblem whole = problem.view(nullptr);
  const PlaneSpan span = rank_planes(whole.nz, cluster.rank(), cluster.size());
  const std::size_t plane_points = static_cast<std::size_t>(whole.nx) * static_cast<std::size_t>(whole.ny);
  std::vector<float> local;
  RunTiming mine;
  mine.device = "no planes";
  cluster.agree("computing its planes", [&] {
    if (failure_injected(cluster.rank()))
      throw Error("injected failure on planes " + std::to_string(span.begin) + "-" + std::to_string(span.end - 1) +
                  " (ESPGRID_TEST_FAIL_RANK=" + std::to_string(cluster.rank()) + ")");
    if (span.count() == 0) return;
    float* out = nullptr;
    if (cluster.is_root()) {
      if (!root_map) throw Error("compute_distributed: rank 0 has no map buffer");
      out = root_map + static_cast<std::size_t>(span.begin) * plane_points;
    } else {
      local.assign(static_cast<std::size_t>(span.count()) * plane_points, std::numeric_limits<float>::quiet_NaN());
      out = local.data();
    }
    RunOptions o = options;
    if (!cluster.is_root()) o.progress = nullptr;
    mine = compute_planes(kernel, problem, out, span.begin, span.count(), o);
  });

  DistributedRun run;
  const auto gather_start = Clock::now();
  cluster.gather_planes(local.data(), span, static_cast<std::int64_t>(plane_points), root_map, whole.nz);
  run.gather_seconds = seconds_since(gather_start);

  const std::vector<double> numbers = cluster.gather_values(
      {static_cast<double>(span.begin), static_cast<double>(span.end), mine.kernel_seconds, mine.wall_seconds});
  const std::vector<std::string> hosts = cluster.gather_text(cluster.host());
  const std::vector<std::string> devices = cluster.gather_text(mine.device);
  const std::vector<std::string> kernels = cluster.gather_text(std::string(kernel.name));
  if (!cluster.is_root()) {
    run.timing = mine;
    run.ranks.push_back({cluster.rank(), cluster.host(), std::string(kernel.name), mine.device, span,
                         mine.kernel_seconds, mine.wall_seconds});
    return run;
  }
  std::set<std::string> distinct_hosts;
  for (int r = 0; r < cluster.size(); ++r) {
    const auto i = static_cast<std::size_t>(r);
    RankReport report;
    report.rank = r;
    report.host = hosts[i];
    report.kernel = kernels[i];
    report.device = devices[i];
    report.planes = {static_cast<std::int64_t>(numbers[4 * i]), static_cast<std::int64_t>(numbers[4 * i + 1])};
    report.kernel_seconds = numbers[4 * i + 2];
    report.wall_seconds = numbers[4 * i + 3];
    run.timing.kernel_seconds = std::max(run.timing.kernel_seconds, report.kernel_seconds);
    distinct_hosts.insert(report.host);
    run.ranks.push_back(report);
  }
  run.timing.wall_seconds = seconds_since(start);
  run.timing.device = std::to_string(cluster.size()) + (cluster.size() == 1 ? " rank" : " MPI ranks") + " on " +
                      std::to_string(distinct_hosts.size()) + (distinct_hosts.size() == 1 ? " host" : " hosts");
  run.timing.parts = mine.parts;
  return run;
}

}  // namespace espgrid::scaleout
