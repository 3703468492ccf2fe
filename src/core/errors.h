// Error types shared by the whole code base. The CLI prints what() and exits non-zero;
// no error path shows a stack trace or an exception type to the user.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace espgrid {

/// What a GPU entry point says in a build without CUDA (kernels/*_unavailable.cpp).
inline constexpr const char* kBuiltWithoutCuda =
    "this espgrid was built without CUDA (no nvcc found, or ESPGRID_CUDA=OFF)";

/// Any failure espgrid reports to its user.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A defect in an input file: what() reads "FILE:LINE: what is wrong", or "FILE: what is
/// wrong" for a binary file, which has no lines (line 0; the message names the byte or field).
class InputError : public Error {
 public:
  InputError(const std::string& file, std::size_t line, const std::string& what)
      : Error(message(file, line, what)), file_(file), line_(line) {}
  const std::string& file() const noexcept { return file_; }
  /// 1-based line number of the defect, or 0 in a binary file (.mrc, a .vti's data). For a
  /// defect of a whole text file it is 1 for an empty file and the last line for a file that
  /// ends without atoms.
  std::size_t line() const noexcept { return line_; }

 private:
  static std::string message(const std::string& file, std::size_t line, const std::string& what) {
    std::string text = file;
    if (line) {
      text += ':';
      text += std::to_string(line);
    }
    text += ": ";
    text += what;
    return text;
  }
  std::string file_;
  std::size_t line_;
};

/// A bad command-line value or an impossible request (grid too large, unknown kernel...).
class UsageError : public Error {
 public:
  using Error::Error;
};

}  // namespace espgrid
