#include "src/core/text_parsing.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/stat.h>

#include "src/core/errors.h"

#if ESPGRID_HAVE_ZLIB
#include <zlib.h>
#endif

namespace espgrid {
namespace {

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

/// Control bytes other than tab, VT and FF (and DEL) mark binary data; CR and LF end lines.
bool is_binary_byte(unsigned char byte) {
  return (byte < 0x20 && byte != '\t' && byte != '\v' && byte != '\f' && byte != '\r' && byte != '\n') || byte == 0x7f;
}

/// Whether any of the 8 bytes at `at` is below 0x20 or is 0x7f: a line end, a tab or a binary
/// byte, which the line scan looks at one by one. Words of plain text (most of a structure file)
/// pass in one test: the line scan was a tenth of reading a 1.9 M-atom PQR, byte by byte. Bytes
/// ≥ 0x80 (UTF-8) never match. The two tests are the exact "some byte is below n" and "some byte
/// is zero" word tricks: a borrow can flag the wrong byte, never a word without one.
bool any_control_byte(const char* at) {
  std::uint64_t word;
  std::memcpy(&word, at, sizeof word);
  constexpr std::uint64_t kOnes = 0x0101010101010101ull, kHighs = 0x8080808080808080ull;
  const std::uint64_t below_space = (word - kOnes * 0x20) & ~word & kHighs;
  const std::uint64_t del = word ^ (kOnes * 0x7f);
  return (below_space | ((del - kOnes) & ~del & kHighs)) != 0;
}

[[noreturn]] void throw_binary(const std::string& path, std::size_t line, unsigned char byte, std::size_t column,
                               const std::string& kind = "text structure file") {
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02x", byte);
  throw InputError(
      path, line,
      "binary data (byte " + std::string(hex) + " at column " + std::to_string(column) + "); is this a " + kind + "?");
}

/// read(2) that retries after a signal; throws Error naming the file and where reading stopped.
std::size_t read_some(int fd, char* into, std::size_t bytes, const std::string& path, std::size_t lines_read) {
  for (;;) {
    const ssize_t got = ::read(fd, into, bytes);
    if (got >= 0) return static_cast<std::size_t>(got);
    if (errno == EINTR) continue;
    throw Error("cannot read " + path + ": " + std::strerror(errno) + " (after line " + std::to_string(lines_read) +
                "; nothing was computed from a partly read file)");
  }
}

}  // namespace

std::string_view trim_space(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = text.find(',', start);
    parts.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return parts;
    start = comma + 1;
  }
}

std::vector<std::string_view> split_whitespace(std::string_view line) {
  std::vector<std::string_view> tokens;
  split_whitespace(line, tokens);
  return tokens;
}

namespace {
// A direct test per byte: find_first_of with a set of five was a memchr per byte, the largest
// part of reading a large PQR.
constexpr bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }
}  // namespace

std::string_view first_token(std::string_view line) {
  std::size_t pos = 0;
  while (pos < line.size() && is_space(line[pos])) ++pos;
  std::size_t end = pos;
  while (end < line.size() && !is_space(line[end])) ++end;
  return line.substr(pos, end - pos);
}

void split_whitespace(std::string_view line, std::vector<std::string_view>& tokens) {
  tokens.clear();
  const auto space = is_space;
  std::size_t pos = 0;
  const std::size_t size = line.size();
  while (true) {
    while (pos < size && space(line[pos])) ++pos;
    if (pos == size) break;
    std::size_t end = pos;
    while (end < size && !space(line[end])) ++end;
    tokens.push_back(line.substr(pos, end - pos));
    pos = end;
  }
}

std::string quoted(std::string_view token) {
  const bool shortened = token.size() > 40;
  if (shortened) token = token.substr(0, 37);
  std::string out = "'";
  for (const char c : token) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte >= 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", byte);
      out += hex;
    } else {
      out += c;
    }
  }
  return out + (shortened ? "...'" : "'");
}

int open_input_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("cannot open " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int error = errno;
    ::close(fd);
    throw Error("cannot open " + path + ": " + std::strerror(error));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw Error(path + " is a directory, not a structure file");
  }
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
    ::close(fd);
    throw Error(path + " is a device, not a file (a device such as /dev/zero may never end); give a regular file " +
                "or a pipe");
  }
  return fd;
}

// ---- LineSource ----------------------------------------------------------------------------------

