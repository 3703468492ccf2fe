#include "src/structure/dcd_check.h"

#include <array>
#include <bit>
#include <cstring>

#include "src/core/byte_source.h"
#include "src/core/errors.h"

namespace espgrid {
namespace {

/// Reads a DCD's Fortran records: a length marker, the payload, the same marker again.
class Records {
 public:
  Records(const ByteSource& bytes, bool swap, int marker_bytes)
      : bytes_(bytes), swap_(swap), marker_bytes_(marker_bytes) {}

  /// The record at `at`: checks both markers (and `expected` bytes when it is not -1) and returns
  /// the payload's offset and length; InputError naming `what` otherwise.
  std::pair<std::uint64_t, std::uint64_t> record(std::uint64_t at, std::int64_t expected, const std::string& what,
                                                 const std::string& truncated) const {
    const std::uint64_t size = bytes_.size();
    if (size - at < static_cast<std::uint64_t>(marker_bytes_)) fail(truncated);
    const std::uint64_t length = marker(at);
    if (length > size - at - marker_bytes_ ||
        size - at - marker_bytes_ - length < static_cast<std::uint64_t>(marker_bytes_)) {
      // A length that runs past the end: the file was cut (or the marker is damaged).
      fail(truncated);
    }
    const std::uint64_t closing = marker(at + marker_bytes_ + length);
    if (closing != length)
      fail(what + " at byte " + std::to_string(at) + " has the record markers " + std::to_string(length) + " and " +
           std::to_string(closing) + ": the file is damaged");
    if (expected >= 0 && length != static_cast<std::uint64_t>(expected))
      fail(what + " holds " + std::to_string(length) + " bytes where " + std::to_string(expected) +
           " were expected: the file is damaged or not a DCD");
    return {at + marker_bytes_, length};
  }
  std::uint64_t next(const std::pair<std::uint64_t, std::uint64_t>& r) const {
    return r.first + r.second + marker_bytes_;
  }
  std::int32_t int_at(std::uint64_t at, const std::string& what) const {
    std::uint32_t v;
    bytes_.read(at, &v, 4, what);
    return static_cast<std::int32_t>(swap_ ? __builtin_bswap32(v) : v);
  }
  [[noreturn]] void fail(const std::string& what) const { throw InputError(bytes_.path(), 0, what); }

