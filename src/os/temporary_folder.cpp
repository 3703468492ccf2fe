#include "src/os/temporary_folder.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string_view>
#include <sys/file.h>
#include <sys/stat.h>

#include "src/core/errors.h"
#include "src/os/cleanup_table.h"

namespace espgrid {

namespace fs = std::filesystem;
using cleanup::remove_tree_at;
using cleanup::TableLock;

std::string temporary_directory(const std::string& purpose) {
  const char* variable = std::getenv("TMPDIR");
  const bool from_variable = variable != nullptr && *variable != '\0';
  const std::string dir = from_variable ? variable : "/tmp";  // POSIX: unset or empty means /tmp
  const std::string named = from_variable ? "TMPDIR=" + dir : dir;
  const std::string advice = ": " + purpose + " needs a temporary folder there; " +
                             (from_variable ? "set TMPDIR to a writable directory, or unset it to use /tmp"
                                            : "create it, or set TMPDIR to a writable directory");
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    const int error = errno;
    throw Error(named + (error == ENOENT ? std::string(" does not exist") : ": " + std::string(std::strerror(error))) +
                advice);
  }
  if (!S_ISDIR(st.st_mode)) throw Error(named + " is not a directory" + advice);
  return dir;
}

namespace {

/// Removes folders "PREFIX-PID-XXXXXX" in `dir` left by processes that no longer run: only
/// directories of this user whose PID is gone and whose lock (flock on the folder, held while
/// it is in use) nobody holds.
void remove_stale_folders(const std::string& dir, const std::string& prefix) {
  DIR* listing = ::opendir(dir.c_str());
  if (listing == nullptr) return;
  const int dir_fd = ::dirfd(listing);
  const std::string head = prefix + "-";
  while (const dirent* entry = ::readdir(listing)) {
    const std::string_view name(entry->d_name);
    if (name.substr(0, head.size()) != head) continue;
    const std::string_view rest = name.substr(head.size());
    const std::size_t dash = rest.find('-');
    if (dash == 0 || dash == std::string_view::npos || dash > 10 || rest.size() != dash + 7 ||
        rest.substr(0, dash).find_first_not_of("0123456789") != std::string_view::npos)
      continue;
    const long pid = std::strtol(std::string(rest.substr(0, dash)).c_str(), nullptr, 10);
    if (pid == ::getpid() || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    const int fd = ::openat(dir_fd, entry->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && st.st_uid == ::geteuid() && ::flock(fd, LOCK_EX | LOCK_NB) == 0)
      remove_tree_at(dir_fd, entry->d_name, 0);
    ::close(fd);
  }
  ::closedir(listing);
}

}  // namespace

TemporaryFolder::TemporaryFolder(const std::string& prefix, const std::string& purpose) {
  const std::string dir = temporary_directory(purpose);
  remove_stale_folders(dir, prefix);
  std::string pattern = (fs::path(dir) / (prefix + "-" + std::to_string(::getpid()) + "-XXXXXX")).string();
  int error = 0;
  {
    const TableLock locked;  // the folder and its entry in the signal handler's table together
    if (::mkdtemp(pattern.data()) == nullptr) {
      error = errno;
    } else {
      slot_ = cleanup::enter_folder(pattern);
    }
  }
  if (error != 0) {
    const char* variable = std::getenv("TMPDIR");
    throw Error("cannot create a temporary folder for " + purpose + " in " + dir +
                (variable && *variable ? " (TMPDIR)" : "") + ": " + std::strerror(error) +
                (error == ENOSPC || error == EDQUOT ? "; free space there or set TMPDIR to another directory" : ""));
  }
  path_ = pattern;
  // Held while the folder is in use: stale-folder cleanup of other runs leaves a locked one alone.
  const int lock = ::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (lock >= 0) {
    ::flock(lock, LOCK_EX | LOCK_NB);
    lock_fd_ = lock;
  }
}

TemporaryFolder::~TemporaryFolder() {
  remove_tree_at(AT_FDCWD, path_.c_str(), 0);
  cleanup::leave_folder(slot_);
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

void keep_open_mpi_session_files_in_a_private_folder() {
  static const std::unique_ptr<TemporaryFolder> folder = []() -> std::unique_ptr<TemporaryFolder> {
    if (std::getenv("OMPI_MCA_orte_tmpdir_base") != nullptr) return nullptr;
    try {
      auto made = std::make_unique<TemporaryFolder>("espgrid-mpi", "Open MPI's session files (hypre's MPI)");
      ::setenv("OMPI_MCA_orte_tmpdir_base", made->path().c_str(), 0);
      return made;
    } catch (const Error&) {
      return nullptr;  // no usable TMPDIR: Open MPI finds its own place, as it did before
    }
  }();
}

}  // namespace espgrid
