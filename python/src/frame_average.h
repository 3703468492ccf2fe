// The mean (and standard deviation) of the potential over the frames of a trajectory, on one
// fixed grid: the C++ half of espgrid.average_map (python/espgrid/trajectory.py). Python reads
// the frames (MDAnalysis) and hands over each frame's positions; the map of every frame is
// computed through the library facade and added to exact integer sums (compute/frame_sums.h), so
// MPI ranks and devices that each average some frames merge into the same bits as one process
// that averages them all.
//
// Every frame is computed by one ComputeSession (pipeline/map_pipeline.h): the kernel is chosen
// once for the job's physics and grid, and each frame brings only new positions. The frames flow
// through a pipeline: while frame k is computed (a worker thread), Python reads frame k+1. With an
// exact CUDA kernel on one device the map is added to exact sums on the device as each slab
// finishes (kernels/frame_sums.cu) and never comes back; with the other GPU kernels (cuda-msm, PB)
// frame k−1's map is added on the host beside frame k's kernel; on the CPU after it. Two map
// buffers, allocated and poisoned once and poisoned again after each use, carry the host's maps.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "src/compute/frame_sums.h"
#include "src/physics/potential_map.h"
#include "src/pipeline/map_pipeline.h"
#include "src/structure/structure_reader.h"

namespace espgrid::python {

/// One thread that runs the tasks given to it, in order: a pipeline stage. Made once and kept
/// (std::async makes a thread per call, and glibc gives each new thread's allocations an arena
/// of their own).
class TaskThread {
 public:
  TaskThread();
  ~TaskThread();  ///< runs the tasks still queued, then ends the thread
  TaskThread(const TaskThread&) = delete;
  TaskThread& operator=(const TaskThread&) = delete;
  template <class F>
  auto submit(F task) -> std::future<decltype(task())> {
    auto packaged = std::make_shared<std::packaged_task<decltype(task())()>>(std::move(task));
    auto future = packaged->get_future();
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      tasks_.emplace_back([packaged] { (*packaged)(); });
    }
    ready_.notify_one();
    return future;
  }

 private:
  void run();
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> tasks_;
  bool closing_ = false;
  std::thread thread_;  ///< last: started once the rest exists
};

class FrameAverage {
 public:
  /// Selects the kernel once (so a missing GPU fails before any frame is read) for `charges`
  /// (e) and `radii` (Å; empty: none, for the pair models; --model pb needs them) on `grid`.
  /// `source` describes the frames for the output files' headers. `job` gives the physics and
  /// compute options; its grid is replaced by `grid`.
  FrameAverage(const MapJob& job, const GridSpec& grid, std::vector<double> charges, std::vector<double> radii,
               bool with_deviation, std::string source);
  /// Stops the pipeline (the frame being computed stops at its next plane) and waits for it.
  ~FrameAverage();
  FrameAverage(const FrameAverage&) = delete;
  FrameAverage& operator=(const FrameAverage&) = delete;

  std::size_t atom_count() const noexcept { return charges_.size(); }
  const KernelSelection& kernel() const noexcept { return session_.kernel(); }
  const GridSpec& grid() const noexcept { return session_.grid(); }

  /// Queues one frame: checks and copies `xyz` (atom_count() × 3 positions, Å, row-major), waits
  /// until the frame before it is computed, starts this one's map, and returns while it runs. While
  /// it waits it calls `poll(planes done, planes)` from this thread every 50 ms at most (Python:
  /// Ctrl-C and the progress callback), which may throw to stop everything. `label` names the frame
  /// in errors ("frame 12: ..."); an error of an earlier frame is thrown by a later call.
  void add_frame(const double* xyz, const std::string& label, const ProgressFn& poll);
  /// Waits until every queued frame is computed and summed (polling as add_frame does).
  void finish(const ProgressFn& poll);

