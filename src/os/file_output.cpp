#include "src/os/file_output.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sys/mman.h>
#include <sys/stat.h>
#include <thread>

#include "src/core/errors.h"
#include "src/core/on_threads.h"
#include "src/core/switches.h"

namespace espgrid {

OutputFile::OutputFile(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error("cannot write " + path_ + ": " + std::strerror(errno));
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
}

void OutputFile::record(int error) noexcept {
  int none = 0;
  error_.compare_exchange_strong(none, error != 0 ? error : EIO);
}

void OutputFile::write_at(std::uint64_t offset, const void* data, std::size_t bytes) noexcept {
  const char* p = static_cast<const char*>(data);
  if (bytes >= kMappedBytes && !failed() && write_mapped(offset, p, bytes)) return;
  pwrite_all(offset, p, bytes);
}

bool OutputFile::write_mapped(std::uint64_t offset, const char* data, std::size_t bytes) noexcept {
  if (!switched_on("ESPGRID_MAPPED_WRITE")) return false;
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) return false;
  // A second descriptor: a shared writable mapping needs one opened for reading too.
  const int fd = ::open(path_.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  const std::uint64_t start = offset / page * page;  // mappings begin on a page
  const std::size_t length = static_cast<std::size_t>(offset - start) + bytes;
  bool written = false;
  if (::fallocate(fd, 0, static_cast<off_t>(offset), static_cast<off_t>(bytes)) != 0) {
    if (errno == ENOSPC || errno == EFBIG || errno == EDQUOT) {
      record(errno);  // the disk is full: as a pwrite would have found
      written = true;
    }
  } else if (void* mapped = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(start));
             mapped != MAP_FAILED) {
    char* into = static_cast<char*>(mapped) + (offset - start);
    const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
    const std::size_t threads =
        std::clamp<std::size_t>(bytes / (std::size_t{16} << 20), 1, std::min<std::size_t>(16, cores));
    const std::size_t share = (bytes + threads - 1) / threads;  // a page shared by two is written by both: bytes apart
    const auto copy_share = [=](std::size_t t) {
      const std::size_t at = t * share;
      if (at < bytes) std::memcpy(into + at, data + at, std::min(share, bytes - at));
    };
    on_threads(threads, copy_share);
    ::munmap(mapped, length);
    written = true;
  }
  ::close(fd);
  return written;
}

void OutputFile::pwrite_all(std::uint64_t offset, const char* p, std::size_t bytes) noexcept {
  while (bytes > 0 && !failed()) {
    // At most 1 GiB a call: Linux writes at most 0x7ffff000 bytes at once anyway.
    const ssize_t n = ::pwrite(fd_, p, std::min<std::size_t>(bytes, std::size_t{1} << 30), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      record(n < 0 ? errno : ENOSPC);  // a write of 0 bytes: the device is full
      return;
    }
    p += n;
    offset += static_cast<std::uint64_t>(n);
    bytes -= static_cast<std::size_t>(n);
  }
}

void OutputFile::append(const void* data, std::size_t bytes) noexcept {
  write_at(end_, data, bytes);
  end_ += bytes;
}

void OutputFile::start_writeback() noexcept {
  if (fd_ >= 0) [[maybe_unused]]
    const int ignored = ::sync_file_range(fd_, 0, 0, SYNC_FILE_RANGE_WRITE);
}

void OutputFile::close() {
  if (fd_ >= 0) {
    if (::close(fd_) != 0 && errno != EINTR) record(errno);
    fd_ = -1;
  }
  if (const int error = error_.load()) throw Error("cannot write " + path_ + ": " + std::strerror(error));
}

}  // namespace espgrid
