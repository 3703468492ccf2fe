// APBS's input tokens, split as APBS 3.4.1 splits them (maloc's Vio with NOsh's settings):
// whitespace is any of " =,;\t\r\n" (so `dime 65,65,65` and `pdie=2` read as APBS reads them),
// '#' and '%' start a comment to the end of the line, also in the middle of a word (the word
// ends there), and a path that starts with '"' runs to the next word ending in '"', its words
// joined by one space. Every token carries its line for messages.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace espgrid::apbs {

struct Token {
  std::string text;
  std::size_t line = 0;  ///< 1-based line of its first character
};

/// NOsh's whitespace (input files, flat parameter files) and APBS's molecule readers' (valist.c).
inline constexpr std::string_view kNoshWhitespace = " =,;\t\r\n";
inline constexpr std::string_view kMoleculeWhitespace = " \t\r\n";

class TokenStream {
 public:
  /// `file` names the input in messages; `whitespace` separates tokens.
  TokenStream(std::string_view text, std::string file, std::string_view whitespace = kNoshWhitespace);

  /// The next token, or nullopt at the end of the text. Throws ApbsInputError for a NUL byte
  /// (not a text file) or a token longer than kMaxTokenChars.
  std::optional<Token> next();
  /// The next token; at the end of the text throws "FILE:LINE: ran out of input while reading
  /// `what`" naming `line` (where the construct being read started).
  Token expect(std::string_view what, std::size_t line);
  /// A path: the next token, or APBS's quoted form "a b" (words joined by one space).
  Token path(std::string_view what, std::size_t line);

  const std::string& file() const noexcept { return file_; }
  /// The line of the last token read (the last line of the text before any token).
  std::size_t line() const noexcept { return line_; }

  /// Longest token accepted: APBS's own buffers hold 1024-character arguments; longer words
  /// are file-name mistakes or binary data, not input.
  static constexpr std::size_t kMaxTokenChars = 4096;

 private:
  bool is_whitespace(char c) const noexcept { return whitespace_.find(c) != std::string_view::npos; }

  std::string_view text_;
  std::string file_;
  std::string_view whitespace_;
  std::size_t position_ = 0;
  std::size_t line_ = 1;
};

/// Lower-case ASCII copy, for APBS's case-insensitive keywords.
std::string lower(std::string_view text);

}  // namespace espgrid::apbs
