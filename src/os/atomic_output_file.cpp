#include "src/os/atomic_output_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <sys/file.h>
#include <sys/stat.h>
#include <utility>
#include <vector>

#include "src/core/errors.h"
#include "src/core/process_trace.h"
#include "src/os/cleanup_table.h"

namespace espgrid {
namespace {

namespace fs = std::filesystem;
using cleanup::TableLock;

std::string directory_of(const std::string& path) {
  const std::string dir = fs::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

/// " (a symbolic link to TARGET)" when the destination is a link, for messages.
std::string link_note(const std::string& destination, const std::string& target) {
  return target == destination ? "" : " (a symbolic link to " + target + ")";
}

/// The part of a temporary name before ".partial.": "." plus the file's name, shortened so
/// that the whole temporary name fits the file system's NAME_MAX (a destination name that
/// fits must never fail because its temporary name is longer).
std::string temporary_prefix(const std::string& dir, const std::string& name) {
  long name_max = ::pathconf(dir.c_str(), _PC_NAME_MAX);
  if (name_max <= 0) name_max = 255;
  // ".partial." + up to 10 digits of PID + "." + 6 random characters
  const std::size_t suffix = 9 + 10 + 1 + 6;
  const std::size_t room = static_cast<std::size_t>(name_max) > suffix + 2 ? name_max - suffix - 1 : 1;
  std::size_t keep = std::min(name.size(), room);
  // never cut a UTF-8 sequence in half
  while (keep > 0 && keep < name.size() && (static_cast<unsigned char>(name[keep]) & 0xC0) == 0x80) --keep;
  std::string prefix(1, '.');
  return prefix.append(name, 0, keep);
}

/// Creates "DIR/PREFIX.KIND.PID.XXXXXX" exclusively (mkostemp: O_CREAT | O_EXCL, mode 0600,
/// an unpredictable suffix); returns its descriptor and sets `path`, or -1 with errno set.
int create_temporary(const std::string& dir, const std::string& prefix, const char* kind, std::string& path) {
  std::string name = (fs::path(dir) / (prefix + "." + kind + "." + std::to_string(::getpid()) + ".XXXXXX")).string();
  const int fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd >= 0) path = name;
  return fd;
}

/// Whether `dir` accepts a new file for `prefix`: an unnamed file (O_TMPFILE, nothing to clean
/// up whatever happens), or where the file system cannot make one, a named ".probe." file
/// removed at once (and by the signal handler). Returns 0 or an errno value.
int try_creating_a_file(const std::string& dir, const std::string& prefix) {
  int fd = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
  if (fd >= 0) {
    ::close(fd);
    return 0;
  }
  if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) return errno;
  std::string probe;
  {
    const TableLock locked;  // the handler must not end the process between creating and removing it
    fd = create_temporary(dir, prefix, "probe", probe);
    if (fd < 0) return errno;
    ::unlink(probe.c_str());
  }
  ::close(fd);
  return 0;
}

/// Removes "PREFIX.partial.PID[.XXXXXX]" and "PREFIX.probe.PID.XXXXXX" files in `dir` left by
/// processes that no longer run: only regular files of this user whose PID is gone and whose
/// lock nobody holds (a writer on another host of a network file system holds its lock).
void remove_stale_temporaries(const std::string& dir, const std::string& prefix) {
  DIR* listing = ::opendir(dir.c_str());
  if (listing == nullptr) return;
  const int dir_fd = ::dirfd(listing);
  while (const dirent* entry = ::readdir(listing)) {
    const std::string_view name(entry->d_name);
    std::string_view rest;
    for (const char* kind : {".partial.", ".probe."})
      if (name.substr(0, prefix.size()) == prefix && name.substr(prefix.size()).rfind(kind, 0) == 0)
        rest = name.substr(prefix.size() + std::strlen(kind));
    if (rest.empty()) continue;
    const std::size_t digits = std::min(rest.find('.'), rest.size());
    if (digits == 0 || digits > 10 || rest.substr(0, digits).find_first_not_of("0123456789") != std::string::npos)
      continue;
    const long pid = std::strtol(std::string(rest.substr(0, digits)).c_str(), nullptr, 10);
    if (pid == ::getpid() || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    const int fd = ::openat(dir_fd, entry->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() && ::flock(fd, LOCK_EX | LOCK_NB) == 0)
      ::unlinkat(dir_fd, entry->d_name, 0);
    ::close(fd);
  }
  ::closedir(listing);
}

/// The process's umask, read without changing it where /proc says it (umask() can only be read
/// by setting it, which races with other threads creating files).
mode_t current_umask() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "Umask:") {
      std::string octal;
      status >> octal;
      return static_cast<mode_t>(std::strtol(octal.c_str(), nullptr, 8));
    }
    status.ignore(1 << 16, '\n');
  }
  const mode_t mask = ::umask(022);
  ::umask(mask);
  return mask;
}

}  // namespace

