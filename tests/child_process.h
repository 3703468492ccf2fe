// The espgrid binary as a child process, for the end-to-end tests that send it signals, set
// resource limits, change its environment or give it a closed pipe as stdout
// (tests/test_hardening.cpp, tests/test_reliability.cpp).
//
// ESPGRID_TEST_BINARY=PATH runs another binary in place of the one built with the tests: that
// is how a regression test is shown to fail on the code before its fix (docs/reliability.md).
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <sys/resource.h>
#include <sys/wait.h>
#include <thread>
#include <vector>

#include "src/core/stopwatch.h"
#include "tests/file_helpers.h"

// ESPGRID_UNDER_SANITIZER: 1 in an AddressSanitizer build (slower; no address-space limits).
#if defined(__SANITIZE_ADDRESS__)
#define ESPGRID_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ESPGRID_UNDER_SANITIZER 1
#endif
#endif
#ifndef ESPGRID_UNDER_SANITIZER
#define ESPGRID_UNDER_SANITIZER 0
#endif

namespace espgrid::testing {

/// The binary under test: ESPGRID_TEST_BINARY when set, else the one built with the tests.
inline std::string espgrid_binary() {
  const char* other = std::getenv("ESPGRID_TEST_BINARY");
  return other && *other ? other : ESPGRID_BINARY;
}

/// How the child ended: exit code, or 128 + signal when a signal killed it (as a shell shows it).
struct Outcome {
  int code = -1;
  bool signaled = false;
  std::string out, err;
  long max_rss_kib = 0;  ///< the child's peak resident memory (getrusage of the child, KiB)
};

inline std::ostream& operator<<(std::ostream& os, const Outcome& r) {
  return os << (r.signaled ? "killed by signal " + std::to_string(r.code - 128) : "exit " + std::to_string(r.code))
            << "\n--- stdout ---\n"
            << r.out << "--- stderr ---\n"
            << r.err;
}

/// The espgrid binary as a child process: stdout and stderr to files, stdin from /dev/null,
/// optional environment changes and resource limits. Runs in the source directory, so
/// relative paths such as "data/achbp.pqr" work.
class Child {
 public:
  struct Options {
    std::map<std::string, std::optional<std::string>> env;  ///< value, or nullopt to unset
    std::optional<rlim_t> file_size_limit;                  ///< RLIMIT_FSIZE, bytes
    std::optional<rlim_t> cpu_seconds_limit;                ///< RLIMIT_CPU soft limit, s (hard: +10 s)
    std::optional<rlim_t> address_space_limit;              ///< RLIMIT_AS, bytes
    bool stdout_to_closed_pipe = false;  ///< stdout is a pipe whose reader has gone (`| head -1` after its line)
    std::string stdout_to;               ///< stdout to this file instead (/dev/full: every write fails, ENOSPC)
    std::string stdin_from;              ///< stdin from this file instead of /dev/null
    bool start_stopped = false;          ///< the child stops itself (SIGSTOP) before exec: see resume()
    std::vector<int> ignored_signals;    ///< set to SIG_IGN before exec, as nohup does for SIGHUP
  };