  /// Whether the maps are summed on the device (never copied back) rather than on the host.
  bool sums_on_device() const noexcept { return sums_on_device_; }
  /// Frames summed so far (all of them after finish()).
  std::size_t frames() const noexcept { return static_cast<std::size_t>(sums_.frames()); }
  /// The sums: another rank's or device's are merged into them (FrameSums::merge) after finish().
  FrameSums& sums() noexcept { return sums_; }
  /// The job's CPU threads (0: all), which the sums' passes use too.
  int threads() const noexcept { return job_.compute.run.threads; }
  const FrameSums& sums() const noexcept { return sums_; }
  /// Kernel and transfer seconds summed over the frames computed so far.
  double kernel_seconds() const noexcept { return kernel_seconds_; }
  double transfer_seconds() const noexcept { return transfer_seconds_; }
  /// Methods that run in phases (PB, MSM): each phase's seconds summed over the frames computed so
  /// far, in the order the phases first came (for finding where a frame's time goes).
  const std::vector<PhaseTiming>& phase_seconds() const noexcept { return phase_seconds_; }
  /// --model pb: the last frame's solve (method, iterations, residual) for the summary; empty otherwise.
  const std::string& last_solve() const noexcept { return last_solve_; }

  /// The mean over the frames, float32 (rounded once, from the exact sums). Call finish() first.
  PotentialMap mean() const;
  /// The standard deviation over the frames, √(Σ(φ − mean)² / frames) (population form:
  /// the frames are the whole set being described). Error unless built with_deviation.
  PotentialMap deviation() const;

 private:
  struct Computed {
    int buffer = 0;
    std::string label;
    TimingReport timing;
  };
  PotentialMap map_with(std::vector<float> values, const std::string& what) const;
  /// The map of a frame into buffer `b` (worker thread); on the CPU also its sum.
  Computed compute(const Atoms& atoms, int b, const std::string& label);
  /// Adds buffer `b` to the sums and poisons it again.
  void sum_buffer(int b, const std::string& label);
  /// Waits for the computing frame, then computed().
  void collect(const ProgressFn& poll);
  /// A frame's map is done: its times, and (GPU) its sum started beside the next frame's kernel.
  void computed(const Computed& c, const ProgressFn& poll);
  template <class T>
  void wait(std::future<T>& f, const ProgressFn& poll);
  void stop_and_wait() noexcept;

  /// The job with the exact grid, and the session that computes every frame of it.
  static MapJob with_grid(MapJob job, const GridSpec& grid, const std::string& source);
  MapJob job_;
  ComputeSession session_;
  std::vector<double> charges_;
  std::vector<double> radii_;
  std::string source_;
  FrameSums sums_;
  bool sums_on_device_;  ///< exact CUDA kernels on one device: the maps summed there, never copied back
  bool overlap_sums_;    ///< other GPU kernels: sum on the host beside the device's next frame
  /// Frames computed on a worker thread while the caller reads the next (pair models, and PB on a
  /// GPU: there the worker lets two devices' engines, dealt frames in turn, solve at once). PB
  /// frames on the CPU are computed on the calling thread: hypre's set-up on a worker thread took
  /// 1.3–1.7 s instead of 0.17 s a frame (3,341 atoms, 1 Å; glibc's per-thread arenas give back
  /// and fault in its memory every frame: MALLOC_ARENA_MAX=1 made the two equal), and a PB frame's
  /// reading is nothing beside its solve. The GPU solve's host share is small (the device pipeline
  /// allocates ~9 B a point on the host).
  bool pipelined_;
  std::array<std::vector<float>, 2> buffers_;
  int next_buffer_ = 0;
  std::future<Computed> computing_;
  std::future<void> summing_;
  std::unique_ptr<TaskThread> computer_, summer_;  ///< after what their tasks use: stopped first
  std::atomic<bool> stop_{false};
  std::atomic<std::size_t> planes_done_{0}, planes_{0};
  double kernel_seconds_ = 0;
  double transfer_seconds_ = 0;
  std::vector<PhaseTiming> phase_seconds_;
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
