#include "src/core/byte_source.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sys/stat.h>

#include "src/core/errors.h"
#include "src/core/text_parsing.h"

namespace espgrid {

ByteSource::ByteSource(std::string path) : path_(std::move(path)) {
  fd_ = open_input_file(path_);
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    throw Error(path_ + " is not a regular file: binary maps (.mrc, .vti) are read from files, whose size is known");
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
}

ByteSource::ByteSource(std::string name, std::string bytes) : path_(std::move(name)), memory_(std::move(bytes)) {
  size_ = memory_.size();
}

ByteSource::~ByteSource() {
  if (fd_ >= 0) ::close(fd_);
}

void ByteSource::read(std::uint64_t offset, void* into, std::size_t count, std::string_view what) const {
  if (offset > size_ || count > size_ - offset)
    throw InputError(path_, 0,
                     "the file ends at byte " + std::to_string(size_) + ", before the end of " + std::string(what) +
                         " (bytes " + std::to_string(offset) + " to " + std::to_string(offset + count) +
                         "): is it truncated?");
  if (fd_ < 0) {
    if (count) std::memcpy(into, memory_.data() + offset, count);
    return;
  }
  auto* out = static_cast<char*>(into);
  std::size_t done = 0;
  while (done < count) {
    // At most 1 GiB a call: Linux transfers at most 0x7ffff000 bytes in one.
    const std::size_t want = std::min<std::size_t>(count - done, std::size_t{1} << 30);
    const ssize_t got = ::pread(fd_, out + done, want, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0)
      throw Error("cannot read " + path_ + ": " + std::strerror(errno) + " (at byte " + std::to_string(offset + done) +
                  "; nothing was made from a partly read file)");
    if (got == 0)
      throw Error("cannot read " + path_ + ": it ended at byte " + std::to_string(offset + done) +
                  " while being read (was it changed meanwhile?)");
    done += static_cast<std::size_t>(got);
  }
}

}  // namespace espgrid
