// The structure of a DCD trajectory (CHARMM, NAMD, X-PLOR, and MDAnalysis's writer), checked
// before its frames are averaged (python/espgrid/trajectory.py). MDAnalysis counts a DCD's
// frames from the file's size and ignores the count in its header, so a trajectory cut short
// by a full disk or an interrupted copy was averaged over the frames that were left, with exit
// 0. Like a read error part-way through a structure file, a trajectory shorter than
// its header, or one that ends inside a frame, is an error here.
#pragma once

#include <cstdint>
#include <string>

namespace espgrid {

/// What a DCD's header and records say.
struct DcdSummary {
  std::int64_t atoms = 0;          ///< NATOM
  std::int64_t fixed_atoms = 0;    ///< NAMNF: atoms stored in the first frame only
  std::int64_t header_frames = 0;  ///< NSET: the frames the header announces (0: not filled in)
  std::int64_t frames = 0;         ///< complete frames in the file, every record checked
  bool unit_cell = false;          ///< each frame starts with a unit-cell record (CHARMM)
  bool four_dims = false;          ///< each frame has a fourth coordinate record
  bool big_endian = false;
  bool wide_markers = false;  ///< 64-bit record markers
};

/// Reads the header of the DCD at `path` and walks every frame's Fortran records, checking
/// each record's length markers against the header and the file's size. Throws InputError
/// "PATH: what is wrong" (line 0) when the file is empty or is not a DCD, holds no frame, ends
/// part-way through a frame, holds fewer frames than its header announces (NSET; a header of 0
/// frames announces none), or has a damaged record; Error when it cannot be read.
DcdSummary check_dcd(const std::string& path);
/// The same for bytes in memory (tests and the fuzzer); `name` stands for the file.
DcdSummary check_dcd_bytes(const std::string& name, std::string bytes);

}  // namespace espgrid
