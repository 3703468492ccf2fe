// Small text helpers shared by the tests that run the espgrid binary and read its files.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace espgrid::testing {

#ifdef ESPGRID_SOURCE_DIR
/// The source tree (tests/CMakeLists.txt defines ESPGRID_SOURCE_DIR for every test).
inline const std::filesystem::path kSource = ESPGRID_SOURCE_DIR;
#endif

/// The whole file as a string ("" when it cannot be read).
inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace espgrid::testing
