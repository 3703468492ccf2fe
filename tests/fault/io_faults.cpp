// LD_PRELOAD library for tests/test_reliability.cpp: file-system faults and observations the
// kernel cannot be asked for. Loaded into the espgrid binary only; every hook passes through to
// the C library unless its environment variable is set.
//
//   ESPGRID_FAULT_READ_EIO=SUFFIX:BYTES  read() of a file whose path ends in SUFFIX fails with
//                                        EIO once BYTES of it were read (a disk failing mid-file)
//   ESPGRID_FAULT_PREAD_EIO=SUFFIX:BYTES the same for pread() (the binary map readers and the DCD
//                                        check: src/maps/map_reading.h, ByteSource) asking for
//                                        bytes at or past BYTES
//   ESPGRID_FAULT_LOG=FILE               appends "fsync PATH", "fdatasync PATH" and
//                                        "rename FROM TO" lines in call order (PATH and FROM
//                                        absolute, TO as given)
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

template <class Function>
Function next_symbol(const char* name) {
  return reinterpret_cast<Function>(::dlsym(RTLD_NEXT, name));
}

/// The path behind a file descriptor ("" when unknown).
void path_of(int fd, char* path, std::size_t size) {
  char link[64];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = ::readlink(link, path, size - 1);
  path[n > 0 ? n : 0] = '\0';
}

void log_line(const char* what, const char* a, const char* b) {
  const char* log = std::getenv("ESPGRID_FAULT_LOG");
  if (log == nullptr) return;
  char line[8400];
  const int n = std::snprintf(line, sizeof line, "%s %s%s%s\n", what, a, b ? " " : "", b ? b : "");
  const int fd = ::open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  [[maybe_unused]] const ssize_t ignored = ::write(fd, line, n > 0 ? static_cast<std::size_t>(n) : 0);
  ::close(fd);
}

bool read_should_fail(int fd, off_t end = -1, const char* variable = "ESPGRID_FAULT_READ_EIO") {
  const char* spec = std::getenv(variable);
  if (spec == nullptr) return false;
  const char* colon = std::strrchr(spec, ':');
  if (colon == nullptr) return false;
  const std::size_t suffix_length = static_cast<std::size_t>(colon - spec);
  char path[4096];
  path_of(fd, path, sizeof path);
  const std::size_t length = std::strlen(path);
  if (length < suffix_length || std::strncmp(path + length - suffix_length, spec, suffix_length) != 0) return false;
  const off_t offset = end >= 0 ? end : ::lseek(fd, 0, SEEK_CUR);
  return offset >= std::atoll(colon + 1);
}

}  // namespace

extern "C" ssize_t read(int fd, void* buffer, std::size_t count) {
  static const auto real = next_symbol<ssize_t (*)(int, void*, std::size_t)>("read");
  if (read_should_fail(fd)) {
    errno = EIO;
    return -1;
  }
  return real(fd, buffer, count);
}

extern "C" ssize_t pread(int fd, void* buffer, std::size_t count, off_t offset) {
  static const auto real = next_symbol<ssize_t (*)(int, void*, std::size_t, off_t)>("pread");
  if (count > 0 && read_should_fail(fd, offset + static_cast<off_t>(count) - 1, "ESPGRID_FAULT_PREAD_EIO")) {
    errno = EIO;
    return -1;
  }
  return real(fd, buffer, count, offset);
}

extern "C" ssize_t pread64(int fd, void* buffer, std::size_t count, off_t offset) {
  return pread(fd, buffer, count, offset);
}

extern "C" int fsync(int fd) {
  static const auto real = next_symbol<int (*)(int)>("fsync");
  char path[4096];
  path_of(fd, path, sizeof path);
  log_line("fsync", path, nullptr);
  return real(fd);
}

extern "C" int fdatasync(int fd) {
  static const auto real = next_symbol<int (*)(int)>("fdatasync");
  char path[4096];
  path_of(fd, path, sizeof path);
  log_line("fdatasync", path, nullptr);
  return real(fd);
}

extern "C" int rename(const char* from, const char* to) {
  static const auto real = next_symbol<int (*)(const char*, const char*)>("rename");
  char from_abs[4096];
  if (::realpath(from, from_abs) == nullptr) std::snprintf(from_abs, sizeof from_abs, "%s", from);
  log_line("rename", from_abs, to);
  return real(from, to);
}
