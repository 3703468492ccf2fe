// libFuzzer target for the DCD structure check: the input is a DCD file, checked with
// espgrid::check_dcd_bytes("fuzz", ...) as espgrid-trajectory checks every DCD before MDAnalysis
// reads it. Accepted: a summary, or an espgrid::InputError naming "fuzz" (a binary file: line
// 0). Any other exception, a crash, an ASan/UBSan report or a hang is a finding, and so is a
// summary that contradicts the file: no frames, more fixed atoms than atoms, more frames than the
// file's bytes can hold, or a header count that differs from the frames without a note.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "src/core/errors.h"
#include "src/structure/dcd_check.h"

namespace {

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "\nespgrid fuzz finding: %s\n", what.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    const espgrid::DcdSummary s = espgrid::check_dcd_bytes("fuzz", bytes);
    if (s.frames < 1) finding("a DCD without frames passed");
    if (espgrid::frame_count_note(s).empty() != (s.header_frames == s.frames))
      finding("a header count that differs from the frames held without a note, or a note without a difference");
    if (s.atoms < 1 || s.fixed_atoms < 0 || s.fixed_atoms >= s.atoms) finding("impossible atom counts passed");
    // Every frame holds at least three coordinate records of 4 bytes per free atom and their
    // markers; the first frame holds every atom.
    const std::uint64_t marker = s.wide_markers ? 8 : 4;
    const std::uint64_t later = 3 * (4 * static_cast<std::uint64_t>(s.atoms - s.fixed_atoms) + 2 * marker);
    const std::uint64_t first = 3 * (4 * static_cast<std::uint64_t>(s.atoms) + 2 * marker);
    if (first + later * static_cast<std::uint64_t>(s.frames - 1) > size)
      finding("more frames than the file's bytes can hold");
  } catch (const espgrid::InputError& e) {
    if (e.file() != "fuzz" || e.line() != 0) finding(std::string("InputError of the wrong form: ") + e.what());
  }
  return 0;
}
