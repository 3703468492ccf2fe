// Writing a map while it is computed. A format that stores the map x fastest, uncompressed (MRC,
// .vti without compression), keeps every z-plane in one contiguous range at a known place in
// the file, so each plane can be written as soon as the kernel reports it
// (RunOptions::planes_done): the write overlaps the computation and reads the planes from the
// map being filled (nothing is copied). OpenDX stores z fastest (its first line needs planes 0,
// 1 and 2), and compressed .vti goes through VTK's writer, which takes the whole array; both
// are written after the computation.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "src/maps/map_formats.h"
#include "src/os/atomic_output_file.h"
#include "src/os/file_output.h"
#include "src/physics/potential_map.h"

namespace espgrid {

/// A format's writer that takes the map plane by plane.
class PlaneWriter {
 public:
  virtual ~PlaneWriter() = default;
  /// Writes planes [first, first + count) of the map, whose values are final, about 1 MiB at a
  /// time: summarized (a vectorized pass that also checks every value), then written while
  /// still in cache. Calls come one at a time, in any order, each plane once. Throws Error
  /// naming the first point that is not finite.
  void write_planes(const PotentialMap& map, std::int64_t first, std::int64_t count);
  /// The same with `threads` (0: all cores) summarizing planes of a batch of 16 MB or more first (the
  /// first non-finite value in plane order is the error), then its bytes written in one call.
  void write_planes_on(const PotentialMap& map, std::int64_t first, std::int64_t count, int threads);
  /// What the format records about planes [first, first + count) (ranges, statistics). Throws
  /// Error naming the first point that is not finite (check_finite): the writers notice it in
  /// this pass, so checking costs no pass of its own over memory.
  virtual void summarize_planes(std::int64_t first, std::int64_t count) = 0;
  /// The planes' values at their place in the file. Never throws: the file keeps the error.
  virtual void write_plane_bytes(std::int64_t first, std::int64_t count) noexcept = 0;
  /// After every plane: what needs the whole map (MRC: the header with the statistics).
  virtual void finish() = 0;
};

/// Every plane, then writer.finish(): a whole map into a plane writer. With one thread (or a map
/// under 16 MB) each MiB is summarized and then written while in cache (PlaneWriter::write_planes);
/// with more, `threads` summarize every plane first (the first non-finite value in plane order is
/// the error), then the bytes are written in one call. A 949 MB map on an H200 host: 0.71-0.75 s to
/// ext4 and 0.41-0.44 s to tmpfs with one thread's summaries, 0.65 s and 0.37-0.45 s with every
/// core's (2026-11-28): the copy into the page cache is most of it.
/// (Writing the bytes on a second thread while this one checked and summarized was slower on a
/// busy 2-core machine: the passes share memory bandwidth.) threads: 0 = all cores.
void write_all_planes(const PotentialMap& map, PlaneWriter& writer, int threads = 1);

/// Whether `format` has a PlaneWriter with `options` (its entry in the format table says: MRC
/// and uncompressed .vti: yes; OpenDX and compressed .vti: no).
bool has_plane_writer(MapFormat format, const MapWriteOptions& options) noexcept;
/// Whether `format` is written while the map is computed: it has a plane writer and
/// options.stream is on.
bool streams_planes(MapFormat format, const MapWriteOptions& options) noexcept;

/// MRC2014's plane writer into `file` (maps/mrc_format.cpp). `map` (grid, physics, source, values
/// sized) must outlive it.
std::unique_ptr<PlaneWriter> make_mrc_plane_writer(const PotentialMap& map, OutputFile& file);
/// Uncompressed .vti's plane writer into `file` (maps/vti_format.cpp); writes the XML header and
/// the field data at once, the points as they come, the potential's range last.
std::unique_ptr<PlaneWriter> make_vti_plane_writer(const PotentialMap& map, OutputFile& file);

/// One map file written plane by plane on its own thread, into a temporary file that replaces
/// the destination only when every plane was written and every value is finite.
class StreamingMapWriter {
 public:
  /// Opens the temporary file beside `path` (a format that streams_planes with `options`). `map`
  /// must outlive the writer; its grid, physics and source must be set and its values sized:
  /// they are read plane by plane as they are reported.
  StreamingMapWriter(const PotentialMap& map, std::string path, const MapWriteOptions& options = {});
  /// Stops the thread; the destination is untouched unless finish() succeeded.
  ~StreamingMapWriter();
  StreamingMapWriter(const StreamingMapWriter&) = delete;
  StreamingMapWriter& operator=(const StreamingMapWriter&) = delete;

  /// Planes [first, first + count) of the map are final. From any thread; returns at once (the
  /// writing happens on the writer's thread).
  void planes_ready(std::int64_t first, std::int64_t count);
  /// Waits for every reported plane to be written, then writes what needs the whole map and
  /// moves the file into place. Throws Error (nothing at the destination) when a plane was not
  /// reported or reported twice, a value is not finite, or writing failed.
  void finish();

  const std::string& path() const noexcept { return out_.destination(); }
  /// Seconds the writer's thread spent checking and writing planes, so far.
  double busy_seconds() const;

 private:
  void run();

  const PotentialMap& map_;
  AtomicOutputFile out_;
  OutputFile file_;
  std::unique_ptr<PlaneWriter> writer_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::pair<std::int64_t, std::int64_t>> queue_;  ///< reported, not yet written
  std::vector<char> reported_;                               ///< per plane: reported yet
  std::string report_error_;                                 ///< a plane reported twice or out of range
  std::exception_ptr write_error_;                           ///< from the writer's thread
  bool closing_ = false;
  bool abandoned_ = false;  ///< destroyed without finish(): skip what is still queued
  double busy_seconds_ = 0;
  /// Bytes written since the disk writes were last started (the writer's thread only).
  std::size_t unflushed_bytes_ = 0;
  int threads_ = 0;  ///< threads that summarize a large batch (MapWriteOptions::threads)
  static constexpr std::size_t kWritebackBytes = std::size_t{64} << 20;
  std::thread thread_;  ///< last: starts once everything above exists
};

}  // namespace espgrid
