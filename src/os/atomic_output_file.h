// A map is written to a temporary file beside its destination and renamed into place only
// when complete and flushed to disk, so a failed or interrupted run, or a power loss, never
// leaves a half-written map under the destination's name.
//
// The rules (docs/reliability.md, "Output files"):
//   * the temporary file ".NAME.partial.PID.XXXXXX" is created exclusively (O_EXCL) with an
//     unpredictable suffix, so nothing planted under a guessed name (a symlink to another
//     file) is ever opened, and the writer writes to that file itself (/proc/self/fd/N), not
//     to whatever its name points to later; it is locked (flock) while it is written;
//   * a destination that is a symbolic link is written through: the file it points to is
//     replaced (atomically, from a temporary file in that file's directory) and the link stays;
//   * an existing destination keeps its permission bits (and, where allowed, owner and group);
//     a new one gets 0666 minus the umask, as any file the user creates;
//   * an existing destination must be a regular file the user may write: a read-only map, a
//     device or a FIFO is refused, never replaced;
//   * stale temporary files of the same destination, left by processes that no longer run
//     (SIGKILL, a crash, a power loss), are removed when a new one is created;
//   * a cleanup signal (interrupt_cleanup.h) removes the pending temporary files before the
//     process ends; each is entered in the handler's table in one step with its creation.
#pragma once

#include <future>
#include <string>
#include <vector>

namespace espgrid {

class AtomicOutputFile {
 public:
  /// Checks the destination (check_output_path), removes its stale temporary files, and
  /// creates a new temporary file beside the file the destination names. Throws Error naming
  /// the destination when any of that fails.
  explicit AtomicOutputFile(std::string destination);
  ~AtomicOutputFile();  ///< removes the temporary file unless commit() succeeded
  AtomicOutputFile(const AtomicOutputFile&) = delete;
  AtomicOutputFile& operator=(const AtomicOutputFile&) = delete;

  /// Where the writer should write: the temporary file this object created, by a path that
  /// cannot be redirected (/proc/self/fd/N where /proc is mounted, else its name).
  const std::string& temporary_path() const noexcept { return write_path_; }
  /// The temporary file's name in the destination's directory.
  const std::string& partial_file() const noexcept { return partial_; }
  const std::string& destination() const noexcept { return destination_; }
  /// Flushes the finished temporary file to disk, gives it the destination's permissions and
  /// renames it onto the destination (the symlink's target when the destination is a link).
  void commit();

 private:
  std::string destination_;
  std::string target_;      // the file to replace: the destination with symlinks followed
  std::string partial_;     // the temporary file
  std::string write_path_;  // the temporary file, by its file descriptor where possible
  int fd_ = -1;             // the temporary file, open and locked until commit or removal
  bool committed_ = false;
  int slot_ = -1;  // index in the signal handler's table of pending files
};

/// Throws Error unless `destination` could be written, before anything is computed: its name
/// fits the file system, the file it names (symlinks followed) is absent or a regular file the
/// user may write, and its directory exists and accepts a new file (tried: an unnamed O_TMPFILE
/// file, or where the file system has none a ".NAME.probe.PID.XXXXXX" file removed at once, so
/// a read-only file system, /proc or a full quota is found now).
void check_output_path(const std::string& destination);

/// Drops the page cache of the file that `destination` will replace, if there is one (posix_fadvise
/// POSIX_FADV_DONTNEED: the file itself is untouched, and stays as it was if the run fails).
/// Replacing a file frees its cached pages inside the rename that replaces it, on the run's
/// critical path; a run calls this on a thread beside its computation instead (PDB2PQR's template's
/// 828 MB `.dx` written again on the lent H200 host: 30-50 ms there). The rename still frees the
/// old file's blocks (0.19-0.38 s on that host's ext4), which nothing can do earlier without losing
/// the old file when the run fails. Files under 16 MiB are left alone. Never throws.
void release_replaced_file_cache(const std::string& destination) noexcept;
/// The same for every one of `destinations`, on a thread of its own started now (what a run does
/// beside its computation); the future is done when all are.
std::future<void> release_replaced_file_caches_beside(std::vector<std::string> destinations);

/// The file `destination` names once symbolic links are followed (the destination itself when
/// it is not a link; a dangling link gives the path it points to). Throws Error for a loop.
std::string resolve_output_target(const std::string& destination);

}  // namespace espgrid