void release_replaced_file_cache(const std::string& destination) noexcept {
  try {
    const std::string target = resolve_output_target(destination);
    const int fd = ::open(target.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return;  // nothing to replace (or nothing this process may read: left alone)
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= (off_t{16} << 20)) {
      trace_process("output: dropping the cached pages of the file it replaces");
      ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
      trace_process("output: cached pages of the replaced file dropped");
    }
    ::close(fd);
  } catch (...) {  // a symlink loop or no memory: the rename frees the pages as before
  }
}

std::future<void> release_replaced_file_caches_beside(std::vector<std::string> destinations) {
  return std::async(std::launch::async, [destinations = std::move(destinations)] {
    for (const std::string& destination : destinations) release_replaced_file_cache(destination);
  });
}

std::string resolve_output_target(const std::string& destination) {
  std::string path = destination;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return path;
    std::error_code ec;
    const fs::path link = fs::read_symlink(path, ec);
    if (ec) return path;
    path = link.is_absolute() ? link.string() : (fs::path(path).parent_path() / link).string();
  }
  throw Error("cannot write " + destination + ": too many levels of symbolic links");
}

void check_output_path(const std::string& destination) {
  if (destination.empty()) throw UsageError("no output path given");
  const std::string target = resolve_output_target(destination);
  const std::string what = "cannot write " + destination + link_note(destination, target) + ": ";
  struct stat st {};
  if (::stat(target.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw Error(what + "it is a directory");
    if (!S_ISREG(st.st_mode))
      throw Error(what + "it is not a regular file (a device, FIFO or socket); espgrid replaces regular files only");
    // A read-only file system is not a matter of the file's mode: say which it is (access()
    // says EROFS whatever the mode, for root too).
    if (::access(target.c_str(), W_OK) != 0 && errno == EROFS)
      throw Error(what + "it is on a read-only file system; write the map to another place");
    // root passes access(W_OK) for any file: a file without write bits is read-only for it too
    if (::access(target.c_str(), W_OK) != 0 || (st.st_mode & 0222) == 0) {
      char mode[8];
      std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
      throw Error(what + "it is read-only (mode " + mode +
                  "); espgrid does not replace a file you may not write: remove it or make it writable first");
    }
  } else if (errno != ENOENT && errno != ENOTDIR) {
    throw Error(what + std::strerror(errno));
  }
  const std::string dir = directory_of(target);
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno == ENOTDIR) throw Error(what + "a part of " + dir + " is not a directory");
    if (errno == ENOENT) throw Error(what + "directory " + dir + " does not exist");
    throw Error(what + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) throw Error(what + dir + " is not a directory");
  if (::access(dir.c_str(), W_OK) != 0)
    throw Error(what + "directory " + dir +
                (errno == EROFS ? std::string(" is on a read-only file system")
                                : " is not writable (" + std::string(std::strerror(errno)) + ")"));
  // Try it: a file system may refuse new files although access() allows them (read-only
  // mounts, /proc, quotas), and that must be found before the computation, not after it.
  if (const int error = try_creating_a_file(dir, temporary_prefix(dir, fs::path(target).filename().string())))
    throw Error(what + std::strerror(error));
}

