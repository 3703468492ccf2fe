// The multi-device work queue (src/compute/device_scheduler.h) with fake workers: every plane
// exactly once, progress from the calling thread up to the last plane, a failing worker stops
// the others and its error reaches the caller after every thread has joined. No GPU needed.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "src/compute/device_scheduler.h"
#include "src/core/errors.h"

namespace espgrid {
namespace {

/// A worker that takes chunks of at most `chunk` planes, marks them and "computes" each for a
/// moment; its kernel time is the number of planes it took (for checking the sums).
PlaneWorker marking_worker(std::vector<std::atomic<int>>& marks, std::int64_t chunk,
                           std::chrono::microseconds per_chunk = std::chrono::microseconds(200)) {
  return [&marks, chunk, per_chunk](int, PlaneQueue& queue, const std::function<void(const PlaneRange&)>& done) {
    WorkerResult r;
    while (const auto range = queue.take(chunk)) {
      EXPECT_LE(range->planes, chunk);
      for (std::int64_t k = range->k0; k < range->k0 + range->planes; ++k) marks[static_cast<std::size_t>(k)]++;
      std::this_thread::sleep_for(per_chunk);
      r.planes += range->planes;
      ++r.chunks;
      done(*range);
    }
    r.kernel_seconds = static_cast<double>(r.planes);
    return r;
  };
}

TEST(PlaneQueue, HandsOutEveryPlaneOnceInOrderAndStops) {
  PlaneQueue q(10);
  std::int64_t next = 0;
  while (const auto r = q.take(3)) {
    EXPECT_EQ(r->k0, next);
    EXPECT_EQ(r->planes, std::min<std::int64_t>(3, 10 - next));
    next += r->planes;
  }
  EXPECT_EQ(next, 10);
  PlaneQueue stopped(10);
  stopped.stop();
  EXPECT_FALSE(stopped.take(3));
  PlaneQueue zero_ask(2);
  EXPECT_EQ(zero_ask.take(0)->planes, 1);  // asks for at least one plane
}

TEST(DeviceScheduler, EveryPlaneIsComputedExactlyOnce) {
  for (const int workers : {1, 2, 3, 8}) {
    SCOPED_TRACE(workers);
    const std::int64_t nz = 97;
    std::vector<std::atomic<int>> marks(nz);
    std::vector<std::size_t> progress;
    const auto results =
        run_plane_workers(workers, nz, marking_worker(marks, 4), [&](std::size_t done, std::size_t total) {
          EXPECT_EQ(total, 97u);
          progress.push_back(done);
        });
    for (const auto& m : marks) EXPECT_EQ(m.load(), 1);
    std::int64_t planes = 0;
    for (const WorkerResult& r : results) {
      planes += r.planes;
      EXPECT_GE(r.wall_seconds, 0.0);
    }
    EXPECT_EQ(planes, nz);
    ASSERT_FALSE(progress.empty());
    EXPECT_TRUE(std::is_sorted(progress.begin(), progress.end()));
    EXPECT_EQ(progress.back(), 97u);
  }
}

// The worker that fails stops the queue; the others finish what they hold and stop; the call
// rethrows that worker's exception (type and message) only after all threads have joined.
TEST(DeviceScheduler, AFailingWorkerStopsTheQueueAndItsErrorReachesTheCaller) {
  const std::int64_t nz = 400;
  std::vector<std::atomic<int>> marks(nz);
  std::atomic<int> running{0};
  std::atomic<bool> failing_worker_started{false};
  const PlaneWorker healthy = marking_worker(marks, 1, std::chrono::microseconds(500));
  const PlaneWorker worker = [&](int w, PlaneQueue& queue, const std::function<void(const PlaneRange&)>& done) {
    running++;
    struct Leave {
      std::atomic<int>& n;
      ~Leave() { n--; }
    } leave{running};
    if (w == 1) {
      queue.take(1);
      failing_worker_started = true;
      throw UsageError("worker 1 broke");
    }
    // On a loaded machine worker 1's thread may start late; the healthy ones wait for it, so
    // "the queue did not run dry" below tests the stop, not the scheduler of the machine.
    while (!failing_worker_started) std::this_thread::yield();
    return healthy(w, queue, done);
  };
  try {
    run_plane_workers(3, nz, worker, nullptr);
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "worker 1 broke");
  }
  EXPECT_EQ(running.load(), 0);  // nothing left running
  int computed = 0;
  for (const auto& m : marks) {
    EXPECT_LE(m.load(), 1);
    computed += m.load();
  }
  EXPECT_LT(computed, nz - 1);  // the others stopped early: the queue did not run dry
}

TEST(DeviceScheduler, ProgressIsNotReportedAfterAFailure) {
  std::vector<std::atomic<int>> marks(50);
  std::atomic<bool> failed{false};
  const PlaneWorker good = marking_worker(marks, 1, std::chrono::microseconds(2000));
  const PlaneWorker worker = [&](int w, PlaneQueue& queue, const std::function<void(const PlaneRange&)>& done) {
    if (w == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      failed = true;
      throw Error("late failure");
    }
    return good(w, queue, done);
  };
  std::size_t reports_after_failure = 0;
  EXPECT_THROW(run_plane_workers(2, 50, worker,
                                 [&](std::size_t, std::size_t) {
                                   if (failed) ++reports_after_failure;
                                 }),
               Error);
  // A report may race with the failure by one update; never a stream of them.
  EXPECT_LE(reports_after_failure, 1u);
}

}  // namespace
}  // namespace espgrid
