// libFuzzer target for the structure readers: the input is the text of a file, read with
// espgrid::read_pqr (ESPGRID_FUZZ_PQR) or espgrid::read_xyz (ESPGRID_FUZZ_XYZ) through
// LineSource("fuzz", text). The only accepted failure is espgrid::InputError; any other
// exception, a crash, an ASan/UBSan report or a hang is a finding. On success every value
// must be finite and within the limits documented in src/structure/structure_reader.h.
//
// The streaming invariant: the same text handed to the line splitter in small pieces (1 to 16
// bytes, chosen from the input, so that lines, CRLF pairs and the byte-order mark cross the
// reads) must give exactly the same atoms, or an InputError with the same message.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "src/core/errors.h"
#include "src/core/text_parsing.h"
#include "src/structure/structure_reader.h"

namespace {

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "\nespgrid fuzz finding: %s\n", what.c_str());
  std::abort();  // libFuzzer saves the input as a crash
}

void check_structure(const espgrid::Structure& s, std::size_t line_count) {
  const espgrid::Atoms& a = s.atoms;
  if (a.empty()) finding("a reader returned no atoms without an InputError");
  const std::size_t n = a.size();
  if (a.y.size() != n || a.z.size() != n || a.charge.size() != n || a.radius.size() != n)
    finding("atom arrays of different lengths");
  // Every atom comes from its own line: more atoms than lines means a line was read twice.
  if (n > line_count) finding("more atoms than lines");
  for (std::size_t i = 0; i < n; ++i) {
    for (const double c : {a.x[i], a.y[i], a.z[i]})
      if (!std::isfinite(c) || std::fabs(c) > espgrid::kMaxCoordinate)
        finding("atom " + std::to_string(i) + ": coordinate " + std::to_string(c) +
                " not finite or beyond kMaxCoordinate");
    if (!std::isfinite(a.charge[i]) || std::fabs(a.charge[i]) > espgrid::kMaxCharge)
      finding("atom " + std::to_string(i) + ": charge " + std::to_string(a.charge[i]) +
              " not finite or beyond kMaxCharge");
    if (!std::isfinite(a.radius[i]) || a.radius[i] < 0 || a.radius[i] > espgrid::kMaxRadius)
      finding("atom " + std::to_string(i) + ": radius " + std::to_string(a.radius[i]) +
              " not finite or out of [0, kMaxRadius]");
  }
  if (!std::isfinite(a.total_charge())) finding("total charge not finite");
}

void check_error(const espgrid::InputError& e, std::size_t line_count) {
  const std::string what = e.what();
  if (e.file() != "fuzz") finding("InputError names file '" + e.file() + "'");
  if (what.rfind("fuzz:", 0) != 0) finding("InputError message does not start with 'fuzz:': " + what);
  // The line is 1-based and names a line of the file (1 for an empty file).
  if (e.line() < 1 || e.line() > std::max<std::size_t>(line_count, 1))
    finding("InputError line " + std::to_string(e.line()) + " outside 1.." + std::to_string(line_count) + ": " + what);
}

/// What one read of the text gave: the atoms' values in order, or the InputError's message.
struct Outcome {
  std::vector<double> values;
  std::string error;
  bool operator==(const Outcome& o) const {
    // Bitwise: the two reads parse the same tokens, so even the last bit must agree.
    return error == o.error && values.size() == o.values.size() &&
           (values.empty() ||  // memcmp must not see the null data() of an empty vector
            std::memcmp(values.data(), o.values.data(), values.size() * sizeof(double)) == 0);
  }
};

Outcome read_text(const std::string& text, std::size_t chunk_bytes, std::size_t line_count) {
  Outcome out;
  try {
    espgrid::LineSource lines("fuzz", text, chunk_bytes);
#if defined(ESPGRID_FUZZ_PQR)
    const espgrid::Structure s = espgrid::read_pqr(lines);
#elif defined(ESPGRID_FUZZ_XYZ)
    const espgrid::Structure s = espgrid::read_xyz(lines);
#else
#error "define ESPGRID_FUZZ_PQR or ESPGRID_FUZZ_XYZ"
#endif
    if (lines.line_number() > line_count) finding("LineSource made more lines than the text has line ends + 1");
    check_structure(s, line_count);
    const espgrid::Atoms& a = s.atoms;
    for (std::size_t i = 0; i < a.size(); ++i)
      for (const double v : {a.x[i], a.y[i], a.z[i], a.charge[i], a.radius[i]}) out.values.push_back(v);
  } catch (const espgrid::InputError& e) {
    check_error(e, line_count);
    out.error = e.what();
  }
  // Anything else (espgrid::Error that is not an InputError, std::exception, ...) escapes:
  // libFuzzer reports the uncaught exception as a crash.
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // An upper bound on the lines, independent of LineSource (which may refuse the text).
  std::size_t line_count = 1;
  for (const char c : text) line_count += (c == '\n' || c == '\r') ? 1 : 0;
  const Outcome whole = read_text(text, 0, line_count);
  const std::size_t chunk = 1 + (size == 0 ? 0 : data[size / 2] % 16);
  const Outcome pieces = read_text(text, chunk, line_count);
  if (!(whole == pieces))
    finding("reading in " + std::to_string(chunk) + "-byte pieces differs from reading at once: '" + pieces.error +
            "' vs '" + whole.error + "', " + std::to_string(pieces.values.size()) + " vs " +
            std::to_string(whole.values.size()) + " values");
  return 0;
}
