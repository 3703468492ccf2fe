// A job's output files: the checks before anything is computed (check_output_paths), the
// writers that take planes while the map is computed (MapFiles), and the files written after.
#include <filesystem>
#include <memory>
#include <sys/stat.h>

#include "src/core/errors.h"
#include "src/core/stopwatch.h"
#include "src/maps/map_formats.h"
#include "src/maps/map_stream.h"
#include "src/os/atomic_output_file.h"
#include "src/pipeline/map_pipeline.h"

namespace espgrid {

namespace {

/// The same file: both exist and share device and inode (hard links and symlinks included).
bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/// Where an output lands, for comparing two outputs before either exists.
std::string landing_place(const std::string& output) {
  return std::filesystem::absolute(resolve_output_target(output)).lexically_normal().string();
}

}  // namespace

void check_output_paths(const std::vector<std::string>& paths, const std::vector<std::string>& inputs,
                        const MapWriteOptions& options) {
  for (std::size_t i = 0; i < paths.size(); ++i) {
    const std::string& path = paths[i];
    check_map_format_supported(path, options);
    for (const std::string& input : inputs)
      if (same_file(path, input))
        throw UsageError("the output " + path + " is the input file " + input +
                         ": writing the map there would destroy the input; choose another name");
    for (std::size_t j = 0; j < i; ++j)
      if (same_file(path, paths[j]) || landing_place(path) == landing_place(paths[j]))
        throw UsageError("the outputs " + paths[j] + " and " + path + " are the same file; name each output once");
    check_output_path(path);
  }
}

void write_map_files(const PotentialMap& map, const std::vector<std::string>& paths, TimingReport* timing,
                     const std::function<void(const std::string&)>& written, const MapWriteOptions& options) {
  for (const auto& path : paths) {
    const Stopwatch clock;
    write_map(map, path, options);
    if (timing) timing->write_seconds += clock.seconds();
    if (written) written(path);
  }
}

MapFiles::MapFiles(std::vector<std::string> paths, MapWriteOptions options)
    : paths_(std::move(paths)), options_(options) {}

MapFiles::~MapFiles() = default;

std::vector<std::string> MapFiles::streamed_paths() const {
  std::vector<std::string> out;
  for (const auto& path : paths_)
    if (streams_planes(map_format_from_extension(path), options_)) out.push_back(path);
  return out;
}

void MapFiles::start(const PotentialMap& map) {
  streams_.clear();
  for (const auto& path : streamed_paths())
    streams_.push_back(std::make_unique<StreamingMapWriter>(map, path, options_));
  streamed_files_ = streams_.size();
}

void MapFiles::planes_ready(std::int64_t first, std::int64_t count) {
  for (auto& stream : streams_) stream->planes_ready(first, count);
}

void MapFiles::finish(const PotentialMap& map, TimingReport* timing,
                      const std::function<void(const std::string&)>& written) {
  std::size_t next_stream = 0;
  for (const auto& path : paths_) {
    const Stopwatch clock;
    if (streams_planes(map_format_from_extension(path), options_) && next_stream < streams_.size()) {
      StreamingMapWriter& stream = *streams_[next_stream++];
      const double during = stream.busy_seconds();  // what it wrote while the kernel ran
      stream.finish();
      if (timing) timing->streamed_write_seconds += during;
    } else {
      write_map(map, path, options_);
    }
    if (timing) timing->write_seconds += clock.seconds();
    if (written) written(path);
  }
  streams_.clear();
}

}  // namespace espgrid
