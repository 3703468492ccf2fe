// How the multithreaded CPU kernels share out a map: one OpenMP parallel region for the whole
// map, tasks (plane k, task t within the plane) handed out in plane order from one atomic
// counter, whole planes reported in order from the calling thread.
//
// Why not a parallel region per plane with schedule(dynamic, 1), as before: on a 2-core machine
// with one other busy process the README's acetazolamide map (18 atoms, 81³ points) took
// 1,150 ms with cpu-simd against 61 ms with cpu-reference. Each of the 81 regions
// ended in a barrier where the team's threads spun (libgomp spins ~300,000 rounds before it
// sleeps) while the thread sharing a core with the other process waited for its time slice.
// One region has one barrier at its end, and tasks taken from a counter let a thread that is
// slowed by another process simply take fewer of them (a static split would make the whole
// map wait for the slowest thread). A map too small to repay starting threads runs on the
// calling thread alone.
#pragma once

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>

#include "src/compute/grid_sum_problem.h"
#include "src/core/thread_count.h"

namespace espgrid::cpu {

/// Below this much work (pair evaluations, roughly ns on one core) a map runs on one thread:
/// starting or waking a team costs tens of µs, and a barrier on a busy machine a time slice.
inline constexpr double kMinParallelWork = 2e6;

/// The team for `work` pair evaluations with `threads` requested (0: OpenMP's default).
inline int team_for(double work, int threads, std::int64_t tasks) {
  int team = threads_to_use(threads);
  if (work < kMinParallelWork) team = 1;
  return static_cast<int>(std::clamp<std::int64_t>(team, 1, std::max<std::int64_t>(tasks, 1)));
}

/// Runs task(k, t, scratch) for every plane k < planes and t < tasks_per_plane on `team`
/// threads (each with its own default-constructed Scratch), tasks taken in plane order.
/// progress(done, planes) is called from the calling thread with whole planes, in order, as
/// they complete (not necessarily after each one). An exception from a task or from progress
/// (Ctrl-C in Python) stops the handing out of tasks and is rethrown here once every thread
/// has left the region.
template <class Scratch, class Task>
void run_plane_tasks(std::int64_t planes, std::int64_t tasks_per_plane, int team, const ProgressFn& progress,
                     Task&& task) {
  if (planes <= 0 || tasks_per_plane <= 0) return;
  const auto total_planes = static_cast<std::size_t>(planes);
  if (team <= 1) {
    Scratch scratch;
    for (std::int64_t k = 0; k < planes; ++k) {
      for (std::int64_t t = 0; t < tasks_per_plane; ++t) task(k, t, scratch);
      if (progress) progress(static_cast<std::size_t>(k + 1), total_planes);
    }
    return;
  }
  const std::int64_t total = planes * tasks_per_plane;
  std::atomic<std::int64_t> next{0};
  std::atomic<bool> stop{false};
  // Tasks of each plane still running or waiting; a plane is complete at zero.
  const std::unique_ptr<std::atomic<std::int64_t>[]> remaining(new std::atomic<std::int64_t>[total_planes]);
  for (std::size_t k = 0; k < total_planes; ++k) remaining[k].store(tasks_per_plane);
  std::exception_ptr error;
  std::mutex error_lock;
  const auto fail = [&](std::exception_ptr e) {
    const std::lock_guard<std::mutex> guard(error_lock);
    if (!error) error = e;
    stop.store(true);
  };
  std::int64_t reported = 0;  // planes reported to progress: the calling thread's
  const auto report_complete = [&] {
    std::int64_t done = reported;
    while (done < planes && remaining[static_cast<std::size_t>(done)].load(std::memory_order_acquire) == 0) ++done;
    if (done > reported) {
      reported = done;
      if (progress) progress(static_cast<std::size_t>(done), total_planes);
    }
  };
#pragma omp parallel num_threads(team)
  {
    Scratch scratch;
    // OpenMP's thread 0 is the thread that entered the region: the caller's, where progress runs.
    const bool caller = omp_get_thread_num() == 0;
    while (!stop.load(std::memory_order_relaxed)) {
      const std::int64_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= total) break;
      const std::int64_t k = i / tasks_per_plane;
      try {
        task(k, i % tasks_per_plane, scratch);
      } catch (...) {
        fail(std::current_exception());
        break;
      }
      remaining[static_cast<std::size_t>(k)].fetch_sub(1, std::memory_order_release);
      if (caller) {
        try {
          report_complete();
        } catch (...) {
          fail(std::current_exception());
        }
      }
    }
  }
  if (error) std::rethrow_exception(error);
  report_complete();  // the planes other threads finished after the caller's last task
}

}  // namespace espgrid::cpu
