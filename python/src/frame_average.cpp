#include "python/src/frame_average.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>

#include "src/core/bulk_memory.h"
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
      sums_(session_.grid().point_count(), with_deviation),
      sums_on_device_(session_.sums_on_device()),
      overlap_sums_(!sums_on_device_ && session_.kernel().kernel->backend == Backend::Cuda),
      pipelined_(model_label(job_.physics) != "pb" || session_.kernel().kernel->backend == Backend::Cuda) {
  if (charges_.empty()) throw UsageError("no atoms to average over");
  if (!radii_.empty() && radii_.size() != charges_.size())
    throw UsageError("radii hold " + std::to_string(radii_.size()) + " atoms, the charges " +
                     std::to_string(charges_.size()));
  if (radii_.empty()) radii_.assign(charges_.size(), 0.0);
  if (!sums_on_device_)
    for (auto& b : buffers_) assign_poisoned(b, session_.grid().point_count());
}

FrameAverage::~FrameAverage() { stop_and_wait(); }

TaskThread::TaskThread() : thread_([this] { run(); }) {}

TaskThread::~TaskThread() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    closing_ = true;
  }
  ready_.notify_one();
  thread_.join();
}

void TaskThread::run() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_.wait(lock, [this] { return closing_ || !tasks_.empty(); });
      if (tasks_.empty()) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();  // a packaged_task: its exception goes to its future
  }
}

void FrameAverage::stop_and_wait() noexcept {
  stop_ = true;
  try {
    if (computing_.valid()) computing_.get();
  } catch (...) {
  }
  try {
    if (summing_.valid()) summing_.get();
  } catch (...) {
  }
  stop_ = false;
}

namespace {

/// What a frame's computation tells: its planes, into counters the waiting thread reports; it
/// stops at the next plane once `stop` is set.
class FrameProgress : public MapObserver {
 public:
  FrameProgress(const std::atomic<bool>& stop, std::atomic<std::size_t>& done, std::atomic<std::size_t>& total)
      : stop_(stop), done_(done), total_(total) {}
  void progress(std::size_t done, std::size_t total) override {
    done_ = done;
    total_ = total;
    if (stop_) throw Error("stopped");
  }

 private:
  const std::atomic<bool>& stop_;
  std::atomic<std::size_t>& done_;
  std::atomic<std::size_t>& total_;
};

/// `call()`, its UsageError and Error messages prefixed with `label` ("frame 12: ...").
template <class F>
auto naming(const std::string& label, F&& call) {
  try {
    return call();
  } catch (const InputError&) {
    throw;
  } catch (const UsageError& e) {
    throw UsageError(label + ": " + e.what());
  } catch (const Error& e) {
    throw Error(label + ": " + e.what());
  }
}

}  // namespace

FrameAverage::Computed FrameAverage::compute(const Atoms& atoms, int b, const std::string& label) {
  return naming(label, [&] {
    FrameProgress observer(stop_, planes_done_, planes_);
    Computed c;
    c.buffer = b;
    c.label = label;
    if (sums_on_device_) {  // the map stays on the device, added to the sums there
      c.timing = session_.sum_into_device(atoms, sums_.squares(), observer);
      return c;
    }
    c.timing = session_.compute_into(atoms, buffers_[static_cast<std::size_t>(b)], observer);
    if (!overlap_sums_) sum_buffer(b, label);
    return c;
  });
}

void FrameAverage::sum_buffer(int b, const std::string& label) {
  std::vector<float>& values = buffers_[static_cast<std::size_t>(b)];
  naming(label, [&] { sums_.add(values.data(), job_.compute.run.threads); });
  // Poisoned again, so a kernel that misses a point of the next frame is caught by the sums' check.
  const auto n = static_cast<std::int64_t>(values.size());
  float* v = values.data();
  const float nan = std::numeric_limits<float>::quiet_NaN();
#pragma omp parallel for schedule(static)
  for (std::int64_t p = 0; p < n; ++p) v[p] = nan;
}

template <class T>
void FrameAverage::wait(std::future<T>& f, const ProgressFn& poll) {
  while (f.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready)
    if (poll) {
      try {
        poll(planes_done_, planes_);
      } catch (...) {
        stop_and_wait();  // the frame in flight stops at its next plane
        throw;
      }
    }
}

void FrameAverage::collect(const ProgressFn& poll) {
  if (!computing_.valid()) return;
  wait(computing_, poll);
  Computed c;
  try {
    c = computing_.get();
  } catch (...) {
    stop_and_wait();
    throw;
  }
  computed(c, poll);
}

void FrameAverage::computed(const Computed& c, const ProgressFn& poll) {
  kernel_seconds_ += c.timing.kernel_seconds;
  transfer_seconds_ += c.timing.transfer_seconds;
  for (const PhaseTiming& phase : c.timing.phases) {
    const auto same = [&](const PhaseTiming& p) { return p.name == phase.name; };
    const auto at = std::find_if(phase_seconds_.begin(), phase_seconds_.end(), same);
    if (at == phase_seconds_.end())
      phase_seconds_.push_back(phase);
    else
      at->seconds += phase.seconds;
  }
  if (model_label(job_.physics) == "pb") last_solve_ = c.timing.method;
  if (!overlap_sums_) return;
  if (summing_.valid()) {  // the frame before: its buffer is the one the next frame needs
    wait(summing_, poll);
    summing_.get();
  }
  if (!summer_) summer_ = std::make_unique<TaskThread>();
  summing_ = summer_->submit([this, c] { sum_buffer(c.buffer, c.label); });
}

void FrameAverage::add_frame(const double* xyz, const std::string& label, const ProgressFn& poll) {
  const std::size_t n = charges_.size();
  naming(label, [&] { check_positions(xyz, n, "positions"); });
  Atoms atoms = atoms_of(xyz, n);
  atoms.charge = charges_;
  atoms.radius = radii_;
  atoms.element.assign(n, ElementSymbol{});
  collect(poll);
  if (summing_.valid()) {  // its buffer is the one this frame takes
    wait(summing_, poll);
    summing_.get();
  }
  const int b = next_buffer_;
  next_buffer_ = 1 - next_buffer_;
  planes_done_ = 0;
  if (!pipelined_) {  // PB: on this thread (see pipelined_)
    computed(compute(atoms, b, label), poll);
    return;
  }
  if (!computer_) computer_ = std::make_unique<TaskThread>();
  computing_ = computer_->submit([this, atoms = std::move(atoms), b, label] { return compute(atoms, b, label); });
}

void FrameAverage::finish(const ProgressFn& poll) {
  collect(poll);
  if (summing_.valid()) {
    wait(summing_, poll);
    summing_.get();
  }
  if (sums_on_device_) session_.take_device_sums(sums_);
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