#if ESPGRID_HAVE_ZLIB
/// zlib's inflate over the file's bytes, one gzip member after another.
struct LineSource::GzipStream {
  enum class Mode { Undecided, Gzip, Plain };
  z_stream z{};
  bool z_ready = false;   // inflateInit2 succeeded
  std::vector<char> raw;  // the file's bytes read; the unused ones are [begin, end)
  std::size_t begin = 0, end = 0;
  bool raw_eof = false;         // the file has no more bytes to give
  Mode mode = Mode::Undecided;  // decided by the first two bytes
  bool in_member = false;       // inside a member: its end (with CRC and length) not yet seen
  std::size_t members = 0;      // members begun
  std::uint64_t offset = 0;     // bytes of the file before raw[begin]
  std::uint64_t member_start = 0;
  // A corrupt member's error, raised after the bytes inflate gave with it have been read: so the
  // lines before it are the same however the file arrives (in pieces or at once).
  std::string corrupt;
  std::size_t left() const { return end - begin; }
  bool magic_next() const {
    return left() >= 2 && static_cast<unsigned char>(raw[begin]) == 0x1f &&
           static_cast<unsigned char>(raw[begin + 1]) == 0x8b;
  }
  ~GzipStream() {
    if (z_ready) inflateEnd(&z);
  }
};
#else
struct LineSource::GzipStream {};
#endif

LineSource::LineSource(std::string path, Decompress decompress, std::string name)
    : path_(name.empty() ? path : std::move(name)) {
  const bool gzip = decompress == Decompress::Gzip;
#if !ESPGRID_HAVE_ZLIB
  if (gzip) throw UsageError("cannot read " + path_ + ": this espgrid was built without zlib, which reads gzip files");
#endif
  fd_ = open_input_file(path);
  struct stat st {};
  if (::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode)) size_hint_ = static_cast<std::size_t>(st.st_size);
  buffer_.resize(kChunkBytes);
  if (gzip) {
    try {
      start_gzip();
    } catch (...) {
      ::close(fd_);
      throw;
    }
    size_hint_ = 0;  // the text is larger than the file
  }
}

LineSource::LineSource(const std::string& path, std::size_t first_byte, std::size_t end_byte)
    : path_(path),
      range_left_(end_byte > first_byte ? end_byte - first_byte : 0),
      byte_order_mark_may_lead_(first_byte == 0) {
  fd_ = open_input_file(path);
  if (::lseek(fd_, static_cast<off_t>(first_byte), SEEK_SET) < 0) {
    const int error = errno;
    ::close(fd_);
    throw Error("cannot read " + path + ": " + std::strerror(error) + " (seeking to byte " +
                std::to_string(first_byte) + ")");
  }
  size_hint_ = range_left_;
  buffer_.resize(kChunkBytes);
}

LineSource::LineSource(std::string name, std::string bytes, std::size_t chunk_bytes, Decompress decompress)
    : path_(std::move(name)), memory_(std::move(bytes)), chunk_bytes_(chunk_bytes) {
#if !ESPGRID_HAVE_ZLIB
  if (decompress == Decompress::Gzip)
    throw UsageError("cannot read " + path_ + ": this espgrid was built without zlib, which reads gzip files");
#endif
  size_hint_ = memory_.size();
  buffer_.resize(std::max<std::size_t>(64, chunk_bytes_ == 0 ? memory_.size() : chunk_bytes_));
  if (decompress == Decompress::Gzip) {
    start_gzip();
    size_hint_ = 0;
  }
}

LineSource::~LineSource() {
  if (fd_ >= 0) ::close(fd_);
}

void LineSource::start_gzip() {
  gzip_ = std::make_unique<GzipStream>();
#if ESPGRID_HAVE_ZLIB
  const std::size_t raw_bytes = fd_ >= 0 ? kChunkBytes : std::max<std::size_t>(64, chunk_bytes_);
  gzip_->raw.resize(raw_bytes);
  // The decompressed text goes to buffer_ a chunk at a time, whatever the file's size.
  if (fd_ < 0) buffer_.resize(std::max<std::size_t>(64, chunk_bytes_ == 0 ? kChunkBytes : chunk_bytes_));
#endif
}

void LineSource::fail(const std::string& what) const {
  throw InputError(path_, std::max<std::size_t>(line_number_, 1), what);
}

std::size_t LineSource::read_file_bytes(char* into, std::size_t bytes) {
  if (fd_ >= 0) {
    const std::size_t got = read_some(fd_, into, std::min(bytes, range_left_), path_, line_number_);
    if (range_left_ != SIZE_MAX) range_left_ -= got;
    return got;
  }
  const std::size_t step = chunk_bytes_ == 0 ? memory_.size() : chunk_bytes_;
  const std::size_t got = std::min({bytes, step, memory_.size() - memory_offset_});
  std::memcpy(into, memory_.data() + memory_offset_, got);
  memory_offset_ += got;
  return got;
}

