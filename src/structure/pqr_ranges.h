// Reading a large PQR file on several threads at once, each a byte range of its own. Only files
// of atom records and records that carry no atoms (REMARK, TER, END...) take this way: anything
// else (MODEL, ENDMDL, an unknown record, a defect at some line, binary data) sends the caller
// back to read_pqr, whose messages and rules (the first defect in file order, models) are the
// definition. Same atoms, labels and order as read_pqr gives.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "src/core/atoms.h"
#include "src/core/text_parsing.h"
#include "src/structure/structure_reader.h"

namespace espgrid {

/// The structure of the regular, uncompressed PQR file `path`, read in ranges on up to
/// `threads` threads, 128 KiB or more each; nullopt when it is smaller than two of those, or when a range
/// holds anything but atom records and records without atoms (read it with read_pqr then).
std::optional<Structure> read_pqr_in_ranges(const std::string& path, int threads);

/// One range's atom records, in order, into `atoms` and `labels`; false, with nothing more read,
/// at the first line that is not an atom record, a blank line, a comment or a record without
/// atoms, or that read_pqr would refuse (pqr_reader.cpp).
bool read_plain_pqr_atoms(LineSource& lines, Atoms& atoms, std::vector<AtomLabel>& labels);

}  // namespace espgrid
