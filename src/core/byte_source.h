// Random access to a binary file's bytes with every read checked against the file's size, so a
// header that promises more than the file holds is an InputError naming the byte, never a read
// past the end. The map readers (src/maps/) and the DCD check (src/structure/) read through it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace espgrid {

/// A binary file's bytes by offset (map files, DCD trajectories): a regular file (pread) or bytes in memory (tests and
/// fuzzers). Reads past the end are InputErrors naming the byte; read errors are Errors.
class ByteSource {
 public:
  /// Opens `path` (core/text_parsing.h: open_input_file); it must be a regular file, whose size
  /// is known before its header is believed.
  explicit ByteSource(std::string path);
  /// `bytes` as if they were a file named `name`.
  ByteSource(std::string name, std::string bytes);
  ~ByteSource();
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;

  const std::string& path() const noexcept { return path_; }
  std::uint64_t size() const noexcept { return size_; }
  /// Whether the bytes are in memory (no file to hand to another library).
  bool in_memory() const noexcept { return fd_ < 0; }
  const std::string& memory() const noexcept { return memory_; }
  /// Copies bytes [offset, offset + count) into `into`; InputError when they are not all in
  /// the file ("the file ends at byte N, before WHAT"), Error on a read error.
  void read(std::uint64_t offset, void* into, std::size_t count, std::string_view what) const;

 private:
  std::string path_;
  int fd_ = -1;
  std::string memory_;
  std::uint64_t size_ = 0;
};

}  // namespace espgrid