 private:
  std::uint64_t marker(std::uint64_t at) const {
    if (marker_bytes_ == 4) return static_cast<std::uint32_t>(int_at(at, "a record marker"));
    std::uint64_t v;
    bytes_.read(at, &v, 8, "a record marker");
    return swap_ ? __builtin_bswap64(v) : v;
  }
  const ByteSource& bytes_;
  bool swap_;
  int marker_bytes_;
};

DcdSummary check(const ByteSource& bytes) {
  const auto fail = [&](const std::string& what) { throw InputError(bytes.path(), 0, what); };
  if (bytes.size() == 0) fail("the file is empty: it holds no trajectory");
  if (bytes.size() < 16) fail("the file has " + std::to_string(bytes.size()) + " bytes: too few for a DCD header");
  std::array<unsigned char, 16> head{};
  bytes.read(0, head.data(), head.size(), "the header");
  std::uint32_t first, second;
  std::memcpy(&first, head.data(), 4);
  std::memcpy(&second, head.data() + 4, 4);
  DcdSummary s;
  bool swap = false;
  int marker_bytes = 4;
  if (std::memcmp(head.data() + 4, "CORD", 4) == 0 && (first == 84 || __builtin_bswap32(first) == 84)) {
    swap = first != 84;
  } else if (std::memcmp(head.data() + 8, "CORD", 4) == 0 &&
             ((first == 84 && second == 0) || (first == 0 && __builtin_bswap32(second) == 84))) {
    marker_bytes = 8;  // 64-bit record markers (some CHARMM builds)
    swap = first != 84;
  } else {
    fail("this is not a DCD trajectory: it does not start with a CORD header record");
  }
  s.wide_markers = marker_bytes == 8;
  s.big_endian = (std::endian::native == std::endian::little) == swap;
  const Records r(bytes, swap, marker_bytes);
  const std::string cut_header = "the file ends inside its header: it is truncated";

  const auto header = r.record(0, 84, "the header record", cut_header);
  const std::uint64_t h = header.first;
  s.header_frames = r.int_at(h + 4, "the header");
  s.fixed_atoms = r.int_at(h + 36, "the header");
  const bool charmm = r.int_at(h + 80, "the header") != 0;  // CHARMM's version; X-PLOR writes 0
  s.unit_cell = charmm && r.int_at(h + 44, "the header") != 0;
  s.four_dims = charmm && r.int_at(h + 48, "the header") == 1;
  if (s.header_frames < 0) fail("the header announces " + std::to_string(s.header_frames) + " frames");

  const auto title = r.record(r.next(header), -1, "the title record", cut_header);
  if (title.second < 4 || (title.second - 4) % 80 != 0)
    fail("the title record holds " + std::to_string(title.second) + " bytes, not a count and 80-byte lines");
  const auto natom = r.record(r.next(title), 4, "the atom-count record", cut_header);
  s.atoms = r.int_at(natom.first, "the atom count");
  if (s.atoms < 1) fail("the header announces " + std::to_string(s.atoms) + " atoms");
  if (s.fixed_atoms < 0 || s.fixed_atoms >= s.atoms)
    fail("the header announces " + std::to_string(s.fixed_atoms) + " fixed atoms of " + std::to_string(s.atoms));
  std::uint64_t at = r.next(natom);
  if (s.fixed_atoms > 0) at = r.next(r.record(at, 4 * (s.atoms - s.fixed_atoms), "the free-atom list", cut_header));

  // Every frame, record by record, to the end of the file.
  static const char* const kAxis[4] = {"x", "y", "z", "fourth"};
  while (at < bytes.size()) {
    const std::int64_t frame = s.frames + 1;  // 1-based for messages
    const std::int64_t n = s.frames == 0 ? s.atoms : s.atoms - s.fixed_atoms;
    const std::string cut =
        "the file ends part-way through frame " + std::to_string(frame) + " (after " + std::to_string(s.frames) +
        " complete frames" +
        (s.header_frames ? " of the " + std::to_string(s.header_frames) + " its header announces" : std::string()) +
        "): the trajectory is truncated";
    if (s.unit_cell) at = r.next(r.record(at, 48, "frame " + std::to_string(frame) + "'s unit cell", cut));
    for (int axis = 0; axis < (s.four_dims ? 4 : 3); ++axis)
      at = r.next(r.record(at, 4 * n, "frame " + std::to_string(frame) + "'s " + kAxis[axis] + " coordinates", cut));
    ++s.frames;
  }
  if (s.frames == 0)
    fail("the file holds a header but no frames" +
         (s.header_frames ? " (its header announces " + std::to_string(s.header_frames) + ")" : std::string()));
  return s;
}

}  // namespace

DcdSummary check_dcd(const std::string& path) { return check(ByteSource(path)); }

std::string frame_count_note(const DcdSummary& s) {
  if (s.header_frames == s.frames) return {};
  const std::string held = std::to_string(s.frames) + (s.frames == 1 ? " whole frame" : " whole frames");
  const std::string all = s.frames == 1 ? "it is read" : "all " + std::to_string(s.frames) + " are read";
  const std::string header = s.header_frames == 0 ? "its header's frame count (NSET) is 0, not filled in"
                                                  : "its header announces " + std::to_string(s.header_frames) +
                                                        (s.header_frames == 1 ? " frame (NSET)" : " frames (NSET)");
  return header + ", but the file holds " + held + ": " + all + ", as VMD and MDAnalysis read them";
}

DcdSummary check_dcd_bytes(const std::string& name, std::string bytes) {
  return check(ByteSource(name, std::move(bytes)));
}

}  // namespace espgrid
