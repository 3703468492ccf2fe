// The OpenDX files the APBS front end writes, in the layout APBS 3.4.1 writes them
// (src/mg/vgrid.c Vgrid_writeDX, Vgrid_writeGZ): four comment lines with the map's title
// ("POTENTIAL (kT/e)", ...), the gridpositions object with "%12.6e" origin and deltas, the
// values z fastest three a line, the field trailer. Values carry nine significant digits
// (every float reads back exactly) where APBS prints seven. `gz` writes the same text gzip
// compressed, as APBS built with zlib does.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "src/core/grid.h"

namespace espgrid::apbs {

/// A block of a grid's nodes: [first, first + count) along each axis (a partition's file).
struct NodeBlock {
  std::array<std::int64_t, 3> first{};
  std::array<std::int64_t, 3> count{};
};

/// Writes the nodes of `block` of `values` (on `grid`, x fastest) to `path` as APBS's DX, or
/// gzip-compressed DX when `gzip`. `title` is the map's APBS title, `origin_line` espgrid's
/// note on where the map came from (a comment line). Throws Error when writing fails, or when
/// gzip is asked of a build without zlib. `threads` format the text (0: all cores; the run's --threads).
void write_apbs_dx(const std::string& path, const GridSpec& grid, const std::vector<float>& values,
                   const NodeBlock& block, const std::string& title, const std::string& origin_line, bool gzip,
                   int threads = 0);

/// Every node of `grid`.
NodeBlock whole_grid(const GridSpec& grid);

}  // namespace espgrid::apbs
