#include "src/core/json.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "src/core/text_format.h"

namespace espgrid {

Json Json::object() {
  Json j;
  j.kind_ = Kind::Object;
  return j;
}

Json Json::array(std::vector<Json> items) {
  Json j;
  j.kind_ = Kind::Array;
  j.items_ = std::move(items);
  return j;
}

Json& Json::set(const std::string& key, Json value) {
  kind_ = Kind::Object;
  for (auto& [name, member] : members_)
    if (name == key) {
      member = std::move(value);
      return *this;
    }
  members_.emplace_back(key, std::move(value));
  return *this;
}

Json& Json::push(Json value) {
  kind_ = Kind::Array;
  items_.push_back(std::move(value));
  return *this;
}

namespace {

/// Length of the well-formed UTF-8 sequence at the start of `text` (1 to 4), or 0 when it is
/// not one (a stray continuation byte, an overlong form, a surrogate, beyond U+10FFFF).
std::size_t utf8_sequence_length(std::string_view text) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const auto continuation = [&](std::size_t i) { return i < text.size() && (byte(i) & 0xC0) == 0x80; };
  const unsigned char b0 = byte(0);
  if (b0 < 0x80) return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF) return continuation(1) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    if (!continuation(1) || !continuation(2)) return 0;
    if ((b0 == 0xE0 && byte(1) < 0xA0) || (b0 == 0xED && byte(1) >= 0xA0)) return 0;  // overlong, surrogate
    return 3;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    if (!continuation(1) || !continuation(2) || !continuation(3)) return 0;
    if ((b0 == 0xF0 && byte(1) < 0x90) || (b0 == 0xF4 && byte(1) >= 0x90)) return 0;  // overlong, > U+10FFFF
    return 4;
  }
  return 0;
}

}  // namespace

std::string json_quoted(std::string_view text, Malformed malformed) {
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x80) {  // JSON is UTF-8: a malformed byte becomes U+FFFD, not an unreadable document
      const std::size_t length = utf8_sequence_length(text.substr(i));
      if (length == 0) {
        if (malformed == Malformed::Keep)
          out += c;
        else
          out += "\\ufffd";
      } else {
        out.append(text, i, length);
        i += length - 1;
      }
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (u < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", u);
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string Json::dump(int indent, Malformed malformed) const {
  std::string out;
  write(out, indent, 0, malformed);
  if (indent > 0) out += '\n';
  return out;
}

void Json::write(std::string& out, int indent, int depth, Malformed malformed) const {
  const auto newline = [&](int level) {
    if (indent <= 0) return;
    out += '\n';
    out.append(static_cast<std::size_t>(indent * level), ' ');
  };
  switch (kind_) {
    case Kind::Null:
      out += "null";
      return;
    case Kind::Bool:
      out += bool_ ? "true" : "false";
      return;
    case Kind::Integer:
      out += std::to_string(integer_);
      return;
    case Kind::Number:
      if (!std::isfinite(number_)) {
        out += "null";
      } else if (single_) {
        char text[32];
        out.append(text, std::to_chars(text, text + sizeof text, static_cast<float>(number_)).ptr);
      } else {
        out += shortest_text(number_);
      }
      return;
    case Kind::String:
      out += json_quoted(text_, malformed);
      return;
    case Kind::Array: {
      // Arrays of scalars that fit a line (a triple, a range, a short command) stay on one.
      bool flat = true;
      for (const Json& item : items_) flat = flat && item.kind_ != Kind::Array && item.kind_ != Kind::Object;
      if (flat && indent > 0) {
        std::string line;
        write(line, 0, 0, malformed);
        flat = line.size() <= 100;
      }
      out += '[';
      for (std::size_t i = 0; i < items_.size(); ++i) {
        if (i) out += flat || indent <= 0 ? ", " : ",";
        if (!flat) newline(depth + 1);
        items_[i].write(out, indent, depth + 1, malformed);
      }
      if (!flat && !items_.empty()) newline(depth);
      out += ']';
      return;
    }
    case Kind::Object: {
      out += '{';
      for (std::size_t i = 0; i < members_.size(); ++i) {
        if (i) out += indent <= 0 ? ", " : ",";
        newline(depth + 1);
        out += json_quoted(members_[i].first, malformed);
        out += ": ";
        members_[i].second.write(out, indent, depth + 1, malformed);
      }
      if (!members_.empty()) newline(depth);
      out += '}';
      return;
    }
  }
}

}  // namespace espgrid
