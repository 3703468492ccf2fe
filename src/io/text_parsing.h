// Small strict text helpers for the readers: whitespace splitting
// and a line source that numbers lines and rejects binary data.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/core/number_parsing.h"

namespace espgrid {

/// Splits on spaces, tabs, CR, VT and FF.
std::vector<std::string_view> split_whitespace(std::string_view line);

/// The text of a file split into lines (LF, CRLF or bare CR), numbered from 1.
class TextLines {
 public:
  /// Reads the whole file; throws Error when it cannot be opened or read, and InputError
  /// naming the line when it holds binary data (control bytes other than tab/CR/LF).
  explicit TextLines(std::string path);
  /// Wraps text already in memory (used by tests and fuzzers); `path` is used in messages.
  TextLines(std::string path, std::string text);
  // The lines are views into text_: a copy or move would leave them pointing elsewhere.
  TextLines(const TextLines&) = delete;
  TextLines& operator=(const TextLines&) = delete;

  const std::string& path() const noexcept { return path_; }
  std::size_t count() const noexcept { return lines_.size(); }
  /// Line `number` (1-based) without its line terminator.
  std::string_view line(std::size_t number) const { return lines_.at(number - 1); }
  bool empty() const noexcept { return text_.empty(); }

 private:
  void split_and_check();
  std::string path_;
  std::string text_;
  std::vector<std::string_view> lines_;
};

/// Quoted form of a token for error messages, shortened to 40 characters.
std::string quoted(std::string_view token);

}  // namespace espgrid
