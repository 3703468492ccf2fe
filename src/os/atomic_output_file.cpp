#include "src/os/atomic_output_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "src/core/errors.h"

extern char** environ;

namespace espgrid {
namespace {

namespace fs = std::filesystem;

// Pending temporary paths, readable from a signal handler: fixed slots of plain char arrays.
constexpr std::size_t kSlots = 32;  // files pending at once: every -o of a run, streamed or not
constexpr std::size_t kPathMax = 4096;
std::array<std::array<char, kPathMax>, kSlots> g_pending{};
std::array<std::atomic<bool>, kSlots> g_in_use{};
std::atomic<int> g_committed{0};  // maps already renamed into place, for the interrupt message

// Temporary folders (removed with their contents) and child process groups (ended), for the
// same handler under the same lock. A child's process group has the child's PID as its id.
constexpr std::size_t kFolderSlots = 32;  // folders at once: one per pdb2pqr run (Python threads)
std::array<std::array<char, kPathMax>, kFolderSlots> g_folders{};
std::array<std::atomic<bool>, kFolderSlots> g_folder_in_use{};
constexpr std::size_t kChildSlots = 32;
std::array<std::atomic<pid_t>, kChildSlots> g_children{};  // 0: a free slot

/// How long a child's process group gets after SIGTERM before SIGKILL, seconds.
constexpr double kChildGraceSeconds = 2.0;

// Creating a temporary file and entering it in the table is one step under this lock, and the
// signal handler takes the same lock before it reads the table. A process-directed signal is
// delivered to any thread that does not block it: an OpenMP worker or a writer thread runs the
// handler while another thread is between creating its file and registering it, and blocking
// the signals on the creating thread alone left that file behind (seen under ASan with the
// SIGXCPU case of MoreSignalsDuringTheWriteRemoveThePartialFile). A lock-free atomic flag is
// async-signal-safe; the handler waits at most for one mkostemp, never for itself, because a
// thread holding the lock blocks the cleanup signals (TableLock) while it does.
std::atomic_flag g_table_lock = ATOMIC_FLAG_INIT;

void lock_table() noexcept {
  while (g_table_lock.test_and_set(std::memory_order_acquire)) {
  }
}
void unlock_table() noexcept { g_table_lock.clear(std::memory_order_release); }

/// Enters `path` in the table; the caller holds the table lock.
int register_pending(const std::string& path) {
  if (path.size() >= kPathMax) return -1;
  for (std::size_t s = 0; s < kSlots; ++s) {
    if (!g_in_use[s].load()) {
      std::memcpy(g_pending[s].data(), path.c_str(), path.size() + 1);
      g_in_use[s].store(true);
      return static_cast<int>(s);
    }
  }
  return -1;
}

// ---- async-signal-safe helpers: system calls only, no allocation, no locks but the table's ----

double monotonic_seconds() noexcept {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

void sleep_seconds(double seconds) noexcept {
  timespec t{static_cast<time_t>(seconds),
             static_cast<long>((seconds - static_cast<double>(static_cast<time_t>(seconds))) * 1e9)};
  while (::nanosleep(&t, &t) != 0 && errno == EINTR) {
  }
}

/// Whether child `pid` has ended (it stays a zombie, not reaped: WNOWAIT keeps its PID, and so
/// its process group's id, from being reused while the table still names it).
bool child_ended(pid_t pid, bool block) noexcept {
  for (;;) {
    siginfo_t info{};
    const int r = ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT | (block ? 0 : WNOHANG));
    if (r == 0) return info.si_pid == pid;
    if (errno == EINTR) continue;
    return true;  // ECHILD: reaped already
  }
}

/// Ends the process group of child `pid`: SIGTERM, up to kChildGraceSeconds for the child to go,
/// then SIGKILL for whatever of the group is left; waits for the child (not reaping it).
void end_child_group(pid_t pid) noexcept {
  ::kill(-pid, SIGTERM);
  const double deadline = monotonic_seconds() + kChildGraceSeconds;
  while (!child_ended(pid, false) && monotonic_seconds() < deadline) sleep_seconds(0.01);
  ::kill(-pid, SIGKILL);  // the child's own children too, if any outlived it
  child_ended(pid, true);
}

/// Waits up to `seconds` until no process is left in process group `group` (a killed member
/// counts until its parent, or init, reaps it): once espgrid goes, nothing of the program runs.
void wait_group_gone(pid_t group, double seconds) noexcept {
  const double deadline = monotonic_seconds() + seconds;
  while (::kill(-group, 0) == 0 && monotonic_seconds() < deadline) sleep_seconds(0.002);
}

// linux_dirent64, as getdents64 fills it (opendir/readdir allocate: not for a signal handler).
struct DirectoryEntry {
  std::uint64_t inode;
  std::int64_t offset;
  unsigned short length;
  unsigned char type;
  char name[1];
};

bool is_dot_or_dot_dot(const char* name) noexcept {
  return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

bool remove_tree_at(int parent, const char* name, int depth) noexcept;

/// Removes everything in the open directory `fd`; entries removed while it is read may be
/// skipped by getdents, so it reads again until a pass finds nothing left (or removes nothing).
void clear_directory(int fd, int depth) noexcept {
  alignas(8) char buffer[2048];
  for (int pass = 0; pass < 64; ++pass) {
    if (::lseek(fd, 0, SEEK_SET) != 0) return;
    bool found = false, removed = false;
    for (;;) {
      const long bytes = ::syscall(SYS_getdents64, fd, buffer, sizeof buffer);
      if (bytes <= 0) break;
      for (long at = 0; at < bytes;) {
        const auto* entry = reinterpret_cast<const DirectoryEntry*>(buffer + at);
        at += entry->length;
        if (is_dot_or_dot_dot(entry->name)) continue;
        found = true;
        removed |= remove_tree_at(fd, entry->name, depth);
      }
    }
    if (!found || !removed) return;
  }
}

/// Removes `name` in directory `parent` (AT_FDCWD: a path), a file or a whole tree; symbolic
/// links are removed, never followed.
bool remove_tree_at(int parent, const char* name, int depth) noexcept {
  if (::unlinkat(parent, name, 0) == 0 || errno == ENOENT) return true;
  if ((errno != EISDIR && errno != EPERM) || depth > 32) return false;
  const int fd = ::openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  clear_directory(fd, depth + 1);
  ::close(fd);
  return ::unlinkat(parent, name, AT_REMOVEDIR) == 0 || errno == ENOENT;
}

extern "C" void remove_pending_and_exit(int signal_number) {
  lock_table();  // never released: the process ends here, and no thread creates a file after this
  // Children first, so that none writes into a folder while it is removed.
  for (std::size_t s = 0; s < kChildSlots; ++s)
    if (const pid_t pid = g_children[s].load(); pid > 0) ::kill(-pid, SIGTERM);
  for (std::size_t s = 0; s < kChildSlots; ++s)
    if (const pid_t pid = g_children[s].load(); pid > 0) {
      end_child_group(pid);
      ::waitpid(pid, nullptr, WNOHANG);  // reaped here rather than left to init as a zombie
      wait_group_gone(pid, 1.0);         // its own children, killed with it, gone too
    }
  for (std::size_t s = 0; s < kFolderSlots; ++s)
    if (g_folder_in_use[s].load()) remove_tree_at(AT_FDCWD, g_folders[s].data(), 0);
  for (std::size_t s = 0; s < kSlots; ++s)
    if (g_in_use[s].load()) ::unlink(g_pending[s].data());  // async-signal-safe
  static const char kNone[] = "\nespgrid: interrupted; no output written\n";
  static const char kSome[] =
      "\nespgrid: interrupted; the unfinished map was removed (maps already completed were kept)\n";
  const bool some = g_committed.load() > 0;
  [[maybe_unused]] auto ignored =
      ::write(STDERR_FILENO, some ? kSome : kNone, (some ? sizeof kSome : sizeof kNone) - 1);
  ::_exit(128 + signal_number);
}

/// The signals whose handler removes the pending temporary files.
constexpr int kCleanupSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGXCPU};

/// The table lock, taken with the cleanup signals held back on this thread (so the handler
/// cannot run here while the lock is held, and wait for itself). A signal that arrives
/// meanwhile is delivered when the guard ends; on another thread, the handler waits for it.
class TableLock {
 public:
  TableLock() {
    sigset_t held;
    sigemptyset(&held);
    for (const int signal_number : kCleanupSignals) sigaddset(&held, signal_number);
    pthread_sigmask(SIG_BLOCK, &held, &before_);
    lock_table();
  }
  ~TableLock() {
    unlock_table();
    pthread_sigmask(SIG_SETMASK, &before_, nullptr);
  }
  TableLock(const TableLock&) = delete;
  TableLock& operator=(const TableLock&) = delete;

