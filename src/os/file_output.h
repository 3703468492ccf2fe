// A map file being written, through plain POSIX calls. Writers call it from inside parallel
// regions and from a streaming writer's thread, where an exception must not escape, so it
// never throws while writing: the first failure is kept, later writes are skipped, and close()
// reports it naming the file.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace espgrid {

class OutputFile {
 public:
  /// Creates (or truncates) `path`; throws Error naming it when that fails.
  explicit OutputFile(std::string path);
  ~OutputFile();  ///< closes the descriptor if close() was not called; never throws
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  /// Writes at the end of what append wrote so far. Not for concurrent calls: the callers
  /// order them (the DX writer's `omp ordered`).
  void append(const void* data, std::size_t bytes) noexcept;
  /// Writes at `offset`, independently of append; safe from several threads at once. A write of
  /// kDirectBytes or more goes to the disk directly (O_DIRECT, through two aligned buffers that two
  /// threads fill and write in turn; its unaligned ends through the page cache): the file is fsynced
  /// before it replaces its destination anyway, and a copy into the page cache that the disk must
  /// then catch up with cost more (949 MB on an H200 host's ext4, 2026-11-28: 0.60-0.72 s buffered
  /// and fsynced, 0.37-0.42 s direct; benchmarks/io_write_paths.py). Where the file system refuses
  /// direct I/O, or with ESPGRID_DIRECT_WRITE=0, it is a pwrite. (A shared mapping filled by
  /// several threads was tried and was no faster than the pwrite: removed.)
  void write_at(std::uint64_t offset, const void* data, std::size_t bytes) noexcept;
  static constexpr std::size_t kDirectBytes = std::size_t{64} << 20;
  /// Asks the kernel to start writing the file's dirty pages to disk now, without waiting
  /// (sync_file_range). A streamed map calls it as it goes, so the fsync before the rename
  /// waits for the last stretch only, not for gigabytes. Best effort: ignored where unsupported.
  void start_writeback() noexcept;
  /// Whether a write has failed (the rest are skipped).
  bool failed() const noexcept { return error_.load() != 0; }
  /// Closes the file; throws Error "cannot write PATH: REASON" for the first failure.
  void close();
  const std::string& path() const noexcept { return path_; }

 private:
  void record(int error) noexcept;
  void pwrite_all(std::uint64_t offset, const char* data, std::size_t bytes) noexcept;
  /// write_at's direct path: false, with nothing written, where it cannot be used.
  bool write_direct(std::uint64_t offset, const char* data, std::size_t bytes) noexcept;

  std::string path_;
  int fd_ = -1;
  std::uint64_t end_ = 0;      ///< where the next append goes
  std::atomic<int> error_{0};  ///< errno of the first failure, 0 while none
};

}  // namespace espgrid
