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
//   * SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM and SIGXCPU remove the
//     pending temporary files before the process ends with 128 + signal; SIGPIPE and SIGXFSZ
//     are ignored, so a closed stdout or a file-size limit is an error of one write, not death.
//
// The same table and handler cover the other things a run leaves while it works: a private
// temporary folder (TemporaryFolder: pdb2pqr's work) and a child program (run_child: pdb2pqr30,
// gemmi). The handler first ends every registered child's process group (SIGTERM, then SIGKILL
// after a grace period), then removes the registered folders with everything in them, then the
// pending map files. Each is entered in the table in one step with its creation, under the lock
// the handler takes, so no signal on any thread finds one created and not yet registered.
#pragma once

#include <functional>
#include <string>
#include <sys/types.h>
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

/// The file `destination` names once symbolic links are followed (the destination itself when
/// it is not a link; a dangling link gives the path it points to). Throws Error for a loop.
std::string resolve_output_target(const std::string& destination);

/// The directory for temporary folders: $TMPDIR, or /tmp when it is unset or empty (as POSIX
/// says). Throws Error naming TMPDIR and saying what to do when it is missing or not a
/// directory; `purpose` says what the folder is for ("pdb2pqr's work").
std::string temporary_directory(const std::string& purpose);

/// A private folder "PREFIX-PID-XXXXXX" (mode 0700) under temporary_directory(), removed with
/// everything in it by the destructor and, if a cleanup signal ends the process first, by the
/// signal handler. Stale folders of the same prefix left by processes that no longer run
/// (SIGKILL, a crash) are removed when a new one is made.
class TemporaryFolder {
 public:
  TemporaryFolder(const std::string& prefix, const std::string& purpose);
  ~TemporaryFolder();
  TemporaryFolder(const TemporaryFolder&) = delete;
  TemporaryFolder& operator=(const TemporaryFolder&) = delete;
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
  int slot_ = -1;     // index in the signal handler's table of folders
  int lock_fd_ = -1;  // the folder, open and locked (flock) while it exists
};

/// How a child program ended.
struct ChildExit {
  int exit_code = -1;  ///< -1 when a signal ended it
  int signal = 0;      ///< the signal that ended it, or 0
};

/// Runs `argv` (argv[0] a path; no shell, so no name needs quoting) in `directory`, stdin from
/// /dev/null, stdout and stderr to `output_fd`, in a process group of its own whose ending the
/// signal handler takes care of (see the top of this file). The child gets the default signal
/// dispositions and mask, and SIGKILL if this process dies without the handler running
/// (PR_SET_PDEATHSIG). `waiting` (if set) is called every 20 ms at most while the child runs; if it
/// throws, the child's group is ended (SIGTERM, then SIGKILL) and reaped before the exception
/// goes on, as on any other way out. Throws Error when the program cannot be started.
ChildExit run_child(const std::vector<std::string>& argv, const std::string& directory, int output_fd,
                    const std::function<void()>& waiting = nullptr);

/// Removes `path` and everything under it (not following symbolic links) with system calls
/// only, as the signal handler does; returns false if anything stayed.
bool remove_tree(const std::string& path) noexcept;

/// Installs the signal handling described at the top of this file. Signals that were ignored
/// when the process started (nohup ignores SIGHUP) stay ignored. Call once from main().
void install_interrupt_cleanup();

}  // namespace espgrid
