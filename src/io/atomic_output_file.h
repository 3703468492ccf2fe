// A map is written to a temporary file beside its destination and renamed into place only
// when complete, so a failed or interrupted run never leaves a half-written map. SIGINT,
// SIGTERM and SIGHUP remove the temporary file before the process ends.
#pragma once

#include <string>

namespace espgrid {

class AtomicOutputFile {
 public:
  /// Reserves a temporary path in the destination's directory; checks that the directory
  /// exists and is writable (throws Error naming the path otherwise).
  explicit AtomicOutputFile(std::string destination);
  ~AtomicOutputFile();  ///< removes the temporary file unless commit() succeeded
  AtomicOutputFile(const AtomicOutputFile&) = delete;
  AtomicOutputFile& operator=(const AtomicOutputFile&) = delete;

  /// Where the writer should write.
  const std::string& temporary_path() const noexcept { return temporary_; }
  const std::string& destination() const noexcept { return destination_; }
  /// Renames the finished temporary file onto the destination.
  void commit();

 private:
  std::string destination_;
  std::string temporary_;
  bool committed_ = false;
  int slot_ = -1;  // index in the signal handler's table of pending files
};

/// Throws Error unless `destination` could be written: not a directory, its directory exists
/// and is writable. The CLI calls it for every output before computing anything.
void check_output_path(const std::string& destination);

/// Installs SIGINT/SIGTERM/SIGHUP handlers that delete every pending temporary file and exit
/// with 128 + signal, and ignores SIGXFSZ so that a write over the file-size limit fails with
/// an error (and cleanup) instead of killing the process. Call once from main().
void install_interrupt_cleanup();

}  // namespace espgrid
