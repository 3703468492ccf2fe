// The environment switches that turn a default behaviour off, for measuring what it saves or for
// working around it: ESPGRID_PB_PIPELINE, ESPGRID_PB_POOL, ESPGRID_PB_GRAPH, ESPGRID_PB_COARSEST_KERNEL,
// ESPGRID_PB_FLOAT_CYCLE, ESPGRID_BOUNDARY_PINNED, ESPGRID_BOUNDARY_ORDERED_FREE, ESPGRID_HUGE_PAGES (where
// each is read says what it turns off). One reading of their values for all of them; header-only, since nvcc's kernels
// read them too.
#pragma once

#include <cstdlib>
#include <string_view>

namespace espgrid {

/// Whether environment variable `name` is set to 0, off or no.
inline bool switched_off(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return false;
  const std::string_view s(v);
  return s == "0" || s == "off" || s == "no";
}

}  // namespace espgrid
