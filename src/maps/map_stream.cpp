#include "src/maps/map_stream.h"

#include <algorithm>
#include <exception>
#include <mutex>

#include "src/core/errors.h"
#include "src/core/process_trace.h"
#include "src/core/stopwatch.h"
#include "src/core/thread_count.h"
#include "src/maps/map_format_table.h"

namespace espgrid {
namespace {

/// The message of `error` with the temporary path replaced by the destination the user named.
Error naming_destination(const std::exception_ptr& error, const std::string& temporary,
                         const std::string& destination) {
  std::string what;
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    what = e.what();
  }
  for (std::size_t at; (at = what.find(temporary)) != std::string::npos;)
    what.replace(at, temporary.size(), destination);
  return Error(what + " (nothing written to " + destination + ")");
}

}  // namespace

void PlaneWriter::write_planes(const PotentialMap& map, std::int64_t first, std::int64_t count) {
  const std::int64_t plane_bytes = static_cast<std::int64_t>(sizeof(float)) * map.grid.dims[0] * map.grid.dims[1];
  const std::int64_t step = std::max<std::int64_t>(1, (std::int64_t{1} << 20) / std::max<std::int64_t>(plane_bytes, 1));
  for (std::int64_t k = first; k < first + count; k += step) {
    const std::int64_t planes = std::min(step, first + count - k);
    summarize_planes(k, planes);
    write_plane_bytes(k, planes);
  }
}

void PlaneWriter::write_planes_on(const PotentialMap& map, std::int64_t first, std::int64_t count, int threads) {
  constexpr std::int64_t kParallelValues = std::int64_t{4} << 20;  // 16 MB: below it a team costs more than it saves
  threads = threads_to_use(threads);
  if (threads == 1 || count < 2 || count * map.grid.dims[0] * map.grid.dims[1] < kParallelValues) {
    write_planes(map, first, count);
    return;
  }
  // Each plane's summary has its own slot in the writers; an error is kept with its plane so the
  // one thrown is the first in plane order, as the serial pass would throw it.
  std::int64_t failed_plane = first + count;
  std::exception_ptr failure;
  std::mutex failure_mutex;
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::int64_t k = first; k < first + count; ++k) {
    try {
      summarize_planes(k, 1);
    } catch (...) {
      const std::lock_guard<std::mutex> lock(failure_mutex);
      if (k < failed_plane) failed_plane = k, failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
  trace_process("map writer: planes summarized, writing");
  write_plane_bytes(first, count);
}

void write_all_planes(const PotentialMap& map, PlaneWriter& writer, int threads) {
  writer.write_planes_on(map, 0, map.grid.dims[2], threads);
  writer.finish();
}

bool has_plane_writer(MapFormat format, const MapWriteOptions& options) noexcept {
  const MapFormatInfo& f = map_format_info(format);
  return f.plane_writer && f.plane_writer(options);
}

bool streams_planes(MapFormat format, const MapWriteOptions& options) noexcept {
  return options.stream && has_plane_writer(format, options);
}

StreamingMapWriter::StreamingMapWriter(const PotentialMap& map, std::string path, const MapWriteOptions& options)
    : map_(map), out_(std::move(path)), file_(out_.temporary_path()) {
  const MapFormat format = map_format_from_extension(out_.destination());
  if (!streams_planes(format, options))
    throw Error("internal error: " + out_.destination() + " is not written plane by plane");
  if (map.values.size() != map.grid.point_count())
    throw Error("internal error: map holds " + std::to_string(map.values.size()) + " values for " + describe(map.grid));
  writer_ = map_format_info(format).plane_writer(options)(map_, file_);
  threads_ = options.threads;
  reported_.assign(static_cast<std::size_t>(map.grid.dims[2]), 0);
  thread_ = std::thread([this] { run(); });
}

StreamingMapWriter::~StreamingMapWriter() {
  if (thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closing_ = true;
      abandoned_ = true;  // the map will not be finished: write nothing more
    }
    changed_.notify_all();
    thread_.join();
  }
}

void StreamingMapWriter::planes_ready(std::int64_t first, std::int64_t count) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::int64_t nz = map_.grid.dims[2];
    if (first < 0 || count < 0 || first + count > nz) {
      if (report_error_.empty())
        report_error_ = "planes " + std::to_string(first) + "+" + std::to_string(count) + " are outside the map's " +
                        std::to_string(nz);
      return;
    }
    for (std::int64_t k = first; k < first + count; ++k) {
      char& seen = reported_[static_cast<std::size_t>(k)];
      if (seen && report_error_.empty()) report_error_ = "plane " + std::to_string(k) + " was reported twice";
      seen = 1;
    }
    queue_.emplace_back(first, count);
  }
  changed_.notify_all();
}

void StreamingMapWriter::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return closing_ || !queue_.empty(); });
    if (queue_.empty()) return;  // closing, and everything reported is written
    auto [first, count] = queue_.front();
    queue_.pop_front();
    // The runs queued right after it go in the same call: a call's writing has a cost of its own (the
    // direct writes' buffers filling and draining), and runs arriving faster than the disk takes them
    // (a PB map copied back in runs of planes) would otherwise pay it each.
    while (!queue_.empty() && queue_.front().first == first + count) {
      count += queue_.front().second;
      queue_.pop_front();
    }
    const bool skip = write_error_ != nullptr || abandoned_;  // after a failure, only drain the queue
    lock.unlock();
    double seconds = 0;
    std::exception_ptr error;
    if (!skip) {
      const Stopwatch clock;
      try {
        // A large batch (a map that arrives whole, as a PB solve's does) is summarized on every core.
        writer_->write_planes_on(map_, first, count, threads_);
        unflushed_bytes_ += static_cast<std::size_t>(count) * sizeof(float) * map_.grid.dims[0] * map_.grid.dims[1];
        if (unflushed_bytes_ >= kWritebackBytes) {
          file_.start_writeback();
          unflushed_bytes_ = 0;
        }
      } catch (...) {
        error = std::current_exception();
      }
      seconds = clock.seconds();
    }
    lock.lock();
    busy_seconds_ += seconds;
    if (error && !write_error_) write_error_ = error;
    changed_.notify_all();
  }
}

void StreamingMapWriter::finish() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closing_ = true;
  }
  changed_.notify_all();
  thread_.join();
  const std::string& temporary = out_.temporary_path();
  const std::string& destination = out_.destination();
  if (write_error_) throw naming_destination(write_error_, temporary, destination);
  if (!report_error_.empty())
    throw Error("internal error: " + report_error_ + " while writing " + destination + "; nothing written");
  std::size_t missing = 0;
  for (const char seen : reported_) missing += seen ? 0 : 1;
  if (missing)
    throw Error("internal error: " + std::to_string(missing) + " of " + std::to_string(reported_.size()) +
                " planes were never computed; nothing written to " + destination);
  try {
    const Stopwatch clock;
    writer_->finish();
    file_.close();
    busy_seconds_ += clock.seconds();
  } catch (...) {
    throw naming_destination(std::current_exception(), temporary, destination);
  }
  out_.commit();
}

double StreamingMapWriter::busy_seconds() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return busy_seconds_;
}

}  // namespace espgrid
