// libFuzzer target for the points reader of `espgrid sample` (src/structure/point_file.h): the
// input is the text of a points file, read through LineSource("fuzz", text) at once and in pieces
// of 1 to 16 bytes (chosen from the input). Accepted: a PointList, or espgrid::InputError naming
// "fuzz" at a line of the file. A finding: a point that is not finite or beyond ±1e6 Å, point
// lines that are not increasing or lie outside the file, the two reads differing in any bit or
// message, and the points written back as "x y z" lines (shortest round-trip text) not reading
// back as the same points, bit for bit; any other exception, a crash, a sanitizer report, a hang.
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "src/core/errors.h"
#include "src/core/text_parsing.h"
#include "src/structure/point_file.h"
#include "src/structure/structure_reader.h"

namespace {

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "\nespgrid fuzz finding: %s\n", what.c_str());
  std::abort();  // libFuzzer saves the input as a crash
}

/// What one read gave: the points' coordinates and lines, or the InputError's message.
struct Outcome {
  std::vector<double> xyz;
  std::vector<std::size_t> lines;
  std::string error;
  bool operator==(const Outcome& o) const {
    return error == o.error && lines == o.lines && xyz.size() == o.xyz.size() &&
           (xyz.empty() || std::memcmp(xyz.data(), o.xyz.data(), xyz.size() * sizeof(double)) == 0);
  }
};

Outcome read_text(const std::string& text, std::size_t chunk_bytes, std::size_t line_count) {
  Outcome out;
  try {
    espgrid::LineSource source("fuzz", text, chunk_bytes);
    const espgrid::PointList points = espgrid::read_points(source);
    if (points.size() == 0) finding("no points without an InputError");
    if (points.xyz.size() != 3 * points.size()) finding("coordinates and lines of different counts");
    for (std::size_t i = 0; i < points.size(); ++i) {
      if (points.lines[i] < 1 || points.lines[i] > line_count || (i > 0 && points.lines[i] <= points.lines[i - 1]))
        finding("point " + std::to_string(i) + " from line " + std::to_string(points.lines[i]) +
                ": not increasing or outside 1.." + std::to_string(line_count));
      for (std::size_t a = 0; a < 3; ++a) {
        const double c = points.xyz[3 * i + a];
        if (!std::isfinite(c) || std::fabs(c) > espgrid::kMaxCoordinate)
          finding("point " + std::to_string(i) + ": coordinate not finite or beyond kMaxCoordinate");
      }
    }
    out.xyz = points.xyz;
    out.lines = points.lines;
  } catch (const espgrid::InputError& e) {
    if (e.file() != "fuzz") finding("InputError names file '" + e.file() + "'");
    if (e.line() > std::max<std::size_t>(line_count, 1))
      finding("InputError line " + std::to_string(e.line()) + " beyond the file's " + std::to_string(line_count));
    out.error = e.what();
  }
  return out;
}

/// The points as "x y z" lines in the shortest text that reads back exactly.
std::string written_back(const std::vector<double>& xyz) {
  std::string text;
  char buffer[32];
  for (std::size_t i = 0; i < xyz.size(); ++i) {
    const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, xyz[i]);
    text.append(buffer, end);
    text += i % 3 == 2 ? '\n' : ' ';
  }
  return text;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::size_t line_count = 1;
  for (const char c : text) line_count += (c == '\n' || c == '\r') ? 1 : 0;
  const Outcome whole = read_text(text, 0, line_count);
  const std::size_t chunk = 1 + (size == 0 ? 0 : data[size / 2] % 16);
  const Outcome pieces = read_text(text, chunk, line_count);
  if (!(whole == pieces))
    finding("reading in " + std::to_string(chunk) + "-byte pieces differs from reading at once: '" + pieces.error +
            "' vs '" + whole.error + "'");
  if (whole.error.empty()) {
    const std::string back = written_back(whole.xyz);
    const Outcome again = read_text(back, 0, whole.xyz.size() / 3 + 1);
    if (!again.error.empty() || again.xyz.size() != whole.xyz.size() ||
        std::memcmp(again.xyz.data(), whole.xyz.data(), whole.xyz.size() * sizeof(double)) != 0)
      finding("the points written back read differently: " + again.error);
  }
  return 0;
}
