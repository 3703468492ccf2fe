// Sharing a map's z-planes among device workers: a work queue of plane ranges and the threads
// that drain it. Plain C++ (no CUDA): the CUDA driver supplies what one worker does on one
// device (kernels/device_driver.cu), this file runs the workers, reports progress from the
// calling thread and turns the first failure into the call's error. Tested without a GPU
// by fake workers (tests/test_device_scheduler.cpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "src/compute/grid_sum_problem.h"

namespace espgrid {

/// Whole z-planes [k0, k0 + planes) of a problem.
struct PlaneRange {
  std::int64_t k0 = 0;
  std::int64_t planes = 0;
};

/// Consecutive ranges of z-planes handed out from one atomic counter. Each take asks for at
/// most what the taker's slab buffer holds, so workers with different budgets share one queue;
/// one worker alone gets exactly the fixed slab sequence. After stop() (a worker failed)
/// nothing more is handed out.
class PlaneQueue {
 public:
  explicit PlaneQueue(std::int64_t nz) : nz_(nz) {}
  std::optional<PlaneRange> take(std::int64_t max_planes) {
    std::int64_t k0 = next_.load(std::memory_order_relaxed);
    for (;;) {
      if (stopped_.load(std::memory_order_relaxed) || k0 >= nz_) return std::nullopt;
      const std::int64_t count = std::min(std::max<std::int64_t>(max_planes, 1), nz_ - k0);
      if (next_.compare_exchange_weak(k0, k0 + count, std::memory_order_relaxed)) return PlaneRange{k0, count};
    }
  }
  void stop() noexcept { stopped_.store(true, std::memory_order_relaxed); }

 private:
  const std::int64_t nz_;
  std::atomic<std::int64_t> next_{0};
  std::atomic<bool> stopped_{false};
};

/// What one worker did.
struct WorkerResult {
  double kernel_seconds = 0;
  std::int64_t planes = 0;
  int chunks = 0;
  double wall_seconds = 0;  ///< filled by run_plane_workers: the worker thread's whole run
};

/// A worker's run: takes ranges from `queue` until it is empty, calling `done` (from the
/// worker's thread) as each range is in the output. Throws on failure.
using PlaneWorker =
    std::function<WorkerResult(int worker, PlaneQueue& queue, const std::function<void(const PlaneRange&)>& done)>;

/// Runs `workers` workers, each in its own thread, on one queue over `nz` planes. Progress
/// (planes done, nz) is reported from the calling thread. When a worker throws, the queue
/// stops (the others finish their chunks in flight and return), and after every thread has
/// joined the first error is rethrown; nothing is left running either way.
std::vector<WorkerResult> run_plane_workers(int workers, std::int64_t nz, const PlaneWorker& worker,
                                            const ProgressFn& progress);

}  // namespace espgrid