AtomicOutputFile::AtomicOutputFile(std::string destination) : destination_(std::move(destination)) {
  check_output_path(destination_);
  target_ = resolve_output_target(destination_);
  const std::string dir = directory_of(target_);
  const std::string prefix = temporary_prefix(dir, fs::path(target_).filename().string());
  remove_stale_temporaries(dir, prefix);
  {
    const TableLock locked;  // the file and its entry in the signal handler's table together
    fd_ = create_temporary(dir, prefix, "partial", partial_);
    if (fd_ >= 0) slot_ = cleanup::enter_file(partial_);
  }
  if (fd_ < 0)
    throw Error("cannot write " + destination_ + link_note(destination_, target_) + ": " + std::strerror(errno));
  ::flock(fd_, LOCK_EX | LOCK_NB);  // new and ours: tells stale-file cleanup that a writer is alive
  // Writers open a path; through /proc/self/fd it is this very file even if its name is
  // replaced meanwhile by someone who may write to the directory.
  write_path_ = partial_;
  const std::string by_descriptor = "/proc/self/fd/" + std::to_string(fd_);
  struct stat mine {
  }, seen{};
  if (::fstat(fd_, &mine) == 0 && ::stat(by_descriptor.c_str(), &seen) == 0 && mine.st_dev == seen.st_dev &&
      mine.st_ino == seen.st_ino)
    write_path_ = by_descriptor;
}

AtomicOutputFile::~AtomicOutputFile() {
  if (!committed_) ::unlink(partial_.c_str());
  cleanup::leave_file(slot_);
  if (fd_ >= 0) ::close(fd_);
}

void AtomicOutputFile::commit() {
  const std::string what = "cannot write " + destination_ + link_note(destination_, target_) + ": ";
  const std::string nothing = " (nothing written to " + destination_ + ")";
  // On disk before the rename: otherwise a power loss can leave the new name on an empty file.
  trace_process("output: written, flushing it to disk (fsync)");
  if (::fsync(fd_) != 0) throw Error(what + std::strerror(errno) + " while flushing it to disk" + nothing);
  trace_process("output: flushed");
  // The name must still be this file: someone who may write to the directory could have put
  // something else there, and the rename would move that into place.
  struct stat mine {
  }, named{};
  if (::fstat(fd_, &mine) != 0 || ::lstat(partial_.c_str(), &named) != 0 || mine.st_dev != named.st_dev ||
      mine.st_ino != named.st_ino)
    throw Error(what + "its temporary file " + partial_ + " was removed or replaced by another program" + nothing);
  struct stat old {};
  if (::stat(target_.c_str(), &old) == 0 && S_ISREG(old.st_mode)) {
    ::fchmod(fd_, old.st_mode & 0777);  // the replaced map's permissions, never setuid/setgid
    if (::fchown(fd_, old.st_uid, old.st_gid) != 0) {
      [[maybe_unused]] const int group_only = ::fchown(fd_, static_cast<uid_t>(-1), old.st_gid);
    }
  } else {
    ::fchmod(fd_, 0666 & ~current_umask());
  }
  if (::rename(partial_.c_str(), target_.c_str()) != 0) {
    const int error = errno;
    throw Error("cannot move the finished map to " + destination_ + link_note(destination_, target_) + ": " +
                std::strerror(error) + nothing);
  }
  committed_ = true;
  trace_process("output: renamed into place");  // replacing a large file frees its blocks here
  cleanup::count_committed_file();
  // The rename itself is durable once its directory is flushed; best effort (some file
  // systems cannot fsync a directory, and the map is in place either way).
  const int dir_fd = ::open(directory_of(target_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
    trace_process("output: its directory flushed");
  }
}

}  // namespace espgrid
