#include "src/apbs/apbs_tokens.h"

#include <cctype>

#include "src/apbs/apbs_input.h"

namespace espgrid::apbs {
namespace {

bool is_comment_start(char c) noexcept { return c == '#' || c == '%'; }

}  // namespace

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

TokenStream::TokenStream(std::string_view text, std::string file, std::string_view whitespace)
    : text_(text), file_(std::move(file)), whitespace_(whitespace) {}

std::optional<Token> TokenStream::next() {
  // Skip whitespace and comments, counting lines.
  while (position_ < text_.size()) {
    const char c = text_[position_];
    if (c == '\0') throw ApbsInputError(file_, line_, "a NUL byte: this is not a text file");
    if (c == '\n') ++line_;
    if (is_whitespace(c)) {
      ++position_;
    } else if (is_comment_start(c)) {
      while (position_ < text_.size() && text_[position_] != '\n') {
        if (text_[position_] == '\0') throw ApbsInputError(file_, line_, "a NUL byte: this is not a text file");
        ++position_;
      }
    } else {
      break;
    }
  }
  if (position_ >= text_.size()) return std::nullopt;
  const std::size_t start = position_;
  while (position_ < text_.size() && !is_whitespace(text_[position_]) && !is_comment_start(text_[position_])) {
    if (text_[position_] == '\0') throw ApbsInputError(file_, line_, "a NUL byte: this is not a text file");
    ++position_;
  }
  if (position_ - start > kMaxTokenChars)
    throw ApbsInputError(file_, line_,
                         "a word of " + std::to_string(position_ - start) + " characters (at most " +
                             std::to_string(kMaxTokenChars) + "): not text APBS reads");
  return Token{std::string(text_.substr(start, position_ - start)), line_};
}

Token TokenStream::expect(std::string_view what, std::size_t line) {
  std::optional<Token> token = next();
  if (!token)
    throw ApbsInputError(file_, line, "the file ends while reading " + std::string(what) + " (begun on this line)");
  return *token;
}

Token TokenStream::path(std::string_view what, std::size_t line) {
  Token first = expect(what, line);
  if (first.text.front() != '"') return first;
  if (first.text.size() >= 2 && first.text.back() == '"') {
    first.text = first.text.substr(1, first.text.size() - 2);
  } else {
    // APBS joins the words of a quoted name with single spaces until one ends with '"'.
    std::string joined = first.text;
    for (;;) {
      std::optional<Token> more = next();
      if (!more) throw ApbsInputError(file_, first.line, "the quoted " + std::string(what) + " has no closing '\"'");
      joined += ' ';
      joined += more->text;
      if (more->text.back() == '"') break;
      if (joined.size() > kMaxTokenChars)
        throw ApbsInputError(file_, first.line, "the quoted " + std::string(what) + " is too long");
    }
    first.text = joined.substr(1, joined.size() - 2);
  }
  if (first.text.empty()) throw ApbsInputError(file_, first.line, "an empty " + std::string(what));
  return first;
}

}  // namespace espgrid::apbs
