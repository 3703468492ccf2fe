// Four floats as one vector register, for the plane writers' passes over a map (min, max, sums):
// GCC and Clang lower these to SSE on x86-64 and NEON on ARM; plain loops over float lanes were
// left scalar by the compiler (the additions may not be reordered without -ffast-math).
#pragma once

#include <cstring>

namespace espgrid {

using Float4 = float __attribute__((vector_size(16)));

inline Float4 load4(const float* p) {
  Float4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace espgrid
