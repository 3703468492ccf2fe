// Small strict text helpers for the readers: whitespace splitting, opening an input file, a
// streaming line source for structure files and a whole-file line table for map files. Both
// number lines, reject binary data and turn a read error into an error, never into an end of file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/core/number_parsing.h"

namespace espgrid {

/// Splits on spaces, tabs, CR, VT and FF.
std::vector<std::string_view> split_whitespace(std::string_view line);
/// The same into `tokens` (cleared first), so a reader can reuse one vector for every line.
void split_whitespace(std::string_view line, std::vector<std::string_view>& tokens);
/// The first whitespace-separated token of `line` (empty when there is none), by split_whitespace's rule.
std::string_view first_token(std::string_view line);
/// `text` without the white space (std::isspace: space, tab, CR, LF, VT, FF) at either end.
std::string_view trim_space(std::string_view text);
/// Whether `text` is one or more ASCII digits '0'-'9' (no sign, no locale).
inline bool whole_digits(std::string_view text) {
  for (char c : text)
    if (c < '0' || c > '9') return false;
  return !text.empty();
}
/// "a,b,,c" -> {"a", "b", "", "c"}: every part, empty ones too (a list option's values).
std::vector<std::string> split_commas(const std::string& text);

/// Opens `path` for reading and returns its file descriptor. Throws Error naming the path when
/// it cannot be opened, when it is a directory, or when it is a device (/dev/zero, a terminal,
/// a disk: a device may never end). Regular files, pipes and sockets are accepted.
int open_input_file(const std::string& path);

/// A structure file as a stream of numbered lines (LF, CRLF or bare CR), read in chunks so that
/// memory stays bounded by the longest line whatever the file's size. Each line is checked as
/// it is read: reading stops at the first line with binary data (InputError at that line), at a
/// line longer than kMaxLineBytes, and at any read error (Error naming the file and the last
/// line read: a failing disk must never look like the end of the file). A UTF-8 byte-order
/// mark at the start of the file is skipped.
class LineSource {
 public:
  /// Longest line accepted, bytes: far above any PQR or XYZ record, far below memory trouble.
  static constexpr std::size_t kMaxLineBytes = std::size_t{1} << 20;
  /// Bytes asked of the file per read.
  static constexpr std::size_t kChunkBytes = std::size_t{1} << 20;

  /// How the file's bytes become text.
  enum class Decompress {
    None,  ///< as they are
    /// A file that starts with gzip's magic bytes is gzip: every member, one after another, as
    /// gunzip reads it; bytes after the last member that are not another member ("trailing
    /// garbage", which gunzip refuses too) are an InputError. Any other file is text as it is.
    Gzip,
  };
  /// Opens `path` (see open_input_file), named `name` in messages when one is given ("<stdin>"
  /// for /dev/stdin). With Decompress::Gzip, a truncated or corrupt gzip stream is an
  /// InputError, never an early end; UsageError when this build has no zlib.
  explicit LineSource(std::string path, Decompress decompress = Decompress::None, std::string name = {});
  /// Bytes [first_byte, end_byte) of the regular file `path`, numbered from line 1 and without a
  /// byte-order mark skipped unless first_byte is 0: one of several ranges that threads read at
  /// once (src/structure/pqr_ranges.cpp). first_byte should start a line. Uncompressed only.
  LineSource(const std::string& path, std::size_t first_byte, std::size_t end_byte);
  /// Reads `bytes` as if they were a file named `name` (tests and fuzzers), handing them over
  /// `chunk_bytes` at a time (0: all at once) to exercise lines and gzip data that cross reads.
  LineSource(std::string name, std::string bytes, std::size_t chunk_bytes = 0,
             Decompress decompress = Decompress::None);
  ~LineSource();
  LineSource(const LineSource&) = delete;
  LineSource& operator=(const LineSource&) = delete;

