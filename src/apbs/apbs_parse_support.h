// What the parts of the APBS parser share (apbs_parser.cpp: the sections; apbs_elec_parser.cpp:
// the ELEC keywords): reading numbers as APBS's keywords take them, and the unsupported-keyword
// message. Private to src/apbs/.
#pragma once

#include <string>
#include <string_view>

#include "src/apbs/apbs_input.h"
#include "src/apbs/apbs_tokens.h"

namespace espgrid::apbs::detail {

/// The parse in progress: the tokens and what they have built.
struct ParseState {
  TokenStream tokens;
  ApbsInput& input;

  [[noreturn]] void fail(std::size_t line, const std::string& what) const {
    throw ApbsInputError(tokens.file(), line, what);
  }
  /// "keyword X is not supported (why)": the message every unsupported construct gets.
  [[noreturn]] void unsupported(const Token& keyword, const std::string& why) const {
    fail(keyword.line, "keyword " + keyword.text + " is not supported (" + why + ")");
  }
  void notice(std::size_t line, const std::string& what) {
    input.notices.push_back(tokens.file() + ":" + std::to_string(line) + ": " + what);
  }

  /// A finite number for `keyword` (the whole token: "1.5x" is refused, where APBS's sscanf
  /// would read 1.5 and drop the rest).
  double number(std::string_view keyword, std::size_t line);
  /// A whole number for `keyword` in [minimum, maximum].
  int integer(std::string_view keyword, std::size_t line, long long minimum, long long maximum);
};

/// Reads one ELEC block's body after `elec [name N] METHOD` up to its `end`.
void parse_elec_body(ParseState& state, ElecBlock& elec);
/// APBS's checks of a finished ELEC block (MGparm_check, PBEparm_check) and espgrid's range
/// checks; resets `dime` as APBS does (with a notice) where its multigrid needs it.
void check_elec(ParseState& state, ElecBlock& elec);

}  // namespace espgrid::apbs::detail
