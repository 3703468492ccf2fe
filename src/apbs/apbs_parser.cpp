// The APBS input file's sections: READ, ELEC (its keywords in apbs_elec_parser.cpp), PRINT,
// QUIT. Where APBS silently skips something (an unknown word between sections, an unknown
// molecule format, a print of a block that computed no energy) espgrid stops with FILE:LINE,
// so nothing an input asks for is quietly left out.
#include <cmath>
#include <fstream>
#include <sstream>

#include "src/apbs/apbs_input.h"
#include "src/apbs/apbs_parse_support.h"
#include "src/core/number_parsing.h"
#include "src/core/text_parsing.h"

namespace espgrid::apbs {
namespace detail {

double ParseState::number(std::string_view keyword, std::size_t line) {
  const Token token = tokens.expect(keyword, line);
  const std::optional<double> value = parse_number(token.text);
  if (!value || !std::isfinite(*value))
    fail(token.line, "'" + token.text + "' is not a number (" + std::string(keyword) + " takes numbers)");
  return *value;
}

int ParseState::integer(std::string_view keyword, std::size_t line, long long minimum, long long maximum) {
  const Token token = tokens.expect(keyword, line);
  const std::optional<long long> value = parse_integer(token.text);
  if (!value)
    fail(token.line, "'" + token.text + "' is not a whole number (" + std::string(keyword) + " takes whole numbers)");
  if (*value < minimum || *value > maximum)
    fail(token.line, std::string(keyword) + " " + token.text + " is out of range (" + std::to_string(minimum) + " to " +
                         std::to_string(maximum) + ")");
  return static_cast<int>(*value);
}

namespace {

void parse_read_mol(ParseState& state, const Token& keyword) {
  const Token format = state.tokens.expect("mol's format", keyword.line);
  const std::string name = lower(format.text);
  MoleculeInput mol;
  if (name == "pqr") {
    mol.format = MoleculeFormat::Pqr;
  } else if (name == "pdb") {
    mol.format = MoleculeFormat::Pdb;
  } else if (name == "xml") {
    state.unsupported(format, "molecules in APBS's XML format; convert them to PQR");
  } else {
    state.fail(format.line, "unknown molecule format '" + format.text + "' (mol takes pqr or pdb)");
  }
  const Token path = state.tokens.path("molecule path", keyword.line);
  mol.path = path.text;
  mol.line = keyword.line;
  state.input.molecules.push_back(std::move(mol));
}

void parse_read_parm(ParseState& state, const Token& keyword) {
  const Token format = state.tokens.expect("parm's format", keyword.line);
  const std::string name = lower(format.text);
  if (name == "xml") state.unsupported(format, "parameter files in APBS's XML format; use the flat format");
  if (name != "flat") state.fail(format.line, "unknown parameter format '" + format.text + "' (parm takes flat)");
  const Token path = state.tokens.path("parameter file path", keyword.line);
  if (state.input.parameters) {
    state.notice(keyword.line, "a second parameter file (" + path.text + ") is ignored, as APBS ignores it; " +
                                   state.input.parameters->path + " is used");
    return;
  }
  state.input.parameters = ParameterInput{path.text, keyword.line};
}

void parse_read(ParseState& state, const Token& read) {
  for (;;) {
    const Token keyword = state.tokens.expect("the READ section", read.line);
    const std::string key = lower(keyword.text);
    if (key == "end") return;
    if (key == "mol") {
      parse_read_mol(state, keyword);
    } else if (key == "parm") {
      parse_read_parm(state, keyword);
    } else if (key == "diel" || key == "kappa" || key == "pot" || key == "charge") {
      state.unsupported(keyword,
                        "reading " + key + " maps from files (usemap); espgrid computes them from the molecule");
    } else if (key == "mesh") {
      state.unsupported(keyword, "finite-element meshes");
    } else {
      state.fail(keyword.line, "keyword " + keyword.text + " is not supported in READ (mol, parm or end)");
    }
  }
}

/// The ELEC block a print names: a number (1-based, checked once every block is known) or a
/// name given to an earlier block (case-insensitive; the first such block, as in APBS).
int print_operand(ParseState& state, const Token& token) {
  if (whole_digits(token.text)) {
    if (token.text.size() > 6) state.fail(token.line, "ELEC block " + token.text + " does not exist");
    return std::stoi(token.text) - 1;
  }
  const std::string wanted = lower(token.text);
  for (std::size_t i = 0; i < state.input.elecs.size(); ++i)
    if (!state.input.elecs[i].name.empty() && lower(state.input.elecs[i].name) == wanted) return static_cast<int>(i);
  state.fail(token.line, "no ELEC block before this line is named " + token.text);
}

void parse_print(ParseState& state, const Token& print) {
  PrintStatement statement;
  statement.line = print.line;
  const Token what = state.tokens.expect("PRINT", print.line);
  const std::string kind = lower(what.text);
  if (kind == "energy") {
    statement.deprecated_energy = true;
    state.notice(what.line, "'print energy' is deprecated in APBS; use 'print elecEnergy'");
  } else if (kind == "force" || kind == "elecforce" || kind == "apolforce") {
    state.unsupported(what, "forces: espgrid computes no forces");
  } else if (kind == "apolenergy") {
    state.unsupported(what, "nonpolar (APOLAR) energies");
  } else if (kind != "elecenergy") {
    state.fail(what.line, "PRINT takes elecEnergy (or energy), not '" + what.text + "'");
  }
  int sign = 1;
  bool expect_operand = true;
  for (;;) {
    const Token token = state.tokens.expect("the PRINT statement", print.line);
    const std::string key = lower(token.text);
    if (key == "end") {
      if (expect_operand) state.fail(token.line, "the PRINT statement ends where a calculation was expected");
      break;
    }
    if (key == "+" || key == "-") {
      if (expect_operand) state.fail(token.line, "'" + token.text + "' where a calculation was expected");
      sign = key == "+" ? 1 : -1;
      expect_operand = true;
      continue;
    }
    if (!expect_operand) state.fail(token.line, "'" + token.text + "' where '+', '-' or 'end' was expected");
    statement.elecs.push_back(print_operand(state, token));
    statement.signs.push_back(sign);
    expect_operand = false;
  }
  state.input.prints.push_back(std::move(statement));
}

void parse_elec(ParseState& state, const Token& elec_token) {
  ElecBlock elec;
  elec.line = elec_token.line;
  Token method = state.tokens.expect("the ELEC block", elec_token.line);
  if (lower(method.text) == "name") {
    elec.name = state.tokens.expect("the ELEC block's name", elec_token.line).text;
    method = state.tokens.expect("the ELEC block", elec_token.line);
  }
  const std::string key = lower(method.text);
  if (key == "mg-manual") {
    elec.method = ElecMethod::Manual;
  } else if (key == "mg-auto") {
    elec.method = ElecMethod::Auto;
  } else if (key == "mg-para") {
    elec.method = ElecMethod::Parallel;
  } else if (key == "mg-dummy") {
    state.unsupported(method, "mg-dummy sets up coefficient maps without solving; use mg-manual with write");
  } else if (key == "fe-manual") {
    state.unsupported(method, "the finite-element solver; use mg-manual, mg-auto or mg-para");
  } else if (key == "bem" || key == "bem-manual" || key == "tabi") {
    state.unsupported(method, "the boundary-element solver (TABI-PB); use mg-manual, mg-auto or mg-para");
  } else if (key == "geoflow" || key == "geoflow-manual" || key == "geoflow-none") {
    state.unsupported(method, "the GeoFlow solver; use mg-manual, mg-auto or mg-para");
  } else if (key == "pbam" || key == "pbsam") {
    state.unsupported(method, "the analytical PB-AM/PB-SAM solvers; use mg-manual, mg-auto or mg-para");
  } else if (key == "pygbe") {
    state.unsupported(method, "the PyGBe solver; use mg-manual, mg-auto or mg-para");
  } else {
    state.fail(method.line,
               "an ELEC block starts with its method (mg-manual, mg-auto or mg-para), optionally after "
               "'name NAME', not '" +
                   method.text + "'");
  }
  parse_elec_body(state, elec);
  check_elec(state, elec);
  state.input.elecs.push_back(std::move(elec));
}

void check_molecule(const ParseState& state, int molecule, std::size_t line, const char* what) {
  const auto count = static_cast<int>(state.input.molecules.size());
  if (molecule < 1 || molecule > count)
    state.fail(line, std::string(what) + " names molecule " + std::to_string(molecule) + ", but READ " +
                         (count == 0 ? std::string("reads no molecules")
                                     : "reads " + std::to_string(count) + (count == 1 ? " molecule" : " molecules")));
}

/// Checks that need the whole file: molecule numbers, print operands and their energies.
void check_references(const ParseState& state) {
  const ApbsInput& input = state.input;
  for (const ElecBlock& elec : input.elecs) {
    check_molecule(state, elec.molecule, elec.molecule_line, "mol");
    for (const CenterInput* c : {&elec.gcent, &elec.cgcent, &elec.fgcent})
      if (c->set && c->molecule != 0) check_molecule(state, c->molecule, c->line, "the grid centre");
  }
  for (const PrintStatement& print : input.prints) {
    for (int e : print.elecs) {
      if (e < 0 || e >= static_cast<int>(input.elecs.size()))
        state.fail(print.line, "PRINT uses ELEC block " + std::to_string(e + 1) + ", but the file has " +
                                   std::to_string(input.elecs.size()) + " ELEC blocks");
      const ElecBlock& elec = input.elecs[static_cast<std::size_t>(e)];
      if (elec.energy == EnergyRequest::None)
        state.fail(print.line, "PRINT uses " + elec_label(input, static_cast<std::size_t>(e)) +
                                   ", which computes no energy (add 'calcenergy total' to it; APBS would print "
                                   "nothing or add 0 for it)");
    }
  }
}

}  // namespace
}  // namespace detail

ApbsInput parse_apbs_input(std::string_view text, const std::string& file) {
  ApbsInput input;
  input.file = file;
  detail::ParseState state{TokenStream(text, file), input};
  while (std::optional<Token> token = state.tokens.next()) {
    const std::string key = lower(token->text);
    if (key == "read") {
      detail::parse_read(state, *token);
    } else if (key == "elec") {
      detail::parse_elec(state, *token);
    } else if (key == "print") {
      detail::parse_print(state, *token);
    } else if (key == "quit") {
      break;  // APBS reads nothing after QUIT
    } else if (key == "apolar") {
      state.unsupported(*token, "nonpolar solvation energies (APOLAR)");
    } else {
      state.fail(token->line, "keyword " + token->text +
                                  " is not supported here (a section starts with READ, ELEC, PRINT or QUIT; APBS "
                                  "would skip the word with a warning)");
    }
  }
  detail::check_references(state);
  return input;
}

ApbsInput read_apbs_input(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ApbsInputError(path, 0, "cannot open the APBS input file");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ApbsInputError(path, 0, "cannot read the APBS input file");
  return parse_apbs_input(text.str(), path);
}

std::string_view method_name(ElecMethod method) {
  switch (method) {
    case ElecMethod::Manual:
      return "mg-manual";
    case ElecMethod::Auto:
      return "mg-auto";
    case ElecMethod::Parallel:
      return "mg-para";
  }
  return "?";
}
std::string_view equation_name(Equation equation) { return equation == Equation::Linearized ? "lpbe" : "npbe"; }
std::string_view boundary_name(Boundary boundary) {
  switch (boundary) {
    case Boundary::Zero:
      return "zero";
    case Boundary::SingleDebyeHuckel:
      return "sdh";
    case Boundary::MultipleDebyeHuckel:
      return "mdh";
    case Boundary::Focus:
      return "focus";
  }
  return "?";
}
std::string_view surface_name(SurfaceMethod surface) {
  switch (surface) {
    case SurfaceMethod::Mol:
      return "mol";
    case SurfaceMethod::Smol:
      return "smol";
    case SurfaceMethod::Spline2:
      return "spl2";
    case SurfaceMethod::Spline4:
      return "spl4";
  }
  return "?";
}
std::string_view charge_method_name(ChargeMethod charges) {
  switch (charges) {
    case ChargeMethod::Spline0:
      return "spl0";
    case ChargeMethod::Spline2:
      return "spl2";
    case ChargeMethod::Spline4:
      return "spl4";
  }
  return "?";
}
std::string_view energy_request_name(EnergyRequest energy) {
  switch (energy) {
    case EnergyRequest::None:
      return "no";
    case EnergyRequest::Total:
      return "total";
    case EnergyRequest::Components:
      return "comps";
  }
  return "?";
}
std::string_view write_type_name(WriteType type) {
  static constexpr std::string_view kNames[] = {"pot",  "charge", "kappa", "dielx", "diely", "dielz", "smol",
                                                "sspl", "vdw",    "ivdw",  "lap",   "edens", "ndens", "qdens"};
  return kNames[static_cast<int>(type)];
}
std::string_view write_format_name(WriteFormat format) { return format == WriteFormat::Dx ? "dx" : "gz"; }

std::string elec_label(const ApbsInput& input, std::size_t elec) {
  std::string label = "ELEC block " + std::to_string(elec + 1);
  if (elec < input.elecs.size() && !input.elecs[elec].name.empty()) label += " (" + input.elecs[elec].name + ")";
  return label;
}

}  // namespace espgrid::apbs
