#include "src/os/file_output.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "src/core/errors.h"

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
  pwrite_all(offset, static_cast<const char*>(data), bytes);
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
