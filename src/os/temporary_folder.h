// Private temporary folders (pdb2pqr's work): made under $TMPDIR, locked while in use, removed
// with everything in them by the destructor or, when a cleanup signal ends the process first,
// by the interrupt handler (interrupt_cleanup.h); folders left by processes that no longer run
// are removed when a new one is made.
#pragma once

#include <string>

namespace espgrid {

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

/// Open MPI (hypre's MPI) keeps a session folder under $TMPDIR while it runs and removes it in
/// MPI_Finalize, at exit: a signal that ends the program first would leave it. Its files go to a
/// private folder of this process instead, which the signal handler removes (os/), as does the
/// next run when a SIGKILL left it. Made once, before MPI starts (its finalization, registered
/// later, then runs before the folder's removal at exit); a user's own setting is kept.
void keep_open_mpi_session_files_in_a_private_folder();

}  // namespace espgrid