  Child(const std::vector<std::string>& args, const std::filesystem::path& capture_dir, const Options& options) {
    out_ = capture_dir / "stdout";
    err_ = capture_dir / "stderr";
    std::vector<std::string> argv_storage = {espgrid_binary()};
    argv_storage.insert(argv_storage.end(), args.begin(), args.end());
    int pipe_ends[2] = {-1, -1};
    if (options.stdout_to_closed_pipe && ::pipe(pipe_ends) != 0) ADD_FAILURE() << "pipe() failed";
    pid_ = ::fork();
    if (pid_ == 0) {
      // child: only async-signal-safe work would be strictly correct after fork in a threaded
      // process; gtest runs tests on one thread, and this is the usual test-harness pattern.
      const int in = ::open(options.stdin_from.empty() ? "/dev/null" : options.stdin_from.c_str(), O_RDONLY);
      const int o = options.stdout_to_closed_pipe ? pipe_ends[1]
                    : !options.stdout_to.empty()  ? ::open(options.stdout_to.c_str(), O_WRONLY)
                                                  : ::open(out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int e = ::open(err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (in < 0 || o < 0 || e < 0) ::_exit(120);
      if (options.stdout_to_closed_pipe) ::close(pipe_ends[0]);
      ::dup2(in, 0);
      ::dup2(o, 1);
      ::dup2(e, 2);
      if (::chdir(ESPGRID_SOURCE_DIR) != 0) ::_exit(121);
      for (const auto& [name, value] : options.env) {
        if (value)
          ::setenv(name.c_str(), value->c_str(), 1);
        else
          ::unsetenv(name.c_str());
      }
      if (options.file_size_limit) {
        const rlimit limit{*options.file_size_limit, *options.file_size_limit};
        if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(122);
      }
      if (options.cpu_seconds_limit) {
        const rlimit limit{*options.cpu_seconds_limit, *options.cpu_seconds_limit + 10};
        if (::setrlimit(RLIMIT_CPU, &limit) != 0) ::_exit(122);
      }
      if (options.address_space_limit) {
        const rlimit limit{*options.address_space_limit, *options.address_space_limit};
        if (::setrlimit(RLIMIT_AS, &limit) != 0) ::_exit(122);
      }
      // The child starts with every signal at its default action and none blocked, whatever
      // the test runner inherited: a runner started in the background by a non-interactive
      // shell has SIGINT ignored, which espgrid keeps ignored (as nohup asks), and the SIGINT
      // cases then failed every time (seen 2026-11-24 running the suite under setsid ... &).
      for (int sig = 1; sig < NSIG; ++sig)
        if (sig != SIGKILL && sig != SIGSTOP) ::signal(sig, SIG_DFL);
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      for (const int ignored : options.ignored_signals) ::signal(ignored, SIG_IGN);
      if (options.start_stopped) ::raise(SIGSTOP);
      std::vector<char*> argv;
      for (std::string& a : argv_storage) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(123);
    }
    if (options.stdout_to_closed_pipe) {  // the reader goes away at once: every write to stdout fails
      ::close(pipe_ends[0]);
      ::close(pipe_ends[1]);
      std::ofstream(out_) << "(stdout was a closed pipe)\n";
    }
    if (options.start_stopped) {
      int status = 0;
      if (::waitpid(pid_, &status, WUNTRACED) != pid_ || !WIFSTOPPED(status)) ADD_FAILURE() << "child did not stop";
    }
  }
  ~Child() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  /// Lets a child started with start_stopped go on to exec espgrid.
  void resume() const { ::kill(pid_, SIGCONT); }
  bool running() {
    if (reaped_) return false;
    int status = 0;
    rusage usage{};
    const pid_t r = ::wait4(pid_, &status, WNOHANG, &usage);
    if (r == pid_) {
      record(status);
      outcome_.max_rss_kib = usage.ru_maxrss;
      return false;
    }
    return true;
  }
  void signal(int sig) const { ::kill(pid_, sig); }
  /// Waits for the child (killing it after `timeout_s`) and returns how it ended.
  Outcome wait(double timeout_s = 300) {
    const auto start = Clock::now();
    while (running()) {
      if (seconds_since(start) > timeout_s) {
        ::kill(pid_, SIGKILL);
        ADD_FAILURE() << "the child ran over " << timeout_s << " s and was killed";
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    outcome_.out = slurp(out_);
    outcome_.err = slurp(err_);
    return outcome_;
  }

 private:
  void record(int status) {
    reaped_ = true;
    if (WIFEXITED(status)) {
      outcome_.code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
      outcome_.signaled = true;
      outcome_.code = 128 + WTERMSIG(status);
    }
  }
  pid_t pid_ = -1;
  bool reaped_ = false;
  Outcome outcome_;
  std::filesystem::path out_, err_;
};

/// How a mount namespace is made here ("unshare -rm": a user namespace, any user; "unshare -m":
/// root), or "" when neither may mount a tmpfs (then small_fs_unavailable() says why).
inline const std::string& small_fs_unshare() {
  static const std::string command = [] {
    const std::string probe =
        " sh -c 'd=$(mktemp -d) && mount -t tmpfs -o size=64k tmpfs \"$d\" && umount \"$d\"; r=$?; rmdir \"$d\"; exit "
        "$r'"
        " >/dev/null 2>&1";
    for (const char* unshare : {"unshare -rm", "unshare -m"})
      if (std::system((std::string(unshare) + probe).c_str()) == 0) return std::string(unshare);
    return std::string();
  }();
  return command;
}

/// Why a small private file system cannot be mounted here (run_with_small_fs), or "" when it can.
inline std::string small_fs_unavailable() {
  if (!small_fs_unshare().empty()) return "";
  if (std::system("command -v unshare >/dev/null 2>&1") != 0) return "unshare (util-linux) is not installed";
  return "no mount namespace can be made here (neither `unshare -rm` nor `unshare -m` may mount a tmpfs)";
}

/// Runs the shell `script` with a tmpfs of `kib` KiB mounted at `mount_point` (an existing empty
/// directory), in a mount namespace of its own: nothing outside sees the mount, and it goes with
/// the script, so the script must record what it wants checked in files outside `mount_point`.
/// The script reaches the binary under test as "$ESPGRID". A full disk (ENOSPC) or a read-only
/// file system (`mount -o remount,ro`) is made this way. Returns the script's exit status.
inline int run_with_small_fs(const std::filesystem::path& mount_point, int kib, const std::string& script) {
  const auto quote = [](const std::string& s) {
    std::string out = "'";
    for (const char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
  };
  const std::string body = "mount -t tmpfs -o size=" + std::to_string(kib) + "k tmpfs " + quote(mount_point.string()) +
                           " || exit 125\n" + script;
  const int status =
      std::system(("ESPGRID=" + quote(espgrid_binary()) + " " + small_fs_unshare() + " sh -c " + quote(body)).c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/// The child's temporary file for the map `name` in `dir` (".NAME.partial.PID.XXXXXX", the
/// suffix unpredictable; older builds wrote ".NAME.partial.PID"), or an empty path while there is none.
inline std::filesystem::path partial_file(const std::filesystem::path& dir, const std::string& name, pid_t pid) {
  const std::string head = "." + name + ".partial." + std::to_string(pid);
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string file = entry.path().filename().string();
    if (file == head || file.rfind(head + ".", 0) == 0) return entry.path();
  }
  return {};
}

/// Polls until the child's temporary file for `name` exists (returns it) or the child ends or
/// `timeout_s` passes (returns an empty path).
inline std::filesystem::path wait_for_partial(Child& child, const std::filesystem::path& dir, const std::string& name,
                                              double timeout_s) {
  const auto start = Clock::now();
  while (seconds_since(start) < timeout_s) {
    if (std::filesystem::path p = partial_file(dir, name, child.pid()); !p.empty()) return p;
    if (!child.running()) return partial_file(dir, name, child.pid());
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  return {};
}

/// A test with its own scratch directory (dir_) for inputs and outputs, and a capture
/// directory for the child's stdout and stderr; both removed afterwards.
class ScratchDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static int counter = 0;
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("espgrid_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" + info->name());
    capture_ = dir_.string() + ".capture";
    std::filesystem::remove_all(dir_);
    std::filesystem::remove_all(capture_);
    ASSERT_TRUE(std::filesystem::create_directories(dir_));
    ASSERT_TRUE(std::filesystem::create_directories(capture_));
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::permissions(dir_, std::filesystem::perms::owner_all, ignored);
    std::filesystem::remove_all(dir_, ignored);
    std::filesystem::remove_all(capture_, ignored);
  }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  Outcome run(const std::vector<std::string>& args, const Child::Options& options = {}) {
    Child child(args, capture_, options);
    return child.wait();
  }

  /// The names in the scratch directory, sorted (hidden files included).
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  /// Nothing in the output directory but `allowed`: no map, no ".NAME.partial.PID.XXXXXX".
  void expect_only(std::vector<std::string> allowed) const {
    std::sort(allowed.begin(), allowed.end());
    EXPECT_EQ(entries(), allowed);
  }

  /// A clean failure: exit `code`, "espgrid: error: ...message...", no crash or exception text,
  /// no "wrote" line.
  static void expect_clean_error(const Outcome& r, int code, const std::string& message) {
    EXPECT_FALSE(r.signaled) << r;
    EXPECT_EQ(r.code, code) << r;
    EXPECT_TRUE(contains(r.err, "espgrid: error: ")) << r;
    EXPECT_TRUE(contains(r.err, message)) << "expected '" << message << "'\n" << r;
    for (const char* noise : {"terminate called", "std::", "filesystem error", "what()", "internal error", "Aborted",
                              "Segmentation", "runtime error", "AddressSanitizer"})
      EXPECT_FALSE(contains(r.err, noise)) << "'" << noise << "' in stderr\n" << r;
    EXPECT_FALSE(contains(r.out, "wrote")) << r;
  }

  std::filesystem::path dir_, capture_;
};

}  // namespace espgrid::testing
