#include "src/compute/device_scheduler.h"

#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include "src/core/stopwatch.h"

namespace espgrid {

std::vector<WorkerResult> run_plane_workers(int workers, std::int64_t nz, const PlaneWorker& worker,
                                            const ProgressFn& progress) {
  PlaneQueue queue(nz);
  std::mutex state_mutex;
  std::condition_variable state_changed;
  std::int64_t planes_done = 0;
  int finished = 0;
  std::exception_ptr first_error;
  std::vector<WorkerResult> results(static_cast<std::size_t>(workers));

  const auto worker_main = [&](int w) {
    const Stopwatch clock;
    std::exception_ptr error;
    try {
      const auto done = [&](const PlaneRange& r) {
        {
          std::lock_guard<std::mutex> guard(state_mutex);
          planes_done += r.planes;
        }
        state_changed.notify_one();
      };
      results[static_cast<std::size_t>(w)] = worker(w, queue, done);
    } catch (...) {
      queue.stop();  // the others finish their chunks in flight and stop
      error = std::current_exception();
    }
    results[static_cast<std::size_t>(w)].wall_seconds = clock.seconds();
    {
      std::lock_guard<std::mutex> guard(state_mutex);
      if (error && !first_error) first_error = error;
      ++finished;
    }
    state_changed.notify_one();
  };

  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(workers));
  struct Joiner {
    std::vector<std::thread>& threads;
    PlaneQueue& queue;
    ~Joiner() {
      queue.stop();  // only matters when unwinding: the workers stop after their chunks in flight
      for (std::thread& t : threads)
        if (t.joinable()) t.join();
    }
  } joiner{threads, queue};
  for (int w = 0; w < workers; ++w) threads.emplace_back(worker_main, w);

  // Progress from the calling thread.
  {
    std::unique_lock<std::mutex> lock(state_mutex);
    std::int64_t reported = 0;
    // Until every worker has finished and every finished plane has been reported: the last
    // planes can complete while the progress callback runs unlocked, after the final wake-up.
    while (finished < workers || planes_done != reported) {
      state_changed.wait(lock, [&] { return finished == workers || planes_done != reported; });
      // Always catch up with planes_done: after a failure the predicate must turn false again,
      // or this loop would spin holding state_mutex and the workers could never finish.
      if (planes_done != reported) {
        reported = planes_done;
        if (progress && !first_error) {
          lock.unlock();
          progress(static_cast<std::size_t>(reported), static_cast<std::size_t>(nz));
          lock.lock();
        }
      }
    }
  }
  for (std::thread& t : threads) t.join();
  if (first_error) std::rethrow_exception(first_error);
  return results;
}

}  // namespace espgrid
