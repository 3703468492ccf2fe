// The interrupt handler's table, internal to src/os/: what a cleanup signal must end or remove
// before the process goes — child process groups (child_process.h), private temporary folders
// (temporary_folder.h) and pending temporary map files (atomic_output_file.h) — in fixed slots
// of plain character arrays and atomics that the handler (interrupt_cleanup.cpp) reads without
// allocating.
//
// Each thing is entered in the table in one step with its creation, under TableLock, which the
// handler takes too: a process-directed signal is delivered to any thread that does not block
// it, so an OpenMP worker or a writer thread may run the handler while another thread is
// between creating its file and registering it. Blocking the signals on the creating thread
// alone left that file behind (seen under ASan with the SIGXCPU case of
// MoreSignalsDuringTheWriteRemoveThePartialFile).
#pragma once

#include <signal.h>

#include <cstddef>
#include <string>
#include <sys/types.h>

namespace espgrid::cleanup {

constexpr std::size_t kPathMax = 4096;
constexpr std::size_t kFileSlots = 32;    ///< map files pending at once: every -o of a run, streamed or not
constexpr std::size_t kFolderSlots = 32;  ///< temporary folders at once: one per pdb2pqr run (Python threads)
constexpr std::size_t kChildSlots = 32;   ///< child programs at once

/// The signals whose handler ends the children and removes the folders and pending files.
constexpr int kCleanupSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGXCPU};

/// The table lock, taken with the cleanup signals held back on this thread (so the handler
/// cannot run here while the lock is held, and wait for itself). A signal that arrives
/// meanwhile is delivered when the guard ends; on another thread, the handler waits for it.
class TableLock {
 public:
  TableLock();
  ~TableLock();
  TableLock(const TableLock&) = delete;
  TableLock& operator=(const TableLock&) = delete;

 private:
  sigset_t before_;
};

// Entries. `enter_*` and free_child_slot need the caller to hold a TableLock (the entry is made
// in one step with the thing it names); `leave_*` take it themselves. A slot is -1 when the
// table is full or the path too long: the thing then exists unregistered.

/// A pending temporary file, unlinked by the handler.
int enter_file(const std::string& path);
void leave_file(int slot);
/// Counts a map renamed into place, so the handler's message says whether some were kept.
void count_committed_file() noexcept;

/// A temporary folder, removed with everything in it by the handler.
int enter_folder(const std::string& path);
void leave_folder(int slot);

/// A free slot for a child, or -1; the caller forks, then enter_child with the child's PID (the
/// id of its process group), still under the same lock.
int free_child_slot();
void enter_child(int slot, pid_t pid);
void leave_child(int slot);

// ---- async-signal-safe helpers: system calls only, no allocation, no locks but the table's ----

void sleep_seconds(double seconds) noexcept;
/// Whether child `pid` has ended (it stays a zombie, not reaped: WNOWAIT keeps its PID, and so
/// its process group's id, from being reused while the table still names it).
bool child_ended(pid_t pid, bool block) noexcept;
/// Ends the process group of child `pid`: SIGTERM, up to a grace period for the child to go,
/// then SIGKILL for whatever of the group is left; waits for the child (not reaping it).
void end_child_group(pid_t pid) noexcept;
/// Waits up to `seconds` until no process is left in process group `group` (a killed member
/// counts until its parent, or init, reaps it): once espgrid goes, nothing of the program runs.
void wait_group_gone(pid_t group, double seconds) noexcept;
/// Removes `name` in directory `parent` (AT_FDCWD: a path), a file or a whole tree; symbolic
/// links are removed, never followed. False if anything stayed.
bool remove_tree_at(int parent, const char* name, int depth) noexcept;

}  // namespace espgrid::cleanup