 private:
  sigset_t before_;
};

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
    if (fd_ >= 0) slot_ = register_pending(partial_);
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
  if (slot_ >= 0) {
    const TableLock locked;
    g_in_use[static_cast<std::size_t>(slot_)].store(false);
  }
  if (fd_ >= 0) ::close(fd_);
}

void AtomicOutputFile::commit() {
  const std::string what = "cannot write " + destination_ + link_note(destination_, target_) + ": ";
  const std::string nothing = " (nothing written to " + destination_ + ")";
  // On disk before the rename: otherwise a power loss can leave the new name on an empty file.
  if (::fsync(fd_) != 0) throw Error(what + std::strerror(errno) + " while flushing it to disk" + nothing);
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
  g_committed.fetch_add(1);
  // The rename itself is durable once its directory is flushed; best effort (some file
  // systems cannot fsync a directory, and the map is in place either way).
  const int dir_fd = ::open(directory_of(target_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

// ---- temporary folders and child programs ----------------------------------------------------

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
      for (std::size_t s = 0; s < kFolderSlots && pattern.size() < kPathMax; ++s) {
        if (!g_folder_in_use[s].load()) {
          std::memcpy(g_folders[s].data(), pattern.c_str(), pattern.size() + 1);
          g_folder_in_use[s].store(true);
          slot_ = static_cast<int>(s);
          break;
        }
      }
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
  if (slot_ >= 0) {
    const TableLock locked;
    g_folder_in_use[static_cast<std::size_t>(slot_)].store(false);
  }
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

bool remove_tree(const std::string& path) noexcept { return remove_tree_at(AT_FDCWD, path.c_str(), 0); }

namespace {

/// The child's side of run_child, between fork and exec: async-signal-safe calls only (the
/// parent may have other threads, whose locks the child must never need).
[[noreturn]] void exec_child(char* const* argv, const char* directory, int input_fd, int output_fd, int report_fd,
                             pid_t parent) noexcept {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // espgrid killed (SIGKILL, a crash): the child goes too
  if (::getppid() != parent) ::_exit(127);
  // espgrid ignores these for itself; the program gets the default, as from a shell. Handled
  // signals return to their default at exec; signals ignored when espgrid started (nohup)
  // stay ignored.
  ::signal(SIGPIPE, SIG_DFL);
  ::signal(SIGXFSZ, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);  // the parent held the cleanup signals while forking
  if (::dup2(input_fd, STDIN_FILENO) < 0 || ::dup2(output_fd, STDOUT_FILENO) < 0 ||
      ::dup2(output_fd, STDERR_FILENO) < 0 || ::chdir(directory) != 0) {
    const int error = errno;
    [[maybe_unused]] const ssize_t ignored = ::write(report_fd, &error, sizeof error);
    ::_exit(127);
  }
  ::execve(argv[0], argv, environ);
  const int error = errno;
  [[maybe_unused]] const ssize_t ignored = ::write(report_fd, &error, sizeof error);
  ::_exit(127);
}

/// A child in the handler's table until it is reaped; the destructor ends its group if it is
/// still running (an exception on the way out: a failed wait, an interrupt from `waiting`).
class RegisteredChild {
 public:
  RegisteredChild(pid_t pid, int slot) : pid_(pid), slot_(slot) {}
  ~RegisteredChild() {
    if (!ended_) end_child_group(pid_);
    reap();
  }
  RegisteredChild(const RegisteredChild&) = delete;
  RegisteredChild& operator=(const RegisteredChild&) = delete;
  /// Waits (blocking, or not) for the child to end; true once it has.
  bool wait(bool block) {
    if (!ended_) ended_ = child_ended(pid_, block);
    return ended_;
  }
  /// Takes the child out of the table, then reaps it: its PID is never reused while listed.
  ChildExit reap() {
    ChildExit exit;
    if (reaped_) return exit_;
    {
      const TableLock locked;
      g_children[static_cast<std::size_t>(slot_)].store(0);
    }
    int status = 0;
    pid_t r = -1;
    while ((r = ::waitpid(pid_, &status, 0)) < 0 && errno == EINTR) {
    }
    // r < 0 (ECHILD: SIGCHLD ignored, the child reaped by the system) leaves the exit unknown.
    if (r == pid_ && WIFEXITED(status)) exit.exit_code = WEXITSTATUS(status);
    if (r == pid_ && WIFSIGNALED(status)) exit.signal = WTERMSIG(status);
    // Whatever the program left running in its group (a helper it started) ends with it.
    ::kill(-pid_, SIGKILL);
    wait_group_gone(pid_, 1.0);
    reaped_ = true;
    exit_ = exit;
    return exit;
  }

 private:
  pid_t pid_;
  int slot_;
  bool ended_ = false;
  bool reaped_ = false;
  ChildExit exit_;
};

/// A file descriptor closed on every way out.
struct Descriptor {
  int fd = -1;
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

ChildExit run_child(const std::vector<std::string>& argv, const std::string& directory, int output_fd,
                    const std::function<void()>& waiting) {
  if (argv.empty()) throw Error("internal error: run_child without a program");
  // Everything the child needs is made before the fork: the child allocates nothing.
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  Descriptor input{::open("/dev/null", O_RDONLY | O_CLOEXEC)};
  if (input.fd < 0) throw Error("cannot run " + argv[0] + ": cannot open /dev/null: " + std::strerror(errno));
  int report[2] = {-1, -1};  // exec's failure, from the child; closed (by exec) on success
  if (::pipe2(report, O_CLOEXEC) != 0) throw Error("cannot run " + argv[0] + ": " + std::strerror(errno));
  Descriptor report_read{report[0]}, report_write{report[1]};
  const pid_t parent = ::getpid();
  pid_t pid = -1;
  int slot = -1;
  int fork_error = 0;
  {
    const TableLock locked;  // the child and its entry in the signal handler's table together
    for (std::size_t s = 0; s < kChildSlots; ++s)
      if (g_children[s].load() == 0) {
        slot = static_cast<int>(s);
        break;
      }
    if (slot >= 0) {
      pid = ::fork();
      if (pid == 0) exec_child(args.data(), directory.c_str(), input.fd, output_fd, report[1], parent);
      if (pid < 0) {
        fork_error = errno;
      } else {
        ::setpgid(pid, pid);  // the child does the same; whichever runs first makes the group
        g_children[static_cast<std::size_t>(slot)].store(pid);
      }
    }
  }
  if (slot < 0) throw Error("cannot run " + argv[0] + ": " + std::to_string(kChildSlots) + " programs already run");
  if (pid < 0) throw Error("cannot run " + argv[0] + ": " + std::strerror(fork_error));
  RegisteredChild child(pid, slot);
  ::close(report_write.fd);
  report_write.fd = -1;
  int exec_error = 0;
  ssize_t got = 0;
  while ((got = ::read(report_read.fd, &exec_error, sizeof exec_error)) < 0 && errno == EINTR) {
  }
  if (got == static_cast<ssize_t>(sizeof exec_error)) {
    child.wait(true);
    child.reap();
    throw Error("cannot run " + argv[0] + ": " + std::strerror(exec_error));
  }
  if (!waiting) {
    child.wait(true);
  } else {
    double pause = 0.005;
    while (!child.wait(false)) {
      waiting();  // may throw: the child's group is ended on the way out
      sleep_seconds(pause);
      pause = std::min(0.02, pause * 2);
    }
  }
  return child.reap();
}

void install_interrupt_cleanup() {
  struct sigaction action {};
  action.sa_handler = remove_pending_and_exit;
  sigemptyset(&action.sa_mask);
  // Every signal whose default action ends the process without a core dump and that a user,
  // a scheduler or a resource limit sends: the pending temporary files go first. SIGPROF is
  // left to profilers; SIGQUIT keeps its core dump.
  for (const int signal_number : kCleanupSignals) {
    struct sigaction before {};
    sigaction(signal_number, nullptr, &before);
    if (before.sa_handler == SIG_IGN) continue;  // ignored by whoever started us (nohup): keep it so
    sigaction(signal_number, &action, nullptr);
  }
  // Over the file-size limit (ulimit -f) the default action killed the process mid-write and
  // left the temporary file behind; ignored, the write fails with EFBIG and is reported. A
  // closed pipe on stdout (espgrid map ... | head -1) likewise fails a write of the report
  // instead of killing a run whose maps are its product.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGXFSZ, &ignore, nullptr);
  sigaction(SIGPIPE, &ignore, nullptr);
}

}  // namespace espgrid