  /// The next line without its terminator (valid until the next call), or nullopt at the end.
  std::optional<std::string_view> next();
  /// Number of the line next() returned last (1-based); after the end, the number of lines.
  std::size_t line_number() const noexcept { return line_number_; }
  /// The file's name as given, for messages.
  const std::string& path() const noexcept { return path_; }
  /// True when the file holds no bytes at all (known once next() returned nullopt).
  bool empty() const noexcept { return at_end_ && bytes_read_ == 0; }
  /// The file's size in bytes when known in advance (a regular file, text in memory), else 0:
  /// lets a reader reserve memory for its atoms.
  std::size_t size_hint() const noexcept { return size_hint_; }
  /// Throws InputError("PATH:LINE: what") for the line next() returned last.
  [[noreturn]] void fail(const std::string& what) const;
  /// What the file should be, for the messages about binary data and overlong lines
  /// ("is this a KIND?"); "text structure file" unless set.
  void set_kind(std::string kind) { kind_ = std::move(kind); }

 private:
  struct GzipStream;  // zlib's inflate state and the compressed bytes read (text_parsing.cpp)
  /// Reads more bytes after the unread ones; returns false at the end of the file.
  bool fill();
  /// Up to `bytes` of the file's own bytes (compressed ones in gzip mode); 0 at its end.
  std::size_t read_file_bytes(char* into, std::size_t bytes);
  /// Up to `bytes` decompressed bytes (gzip mode); 0 at the end of the last member.
  std::size_t read_gzip(char* into, std::size_t bytes);
  /// Reads more compressed bytes after the unused ones; false at the end of the file.
  bool more_compressed();
  void start_gzip();
  /// Numbers a line about to be returned (and drops a byte-order mark from the first).
  std::string_view counted(std::string_view line);
  std::string path_;
  int fd_ = -1;
  std::unique_ptr<GzipStream> gzip_;  // set when decompressing
  std::string memory_;                // in-memory text, consumed from memory_offset_
  std::size_t memory_offset_ = 0;     //
  std::size_t chunk_bytes_ = 0;       // in-memory: bytes handed over per fill (0 = all)
  std::vector<char> buffer_;          // unread bytes are [begin_, end_)
  std::size_t begin_ = 0, end_ = 0;
  std::size_t line_number_ = 0;
  std::size_t bytes_read_ = 0;
  std::size_t size_hint_ = 0;
  std::size_t range_left_ = SIZE_MAX;     // bytes of the file still to read (a range's; else unlimited)
  bool byte_order_mark_may_lead_ = true;  // the first line is the file's first
  std::string kind_ = "text structure file";
  bool eof_ = false;     // the file has no more bytes to give
  bool at_end_ = false;  // next() has returned nullopt
  // The last line returned ended at a CR that was the last byte read: an LF first in the next
  // read is the rest of its CRLF, not an empty line.
  bool lf_may_follow_ = false;
};

/// The text of a file split into lines (LF, CRLF or bare CR), numbered from 1, all in memory:
/// for map files, whose readers look back and forth. The file is opened with open_input_file
/// and read to its end; a read error is an Error.
class TextLines {
 public:
  /// Reads the whole file; throws Error when it cannot be opened or read, and InputError
  /// naming the line when it holds binary data (control bytes other than tab/CR/LF).
  explicit TextLines(std::string path);
  /// Wraps text already in memory (used by tests and fuzzers); `path` is used in messages.
  TextLines(std::string path, std::string text);
  // The lines are views into text_: a copy or move would leave them pointing elsewhere.
  TextLines(const TextLines&) = delete;
  TextLines& operator=(const TextLines&) = delete;

  const std::string& path() const noexcept { return path_; }
  std::size_t count() const noexcept { return lines_.size(); }
  /// Line `number` (1-based) without its line terminator.
  std::string_view line(std::size_t number) const { return lines_.at(number - 1); }
  bool empty() const noexcept { return text_.empty(); }

 private:
  void split_and_check();
  std::string path_;
  std::string text_;
  std::vector<std::string_view> lines_;
};

/// Quoted form of a token for error messages, shortened to 40 characters. Bytes that would be
/// invisible or garbled on a terminal (control bytes, anything outside ASCII such as a UTF-8
/// byte-order mark) are shown as \xHH, so the message names what is really there.
std::string quoted(std::string_view token);

}  // namespace espgrid
