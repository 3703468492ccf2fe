// libFuzzer target for the gzip reading of the line source (src/core/text_parsing.h,
// LineSource::Decompress::Gzip: .pqr.gz, .xyz.gz, .pdb.gz, .dx.gz and standard input). Every
// read is made twice, at once and with the file handed over in pieces of 1 to 64 bytes, and must
// give the same lines or the same InputError (naming "fuzz"). The first byte picks the case:
//   0  raw: the rest of the input is the file (gzip or not).
//   1  members: the text (the input after a 5-byte header) cut into 1 to 4 parts, each compressed
//      as a gzip member of its own (zlib, levels 0 to 9), one after another: the lines must be
//      the text's own, read as plain text (or the plain text's InputError).
//   2  trailing garbage: the same members, then 1 to 16 bytes that do not start a member: an
//      InputError, the plain text's own if it has one, else one saying the bytes are not gzip data.
//   3  damage: the same members with one byte changed (or, with the header's low bit, cut short
//      at a byte): an InputError, or exactly the plain text's lines (a change gzip's CRC-32 does
//      not cover: the time stamp, the OS byte; a cut between members, which gunzip cannot see
//      either, gives the text of the members kept).
// A shorter or different text without an error is a finding, as is any other exception, a crash,
// a sanitizer report or a hang.
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "src/core/errors.h"
#include "src/core/text_parsing.h"

namespace {

using espgrid::LineSource;

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "\nespgrid fuzz finding: %s\n", what.c_str());
  std::abort();  // libFuzzer saves the input as a crash
}

struct Outcome {
  std::vector<std::string> lines;
  std::string error;
  bool operator==(const Outcome& o) const { return lines == o.lines && error == o.error; }
};

Outcome read(const std::string& bytes, std::size_t chunk, LineSource::Decompress decompress) {
  Outcome out;
  try {
    LineSource source("fuzz", bytes, chunk, decompress);
    while (const auto line = source.next()) out.lines.emplace_back(*line);
  } catch (const espgrid::InputError& e) {
    if (e.file() != "fuzz") finding("InputError names file '" + e.file() + "'");
    out.error = e.what();
  }
  return out;
}

/// Reads `bytes` as gzip at once and in pieces; the two must agree.
Outcome read_gzip(const std::string& bytes, std::size_t chunk) {
  const Outcome whole = read(bytes, 0, LineSource::Decompress::Gzip);
  const Outcome pieces = read(bytes, chunk, LineSource::Decompress::Gzip);
  if (!(whole == pieces))
    finding("gzip read in " + std::to_string(chunk) + "-byte pieces differs from at once: '" + pieces.error + "' vs '" +
            whole.error + "', " + std::to_string(pieces.lines.size()) + " vs " + std::to_string(whole.lines.size()) +
            " lines");
  return whole;
}

std::string gzip_member(const std::string& text, int level) {
  z_stream z{};
  if (deflateInit2(&z, level, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) finding("deflateInit2");
  std::string out(deflateBound(&z, static_cast<uLong>(text.size())) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) finding("deflate did not finish");
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::size_t chunk = 1 + (size == 0 ? 0 : data[size / 2] % 64);
  constexpr std::size_t kHeader = 5;
  const int mode = size == 0 ? 0 : data[0] % 4;
  if (mode == 0 || size < kHeader) {
    read_gzip(std::string(reinterpret_cast<const char*>(data), size), chunk);
    return 0;
  }
  const std::string text(reinterpret_cast<const char*>(data) + kHeader, size - kHeader);
  const Outcome plain = read(text, 0, LineSource::Decompress::None);
  // The members: 1 to 4 parts of the text, cut where the header's bytes say.
  const std::size_t parts = 1 + data[1] % 4;
  std::vector<std::size_t> cuts = {0, text.size()};
  for (std::size_t p = 1; p < parts; ++p) cuts.push_back(text.size() * data[1 + p] / 256);
  std::sort(cuts.begin(), cuts.end());
  std::string file;
  std::vector<std::size_t> boundaries = {0};  // where each member starts, and the end
  for (std::size_t p = 0; p + 1 < cuts.size(); ++p) {
    file += gzip_member(text.substr(cuts[p], cuts[p + 1] - cuts[p]), (data[2] + static_cast<int>(p)) % 10);
    boundaries.push_back(file.size());
  }
  if (mode == 1) {
    const Outcome got = read_gzip(file, chunk);
    if (!(got == plain))
      finding(std::to_string(parts) + " members read as '" + got.error + "' (" + std::to_string(got.lines.size()) +
              " lines), the plain text as '" + plain.error + "' (" + std::to_string(plain.lines.size()) + " lines)");
    return 0;
  }
  if (mode == 2) {
    // 1 to 16 bytes of the input as the garbage, never past its end (size >= kHeader here).
    std::string garbage(reinterpret_cast<const char*>(data) + 1, std::min<std::size_t>(1 + data[3] % 16, size - 1));
    if (static_cast<unsigned char>(garbage[0]) == 0x1f) garbage[0] = 'x';
    const Outcome got = read_gzip(file + garbage, chunk);
    const bool named = got.error.find("not gzip data") != std::string::npos;
    if (got.error.empty() || (plain.error.empty() ? !named : got.error != plain.error))
      finding("trailing garbage read as '" + got.error + "' (" + std::to_string(got.lines.size()) +
              " lines); the plain text gives '" + plain.error + "'");
    return 0;
  }
  const std::size_t at = (std::size_t{data[3]} << 8 | data[4]) % file.size();
  std::string damaged = file;
  Outcome expected = plain;  // what an undetectable change leaves
  if (data[2] & 1) {
    damaged.resize(at);
    if (std::find(boundaries.begin(), boundaries.end(), at) != boundaries.end()) {
      const std::size_t member =
          static_cast<std::size_t>(std::find(boundaries.begin(), boundaries.end(), at) - boundaries.begin());
      expected = read(text.substr(0, cuts[member]), 0, LineSource::Decompress::None);
    } else {
      expected.lines.clear(), expected.error = "an InputError";
    }
  } else {
    damaged[at] = static_cast<char>(damaged[at] ^ (data[2] | 1));
  }
  const Outcome got = read_gzip(damaged, chunk);
  if (got.error.empty() && !(got == expected))
    finding("a damaged gzip file read without an error as " + std::to_string(got.lines.size()) +
            " lines, where the text has " + std::to_string(plain.lines.size()) + " (byte " + std::to_string(at) +
            " of " + std::to_string(file.size()) + (data[2] & 1 ? ", cut there)" : ", changed)"));
  return 0;
}
