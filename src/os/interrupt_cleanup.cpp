// The interrupt handler and its table (cleanup_table.h): every cleanup signal ends the
// registered children's process groups, removes the registered temporary folders and the
// pending temporary files, and ends the process (interrupt_cleanup.h).
#include "src/os/interrupt_cleanup.h"

#include <fcntl.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "src/os/cleanup_table.h"

namespace espgrid {
namespace cleanup {
namespace {

// Fixed slots of plain char arrays and atomics: readable from the signal handler.
std::array<std::array<char, kPathMax>, kFileSlots> g_files{};
std::array<std::atomic<bool>, kFileSlots> g_file_in_use{};
std::atomic<int> g_committed{0};  // maps already renamed into place, for the interrupt message
std::array<std::array<char, kPathMax>, kFolderSlots> g_folders{};
std::array<std::atomic<bool>, kFolderSlots> g_folder_in_use{};
// A child's process group has the child's PID as its id.
std::array<std::atomic<pid_t>, kChildSlots> g_children{};  // 0: a free slot

/// How long a child's process group gets after SIGTERM before SIGKILL, seconds.
constexpr double kChildGraceSeconds = 2.0;

// A lock-free atomic flag is async-signal-safe; the handler waits at most for one mkostemp,
// never for itself, because a thread holding the lock blocks the cleanup signals (TableLock)
// while it does.
std::atomic_flag g_table_lock = ATOMIC_FLAG_INIT;

void lock_table() noexcept {
  while (g_table_lock.test_and_set(std::memory_order_acquire)) {
  }
}
void unlock_table() noexcept { g_table_lock.clear(std::memory_order_release); }

template <std::size_t N>
int enter_path(std::array<std::array<char, kPathMax>, N>& paths, std::array<std::atomic<bool>, N>& in_use,
               const std::string& path) {
  if (path.size() >= kPathMax) return -1;
  for (std::size_t s = 0; s < N; ++s) {
    if (!in_use[s].load()) {
      std::memcpy(paths[s].data(), path.c_str(), path.size() + 1);
      in_use[s].store(true);
      return static_cast<int>(s);
    }
  }
  return -1;
}

double monotonic_seconds() noexcept {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
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

}  // namespace

TableLock::TableLock() {
  sigset_t held;
  sigemptyset(&held);
  for (const int signal_number : kCleanupSignals) sigaddset(&held, signal_number);
  pthread_sigmask(SIG_BLOCK, &held, &before_);
  lock_table();
}

TableLock::~TableLock() {
  unlock_table();
  pthread_sigmask(SIG_SETMASK, &before_, nullptr);
}

int enter_file(const std::string& path) { return enter_path(g_files, g_file_in_use, path); }

void leave_file(int slot) {
  if (slot < 0) return;
  const TableLock locked;
  g_file_in_use[static_cast<std::size_t>(slot)].store(false);
}

void count_committed_file() noexcept { g_committed.fetch_add(1); }

int enter_folder(const std::string& path) { return enter_path(g_folders, g_folder_in_use, path); }

void leave_folder(int slot) {
  if (slot < 0) return;
  const TableLock locked;
  g_folder_in_use[static_cast<std::size_t>(slot)].store(false);
}

int free_child_slot() {
  for (std::size_t s = 0; s < kChildSlots; ++s)
    if (g_children[s].load() == 0) return static_cast<int>(s);
  return -1;
}

void enter_child(int slot, pid_t pid) { g_children[static_cast<std::size_t>(slot)].store(pid); }

void leave_child(int slot) {
  const TableLock locked;
  g_children[static_cast<std::size_t>(slot)].store(0);
}

void sleep_seconds(double seconds) noexcept {
  timespec t{static_cast<time_t>(seconds),
             static_cast<long>((seconds - static_cast<double>(static_cast<time_t>(seconds))) * 1e9)};
  while (::nanosleep(&t, &t) != 0 && errno == EINTR) {
  }
}

bool child_ended(pid_t pid, bool block) noexcept {
  for (;;) {
    siginfo_t info{};
    const int r = ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT | (block ? 0 : WNOHANG));
    if (r == 0) return info.si_pid == pid;
    if (errno == EINTR) continue;
    return true;  // ECHILD: reaped already
  }
}

void end_child_group(pid_t pid) noexcept {
  ::kill(-pid, SIGTERM);
  const double deadline = monotonic_seconds() + kChildGraceSeconds;
  while (!child_ended(pid, false) && monotonic_seconds() < deadline) sleep_seconds(0.01);
  ::kill(-pid, SIGKILL);  // the child's own children too, if any outlived it
  child_ended(pid, true);
}

void wait_group_gone(pid_t group, double seconds) noexcept {
  const double deadline = monotonic_seconds() + seconds;
  while (::kill(-group, 0) == 0 && monotonic_seconds() < deadline) sleep_seconds(0.002);
}

bool remove_tree_at(int parent, const char* name, int depth) noexcept {
  if (::unlinkat(parent, name, 0) == 0 || errno == ENOENT) return true;
  if ((errno != EISDIR && errno != EPERM) || depth > 32) return false;
  const int fd = ::openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  clear_directory(fd, depth + 1);
  ::close(fd);
  return ::unlinkat(parent, name, AT_REMOVEDIR) == 0 || errno == ENOENT;
}

namespace {

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
  for (std::size_t s = 0; s < kFileSlots; ++s)
    if (g_file_in_use[s].load()) ::unlink(g_files[s].data());  // async-signal-safe
  static const char kNone[] = "\nespgrid: interrupted; no output written\n";
  static const char kSome[] =
      "\nespgrid: interrupted; the unfinished map was removed (maps already completed were kept)\n";
  const bool some = g_committed.load() > 0;
  [[maybe_unused]] auto ignored =
      ::write(STDERR_FILENO, some ? kSome : kNone, (some ? sizeof kSome : sizeof kNone) - 1);
  ::_exit(128 + signal_number);
}

}  // namespace
}  // namespace cleanup

bool remove_tree(const std::string& path) noexcept { return cleanup::remove_tree_at(AT_FDCWD, path.c_str(), 0); }

void install_interrupt_cleanup() {
  struct sigaction action {};
  action.sa_handler = cleanup::remove_pending_and_exit;
  sigemptyset(&action.sa_mask);
  // Every signal whose default action ends the process without a core dump and that a user,
  // a scheduler or a resource limit sends: the pending temporary files go first. SIGPROF is
  // left to profilers; SIGQUIT keeps its core dump.
  for (const int signal_number : cleanup::kCleanupSignals) {
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
