#include "src/io/text_parsing.h"

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "src/core/errors.h"

namespace espgrid {

std::vector<std::string_view> split_whitespace(std::string_view line) {
  std::vector<std::string_view> tokens;
  constexpr std::string_view kSpace = " \t\r\v\f";
  std::size_t pos = 0;
  while (true) {
    pos = line.find_first_not_of(kSpace, pos);
    if (pos == std::string_view::npos) break;
    std::size_t end = line.find_first_of(kSpace, pos);
    if (end == std::string_view::npos) end = line.size();
    tokens.push_back(line.substr(pos, end - pos));
    pos = end;
  }
  return tokens;
}

std::string quoted(std::string_view token) {
  std::string out = "'";
  if (token.size() > 40) {
    out.append(token.substr(0, 37));
    out += "...";
  } else {
    out.append(token);
  }
  return out + "'";
}

TextLines::TextLines(std::string path) : path_(std::move(path)) {
  std::ifstream in(path_, std::ios::binary);
  if (!in) throw Error("cannot open " + path_ + ": " + std::strerror(errno));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw Error("cannot read " + path_ + ": " + std::strerror(errno));
  text_ = std::move(buffer).str();
  split_and_check();
}

TextLines::TextLines(std::string path, std::string text) : path_(std::move(path)), text_(std::move(text)) {
  split_and_check();
}

void TextLines::split_and_check() {
  // Lines end at LF, CRLF or a bare CR (old Mac files): a bare CR must never join two
  // records into one line, where reading fields from the right would silently drop atoms.
  std::string_view all(text_);
  std::size_t start = 0;
  while (start < all.size()) {
    const std::size_t end = all.find_first_of("\r\n", start);
    std::string_view line = all.substr(start, end == std::string_view::npos ? end : end - start);
    for (std::size_t col = 0; col < line.size(); ++col) {
      const auto byte = static_cast<unsigned char>(line[col]);
      if ((byte < 0x20 && byte != '\t' && byte != '\v' && byte != '\f') || byte == 0x7f) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", byte);
        throw InputError(path_, lines_.size() + 1,
                         "binary data (byte " + std::string(hex) + " at column " + std::to_string(col + 1) +
                             "); is this a text structure file?");
      }
    }
    lines_.push_back(line);
    if (end == std::string_view::npos) break;
    start = end + ((all[end] == '\r' && end + 1 < all.size() && all[end + 1] == '\n') ? 2 : 1);
  }
}

}  // namespace espgrid
