#include "src/os/child_process.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "src/core/errors.h"
#include "src/os/cleanup_table.h"

extern char** environ;

namespace espgrid {

using cleanup::child_ended;
using cleanup::end_child_group;
using cleanup::TableLock;
using cleanup::wait_group_gone;

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
    cleanup::leave_child(slot_);
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
    slot = cleanup::free_child_slot();
    if (slot >= 0) {
      pid = ::fork();
      if (pid == 0) exec_child(args.data(), directory.c_str(), input.fd, output_fd, report[1], parent);
      if (pid < 0) {
        fork_error = errno;
      } else {
        ::setpgid(pid, pid);  // the child does the same; whichever runs first makes the group
        cleanup::enter_child(slot, pid);
      }
    }
  }
  if (slot < 0)
    throw Error("cannot run " + argv[0] + ": " + std::to_string(cleanup::kChildSlots) + " programs already run");
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
      cleanup::sleep_seconds(pause);
      pause = std::min(0.02, pause * 2);
    }
  }
  return child.reap();
}

}  // namespace espgrid
