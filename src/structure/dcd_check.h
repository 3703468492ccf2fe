// The structure of a DCD trajectory (CHARMM, NAMD, X-PLOR, and MDAnalysis's writer), checked
// before its frames are averaged (python/espgrid/trajectory.py). The frames are counted from the
// file's size, record by record, as VMD and MDAnalysis count them: real writers leave the header's
// frame count (NSET) stale (CHARMM fills it in at the end of a run, an interrupted run or a
// trajectory cut to length keeps the old count), so a file that ends on a frame boundary is whole
// and a header that disagrees gets a note. Only a file that ends inside a frame is truncated (a
// full disk, an interrupted copy), and a damaged record marker is damage: both are errors.
#pragma once

#include <cstdint>
#include <string>

namespace espgrid {

/// What a DCD's header and records say.
struct DcdSummary {
  std::int64_t atoms = 0;          ///< NATOM
  std::int64_t fixed_atoms = 0;    ///< NAMNF: atoms stored in the first frame only
  std::int64_t header_frames = 0;  ///< NSET: the frames the header announces (0: not filled in)
  std::int64_t frames = 0;         ///< complete frames in the file, every record checked: the count
  bool unit_cell = false;          ///< each frame starts with a unit-cell record (CHARMM)
  bool four_dims = false;          ///< each frame has a fourth coordinate record
  bool big_endian = false;
  bool wide_markers = false;  ///< 64-bit record markers
};

/// Reads the header of the DCD at `path` and walks every frame's Fortran records, checking
/// each record's length markers against the header and the file's size. Throws InputError
/// "PATH: what is wrong" (line 0) when the file is empty or is not a DCD, holds no frame, ends
/// part-way through a frame, or has a damaged record; Error when it cannot be read. A header
/// whose frame count differs from the frames the file holds is not an error (frame_count_note).
DcdSummary check_dcd(const std::string& path);
/// The same for bytes in memory (tests and the fuzzer); `name` stands for the file.
DcdSummary check_dcd_bytes(const std::string& name, std::string bytes);

/// A note for the user when the header's frame count (NSET) differs from the whole frames the
/// file holds: "its header announces 500 frames, but the file holds 98 whole frames: all 98 are
/// read, as VMD and MDAnalysis read them"; empty when they agree.
std::string frame_count_note(const DcdSummary& summary);

}  // namespace espgrid