bool LineSource::fill() {
  if (eof_) return false;
  // Keep the unread bytes (the start of a line) at the front, then make room for a chunk.
  if (begin_ > 0) {
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  const std::size_t want =
      std::max<std::size_t>(1, fd_ >= 0 || gzip_ ? kChunkBytes : (chunk_bytes_ == 0 ? memory_.size() : chunk_bytes_));
  if (buffer_.size() - end_ < want) buffer_.resize(end_ + want);
  const std::size_t room =
      gzip_ && fd_ < 0 && chunk_bytes_ > 0 ? std::min(chunk_bytes_, buffer_.size() - end_) : buffer_.size() - end_;
  const std::size_t got =
      gzip_ ? read_gzip(buffer_.data() + end_, room) : read_file_bytes(buffer_.data() + end_, buffer_.size() - end_);
  bytes_read_ += got;
  end_ += got;
  eof_ = got == 0;
  return !eof_;
}

bool LineSource::more_compressed() {
  GzipStream& g = *gzip_;
  if (g.raw_eof) return false;
  if (g.begin > 0) {
    std::memmove(g.raw.data(), g.raw.data() + g.begin, g.left());
    g.end -= g.begin;
    g.begin = 0;
  }
  const std::size_t got = read_file_bytes(g.raw.data() + g.end, g.raw.size() - g.end);
  g.end += got;
  g.raw_eof = got == 0;
  return got > 0;
}

std::size_t LineSource::read_gzip(char* into, std::size_t bytes) {
#if ESPGRID_HAVE_ZLIB
  GzipStream& g = *gzip_;
  using Mode = GzipStream::Mode;
  if (g.mode == Mode::Undecided) {
    while (g.left() < 2 && more_compressed()) {
    }
    g.mode = g.magic_next() ? Mode::Gzip : Mode::Plain;
  }
  if (!g.corrupt.empty()) throw InputError(path_, line_number_ + 1, g.corrupt);
  if (g.mode == Mode::Plain) {  // not gzip data: the text as it is (gunzip -c would refuse it; cat not)
    if (g.left() == 0 && !more_compressed()) return 0;
    const std::size_t n = std::min(bytes, g.left());
    std::memcpy(into, g.raw.data() + g.begin, n);
    g.begin += n;
    g.offset += n;
    return n;
  }
  const auto where = [&] {
    return "gzip member " + std::to_string(g.members) + " (from byte " + std::to_string(g.member_start) +
           " of the file)";
  };
  for (;;) {
    if (!g.in_member) {  // at the start, or after a member's end: another member, or the end
      while (g.left() < 2 && more_compressed()) {
      }
      if (g.left() == 0) return 0;
      if (!g.magic_next())
        throw InputError(path_, line_number_ + 1,
                         "the file goes on after its gzip data (" + std::to_string(g.members) +
                             (g.members == 1 ? " member" : " members") + ", " + std::to_string(g.offset) +
                             " bytes) with bytes that are not gzip data (gunzip's \"trailing garbage\"); is the "
                             "file damaged, or was something appended to it?");
      const int started = g.z_ready ? inflateReset(&g.z) : inflateInit2(&g.z, 16 + MAX_WBITS);
      if (started != Z_OK) throw Error("cannot read " + path_ + ": zlib could not start (out of memory?)");
      g.z_ready = true;
      g.in_member = true;
      g.member_start = g.offset;
      ++g.members;
    }
    // With no input left inflate is still called: it may hold decoded bits of the file's last bytes
    // that a small output buffer has not taken yet (fuzz/regressions/gzip/truncated-member-...: read
    // in 1-byte pieces, a truncated member gave a line less than read at once). Nothing used and
    // nothing produced with nothing more to read is the truncation, below.
    if (g.left() == 0) more_compressed();
    const std::size_t in = std::min<std::size_t>(g.left(), 1u << 30), out = std::min<std::size_t>(bytes, 1u << 30);
    g.z.next_in = reinterpret_cast<Bytef*>(g.raw.data() + g.begin);
    g.z.avail_in = static_cast<uInt>(in);
    g.z.next_out = reinterpret_cast<Bytef*>(into);
    g.z.avail_out = static_cast<uInt>(out);
    const int code = inflate(&g.z, Z_NO_FLUSH);
    const std::size_t used = in - g.z.avail_in, produced = out - g.z.avail_out;
    g.begin += used;
    g.offset += used;
    if (code == Z_STREAM_END) {  // the member's CRC-32 and length matched its data
      g.in_member = false;
      if (produced > 0) return produced;
      continue;
    }
    if (code == Z_OK || code == Z_BUF_ERROR) {  // Z_BUF_ERROR: it needs more of the file
      if (produced > 0) return produced;
      if (used == 0 && !more_compressed())
        throw InputError(path_, line_number_ + 1,
                         "the gzip data ends early: the file is truncated (" + where() + " ends before its end)");
      continue;
    }
    if (code == Z_MEM_ERROR) throw Error("cannot read " + path_ + ": zlib ran out of memory");
    g.corrupt = "the gzip data is corrupt (zlib: " + (g.z.msg ? std::string(g.z.msg) : "code " + std::to_string(code)) +
                ", in " + where() + ")";
    if (produced > 0) return produced;  // the error comes with the next read
    throw InputError(path_, line_number_ + 1, g.corrupt);
  }
#else
  (void)into;
  (void)bytes;
  return 0;
#endif
}

std::optional<std::string_view> LineSource::next() {
  if (at_end_) return std::nullopt;
  if (lf_may_follow_) {
    lf_may_follow_ = false;
    if (begin_ == end_) fill();
    if (begin_ < end_ && buffer_[begin_] == '\n') ++begin_;
  }
  std::size_t scan = begin_;  // the bytes before it hold no line end and no binary byte
  for (;;) {
    for (; scan < end_; ++scan) {
      while (end_ - scan >= 8 && !any_control_byte(buffer_.data() + scan)) scan += 8;
      if (scan == end_) break;
      const auto byte = static_cast<unsigned char>(buffer_[scan]);
      if (byte >= 0x20 && byte != 0x7f) continue;
      if (byte == '\n' || byte == '\r') break;
      if (is_binary_byte(byte)) throw_binary(path_, line_number_ + 1, byte, scan - begin_ + 1, kind_);
    }
    const std::size_t offset = scan - begin_;  // fill() moves the unread bytes to the front
    if (scan < end_) {
      // A CR as the last byte read may be the first half of a CRLF: the line is returned now and
      // the next call drops the LF. Reading on first would wait on a pipe for a line already
      // complete, and an error of that read (a truncated gzip member) would name this line.
      std::string_view line(buffer_.data() + begin_, offset);
      if (buffer_[scan] == '\r' && scan + 1 == end_) {
        lf_may_follow_ = true;
        begin_ = end_;
      } else {
        begin_ = scan + ((buffer_[scan] == '\r' && buffer_[scan + 1] == '\n') ? 2 : 1);
      }
      return counted(line);
    }
    if (offset > kMaxLineBytes)
      throw InputError(path_, line_number_ + 1,
                       "line " + std::to_string(line_number_ + 1) + " is longer than " +
                           std::to_string(kMaxLineBytes >> 20) + " MiB; is this a " + kind_ + "?");
    if (!fill()) {
      if (begin_ < end_) {  // a last line without a line end
        std::string_view line(buffer_.data() + begin_, end_ - begin_);
        begin_ = end_;
        return counted(line);
      }
      at_end_ = true;
      return std::nullopt;
    }
    scan = begin_ + offset;
  }
}

std::string_view LineSource::counted(std::string_view line) {
  // A UTF-8 byte-order mark (EF BB BF) before the first line is an encoding marker, not text.
  if (++line_number_ == 1 && byte_order_mark_may_lead_ && line.substr(0, kByteOrderMark.size()) == kByteOrderMark)
    line.remove_prefix(kByteOrderMark.size());
  return line;
}

// ---- TextLines ----------------------------------------------------------------------------------

TextLines::TextLines(std::string path) : path_(std::move(path)) {
  const int fd = open_input_file(path_);
  try {
    char chunk[1 << 16];
    while (const std::size_t got = read_some(fd, chunk, sizeof chunk, path_, 0)) text_.append(chunk, got);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  split_and_check();
}

TextLines::TextLines(std::string path, std::string text) : path_(std::move(path)), text_(std::move(text)) {
  split_and_check();
}

void TextLines::split_and_check() {
  // Lines end at LF, CRLF or a bare CR (old Mac files): a bare CR must never join two
  // records into one line, where reading fields from the right would silently drop atoms.
  std::string_view all(text_);
  std::size_t start = 0;
  while (start < all.size()) {
    const std::size_t end = all.find_first_of("\r\n", start);
    std::string_view line = all.substr(start, end == std::string_view::npos ? end : end - start);
    for (std::size_t col = 0; col < line.size(); ++col) {
      const auto byte = static_cast<unsigned char>(line[col]);
      if (is_binary_byte(byte)) throw_binary(path_, lines_.size() + 1, byte, col + 1);
    }
    lines_.push_back(line);
    if (end == std::string_view::npos) break;
    start = end + ((all[end] == '\r' && end + 1 < all.size() && all[end + 1] == '\n') ? 2 : 1);
  }
}

}  // namespace espgrid
