#include "src/os/file_output.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

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
  if (bytes >= kDirectBytes && !failed() && write_direct(offset, p, bytes)) return;
  pwrite_all(offset, p, bytes);
}

namespace {

constexpr std::uint64_t kDirectBlock = 4096;                 // a multiple of every disk's logical block
constexpr std::size_t kDirectPiece = std::size_t{32} << 20;  // each aligned buffer

/// One O_DIRECT pwrite of an aligned piece, whole: 0, or the errno of its failure (EINVAL: the file
/// system refuses direct I/O here).
int pwrite_direct(int fd, const char* buffer, std::size_t bytes, std::uint64_t at) noexcept {
  while (bytes > 0) {
    const ssize_t n = ::pwrite(fd, buffer, bytes, static_cast<off_t>(at));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : ENOSPC;
    if (static_cast<std::uint64_t>(n) % kDirectBlock != 0) return EINVAL;  // the rest would not be aligned
    buffer += n;
    at += static_cast<std::uint64_t>(n);
    bytes -= static_cast<std::size_t>(n);
  }
  return 0;
}

struct AlignedFree {
  void operator()(char* p) const noexcept { std::free(p); }
};

}  // namespace

bool OutputFile::write_direct(std::uint64_t offset, const char* data, std::size_t bytes) noexcept {
  if (switched_off("ESPGRID_DIRECT_WRITE")) return false;
  const std::uint64_t first = (offset + kDirectBlock - 1) / kDirectBlock * kDirectBlock;
  const std::uint64_t end = (offset + bytes) / kDirectBlock * kDirectBlock;
  const int fd = ::open(path_.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC);
  if (fd < 0) return false;  // no direct I/O on this file system (tmpfs before Linux 6.6)
  const auto aligned_buffer = [] {
    return std::unique_ptr<char, AlignedFree>(static_cast<char*>(std::aligned_alloc(kDirectBlock, kDirectPiece)));
  };
  std::unique_ptr<char, AlignedFree> buffers[2] = {aligned_buffer(), aligned_buffer()};
  if (!buffers[0] || !buffers[1]) {
    ::close(fd);
    return false;
  }
  // Two threads take every other piece: while one waits for the disk, the other copies the next.
  // A piece the file system refuses to write directly goes through the page cache instead.
  const auto write_pieces = [&](std::size_t t) {
    char* buffer = buffers[t].get();
    for (std::uint64_t at = first + t * kDirectPiece; at < end && !failed(); at += 2 * kDirectPiece) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kDirectPiece, end - at));
      const char* from = data + (at - offset);
      std::memcpy(buffer, from, n);
      const int error = pwrite_direct(fd, buffer, n, at);
      if (error == EINVAL)
        pwrite_all(at, from, n);
      else if (error != 0)
        record(error);
    }
  };
  on_threads(2, write_pieces);
  ::close(fd);
  pwrite_all(offset, data, static_cast<std::size_t>(first - offset));  // the unaligned ends
  pwrite_all(end, data + (end - offset), static_cast<std::size_t>(offset + bytes - end));
  return true;
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
