#include "src/structure/child_programs.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/statvfs.h>

#include "src/core/errors.h"
#include "src/core/text_format.h"
#include "src/os/atomic_output_file.h"
#include "src/os/child_process.h"

namespace espgrid {

namespace fs = std::filesystem;

/// `name` on the PATH (or `name` itself when it holds a '/'), if it is an executable file.
std::optional<std::string> find_program(const std::string& name) {
  const auto executable = [](const fs::path& p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
  };
  if (name.find('/') != std::string::npos) return executable(name) ? std::optional<std::string>(name) : std::nullopt;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const fs::path candidate = fs::path(dir.empty() ? "." : dir) / name;
    if (executable(candidate)) return candidate.string();
  }
  return std::nullopt;
}

/// The program named by environment variable `variable`, or `fallback` on the PATH; Error
/// saying what to install when there is none.
std::string resolve_program(const char* variable, const std::string& fallback, const std::string& needed_for,
                            const std::string& package) {
  const char* chosen = std::getenv(variable);
  if (chosen && *chosen) {
    if (auto found = find_program(chosen)) return *found;
    throw Error(std::string(variable) + "=" + chosen + " is not an executable program (" + needed_for + ")");
  }
  if (auto found = find_program(fallback)) return *found;
  throw Error(fallback + " was not found on the PATH: " + needed_for + " (Debian: apt-get install " + package +
              "; or set " + variable + "=PROGRAM)");
}

/// Reads a whole file (a log in the temporary folder) as text; empty when it cannot.
std::string file_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The free space of the file system holding `folder`, for messages about a full TMPDIR: ""
/// when there is room, else " (... is full: N bytes free)".
std::string full_note(const fs::path& folder) {
  struct statvfs fs {};
  if (::statvfs(folder.c_str(), &fs) != 0) return "";
  const double free_bytes = static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize);
  if (free_bytes >= 1024.0 * 1024.0 && fs.f_favail > 16) return "";
  const char* variable = std::getenv("TMPDIR");
  return "\n  (the temporary folder's file system is full: " + human_bytes(free_bytes) + " and " +
         std::to_string(fs.f_favail) + " files free in " + folder.parent_path().string() +
         (variable && *variable ? " (TMPDIR)" : "") + "; free space there or set TMPDIR to another directory)";
}

/// Runs argv (argv[0] a path) in `folder` (os/atomic_output_file.h: run_child, in a process
/// group the interrupt handler ends) with stdin from /dev/null and stdout and stderr into
/// folder/`log_name`; no shell is involved, so no name needs quoting.
ProgramRun run_program(const std::vector<std::string>& argv, const fs::path& folder, const std::string& log_name,
                       const std::function<void()>& waiting) {
  const fs::path log = folder / log_name;
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int error = errno;
    throw Error("cannot run " + fs::path(argv[0]).filename().string() + ": cannot create its log " + log.string() +
                ": " + std::strerror(error) + full_note(folder));
  }
  ChildExit exit;
  try {
    exit = run_child(argv, folder.string(), fd, waiting);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  ProgramRun run;
  run.exit_code = exit.exit_code;
  run.signal = exit.signal;
  run.output = file_text(log);
  return run;
}

std::string trimmed(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t start = 0;
  while (start < s.size() && std::isspace(static_cast<unsigned char>(s[start]))) ++start;
  return s.substr(start);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

/// The last `count` non-empty lines.
std::vector<std::string> tail(const std::string& text, std::size_t count) {
  std::vector<std::string> lines;
  for (const std::string& line : lines_of(text))
    if (!trimmed(line).empty()) lines.push_back(trimmed(line));
  if (lines.size() > count) lines.erase(lines.begin(), lines.end() - static_cast<std::ptrdiff_t>(count));
  return lines;
}

std::string indented(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += "\n  " + line;
  return out;
}

/// `word` as a shell word: as it is when it needs no quoting, else in single quotes. For the
/// equivalent command lines people copy.
std::string shell_word(const std::string& word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("/._-+,:=@%", c) != nullptr;
  });
  if (plain) return word;
  std::string out = "'";
  for (const char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string ending_text(const ProgramRun& run) {
  if (run.signal) return "killed by signal " + std::to_string(run.signal);
  if (run.exit_code < 0) return "it ended in a way the system did not report";
  return "exit code " + std::to_string(run.exit_code);
}

/// Writes `size` bytes to `fd`, retrying short writes; false with errno set on failure.
bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, std::min<std::size_t>(size, std::size_t{1} << 30));
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

/// Writes `text` to `destination` atomically; Error naming the destination and the reason.
void write_text_file(const std::string& destination, const std::string& text) {
  AtomicOutputFile out(destination);
  const std::string nothing = " (nothing written to " + destination + ")";
  const int fd = ::open(out.temporary_path().c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) throw Error("cannot write " + destination + ": " + std::strerror(errno) + nothing);
  const bool written = write_all(fd, text.data(), text.size());
  const int error = errno;
  if (!written) {
    ::close(fd);
    throw Error("cannot write " + destination + ": " + std::strerror(error) + nothing);
  }
  if (::close(fd) != 0) throw Error("cannot write " + destination + ": " + std::strerror(errno) + nothing);
  out.commit();  // fsync first: a full disk that took the data lazily fails here, named
}

}  // namespace espgrid
