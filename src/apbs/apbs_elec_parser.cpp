// The keywords of an ELEC block (APBS's MGparm and PBEparm parsers) and the checks APBS makes
// of a finished block (MGparm_check, PBEparm_check), including its quiet change of `dime` to a
// size its multigrid can coarsen, which espgrid repeats (with a notice) so the grids are APBS's.
#include <cmath>

#include "src/apbs/apbs_input.h"
#include "src/apbs/apbs_parse_support.h"
#include "src/core/number_parsing.h"

namespace espgrid::apbs::detail {
namespace {

/// Largest `dime` accepted along one axis: far beyond any grid that fits in memory.
constexpr int kMaxDime = 100'000;
/// Largest length, spacing or |centre coordinate| accepted, Å: the structure readers' limit on
/// coordinates (structure_reader.h kMaxCoordinate); beyond it a grid is a typo, and its
/// arithmetic (spacing ratios, focusing levels) would leave the finite doubles.
constexpr double kMaxLength = 1e6;

template <typename T>
void read_triple(ParseState& state, const Token& keyword, Triple<T>& triple) {
  for (int axis = 0; axis < 3; ++axis) {
    if constexpr (std::is_same_v<T, int>)
      triple.value[axis] = state.integer(keyword.text, keyword.line, 1, kMaxDime);
    else
      triple.value[axis] = state.number(keyword.text, keyword.line);
  }
  triple.set = true;
  triple.line = keyword.line;
}

void read_center(ParseState& state, const Token& keyword, CenterInput& center) {
  const Token first = state.tokens.expect(keyword.text, keyword.line);
  center = CenterInput{};
  center.set = true;
  center.line = keyword.line;
  if (lower(first.text) == "mol") {
    center.molecule = state.integer(keyword.text + " mol", keyword.line, 1, 1'000'000);
    return;
  }
  const std::optional<double> x = parse_number(first.text);
  if (!x || !std::isfinite(*x))
    state.fail(first.line, "'" + first.text + "' is not a number (" + keyword.text + " takes 'mol N' or x y z)");
  center.xyz = {*x, state.number(keyword.text, keyword.line), state.number(keyword.text, keyword.line)};
  for (double c : center.xyz)
    if (std::abs(c) > kMaxLength) state.fail(keyword.line, keyword.text + " is implausible (beyond 1e6 A)");
}

void read_scalar(ParseState& state, const Token& keyword, Scalar& scalar) {
  scalar.value = state.number(keyword.text, keyword.line);
  scalar.set = true;
  scalar.line = keyword.line;
}

/// APBS's deprecated numeric forms (`bcfl 1`, `srfm 2`, ...): the number, or nullopt for a word.
std::optional<long long> numeric_form(ParseState& state, const Token& keyword, const Token& value) {
  const std::optional<long long> number = parse_integer(value.text);
  if (number)
    state.notice(value.line, "'" + keyword.text + " " + value.text + "' is APBS's deprecated numeric form; use the " +
                                 "keyword's name");
  return number;
}

void read_boundary(ParseState& state, const Token& keyword, ElecBlock& elec) {
  const Token value = state.tokens.expect("bcfl", keyword.line);
  static constexpr Boundary kByNumber[] = {Boundary::Zero, Boundary::SingleDebyeHuckel, Boundary::MultipleDebyeHuckel};
  const std::string name = lower(value.text);
  if (const std::optional<long long> n = numeric_form(state, keyword, value)) {
    if (*n >= 0 && *n <= 2) {
      elec.boundary = kByNumber[*n];
    } else if (*n == 4) {
      elec.boundary = Boundary::Focus;
    } else if (*n == 5 || *n == 6) {
      state.unsupported(value, "membrane and map boundary conditions");
    } else {
      state.fail(value.line, "bcfl " + value.text + " is not a boundary condition");
    }
  } else if (name == "zero") {
    elec.boundary = Boundary::Zero;
  } else if (name == "sdh") {
    elec.boundary = Boundary::SingleDebyeHuckel;
  } else if (name == "mdh") {
    elec.boundary = Boundary::MultipleDebyeHuckel;
  } else if (name == "focus") {
    elec.boundary = Boundary::Focus;
  } else if (name == "mem" || name == "map") {
    state.unsupported(value, "membrane (mem) and potential-map (map) boundary conditions");
  } else {
    state.fail(value.line, "bcfl takes zero, sdh, mdh or focus, not '" + value.text + "'");
  }
  elec.boundary_line = keyword.line;
}

void read_surface(ParseState& state, const Token& keyword, ElecBlock& elec) {
  const Token value = state.tokens.expect("srfm", keyword.line);
  const std::string name = lower(value.text);
  static constexpr SurfaceMethod kByNumber[] = {SurfaceMethod::Mol, SurfaceMethod::Smol, SurfaceMethod::Spline2};
  if (const std::optional<long long> n = numeric_form(state, keyword, value)) {
    if (*n >= 0 && *n <= 2) {
      elec.surface = kByNumber[*n];
    } else if (*n == 4) {
      elec.surface = SurfaceMethod::Spline4;
    } else if (*n == 3) {
      state.unsupported(value, "the spl3 surface; use mol, smol, spl2 or spl4");
    } else {
      state.fail(value.line, "srfm " + value.text + " is not a surface definition");
    }
  } else if (name == "mol") {
    elec.surface = SurfaceMethod::Mol;
  } else if (name == "smol") {
    elec.surface = SurfaceMethod::Smol;
  } else if (name == "spl2") {
    elec.surface = SurfaceMethod::Spline2;
  } else if (name == "spl4") {
    elec.surface = SurfaceMethod::Spline4;
  } else if (name == "spl3") {
    state.unsupported(value, "the spl3 surface; use mol, smol, spl2 or spl4");
  } else {
    state.fail(value.line, "srfm takes mol, smol, spl2 or spl4, not '" + value.text + "'");
  }
  elec.surface_line = keyword.line;
}

void read_charges(ParseState& state, const Token& keyword, ElecBlock& elec) {
  const Token value = state.tokens.expect("chgm", keyword.line);
  const std::string name = lower(value.text);
  static constexpr ChargeMethod kByNumber[] = {ChargeMethod::Spline0, ChargeMethod::Spline2, ChargeMethod::Spline4};
  if (const std::optional<long long> n = numeric_form(state, keyword, value)) {
    if (*n < 0 || *n > 2) state.fail(value.line, "chgm " + value.text + " is not a charge method");
    elec.charges = kByNumber[*n];
  } else if (name == "spl0") {
    elec.charges = ChargeMethod::Spline0;
  } else if (name == "spl2") {
    elec.charges = ChargeMethod::Spline2;
  } else if (name == "spl4") {
    elec.charges = ChargeMethod::Spline4;
  } else {
    state.fail(value.line, "chgm takes spl0, spl2 or spl4, not '" + value.text + "'");
  }
  elec.charges_line = keyword.line;
}

void read_energy(ParseState& state, const Token& keyword, ElecBlock& elec) {
  const Token value = state.tokens.expect("calcenergy", keyword.line);
  const std::string name = lower(value.text);
  static constexpr EnergyRequest kByNumber[] = {EnergyRequest::None, EnergyRequest::Total, EnergyRequest::Components};
  if (const std::optional<long long> n = numeric_form(state, keyword, value)) {
    if (*n < 0 || *n > 2) state.fail(value.line, "calcenergy " + value.text + " is not an energy request");
    elec.energy = kByNumber[*n];
  } else if (name == "no") {
    elec.energy = EnergyRequest::None;
  } else if (name == "total") {
    elec.energy = EnergyRequest::Total;
  } else if (name == "comps") {
    elec.energy = EnergyRequest::Components;
  } else {
    state.fail(value.line, "calcenergy takes no, total or comps, not '" + value.text + "'");
  }
  elec.energy_line = keyword.line;
}

void read_force(ParseState& state, const Token& keyword) {
  const Token value = state.tokens.expect("calcforce", keyword.line);
  const std::string name = lower(value.text);
  if (name == "no" || value.text == "0") return;
  if (name == "total" || name == "comps" || value.text == "1" || value.text == "2")
    state.unsupported(keyword, "calcforce " + value.text + ": espgrid computes no forces; use calcforce no");
  state.fail(value.line, "calcforce takes no, total or comps, not '" + value.text + "'");
}

/// `ion charge Z conc C radius R` (the keys in any order, lower case as APBS requires) or the
/// older `ion Z C R`.
void read_ion(ParseState& state, const Token& keyword, ElecBlock& elec) {
  IonSpecies ion;
  ion.line = keyword.line;
  const Token first = state.tokens.expect("ion", keyword.line);
  const std::optional<double> old_form = parse_number(first.text);
  if (old_form) {
    state.notice(keyword.line, "'ion Z C R' is APBS's deprecated form; use 'ion charge Z conc C radius R'");
    if (!std::isfinite(*old_form)) state.fail(first.line, "'" + first.text + "' is not a number (ion's charge)");
    ion.charge = *old_form;
    ion.concentration = state.number("ion", keyword.line);
    ion.radius = state.number("ion", keyword.line);
  } else {
    bool charge = false, conc = false, radius = false;
    Token key = first;
    for (int pair = 0; pair < 3; ++pair) {
      if (pair > 0) key = state.tokens.expect("ion", keyword.line);
      bool* seen = key.text == "charge"   ? &charge
                   : key.text == "conc"   ? &conc
                   : key.text == "radius" ? &radius
                                          : nullptr;
      if (!seen)
        state.fail(key.line,
                   "ion takes 'charge Z conc C radius R' (lower case, as APBS requires), not '" + key.text + "'");
      if (*seen) state.fail(key.line, "ion gives " + key.text + " twice");
      *seen = true;
      const double value = state.number("ion " + key.text, keyword.line);
      (key.text == "charge" ? ion.charge : key.text == "conc" ? ion.concentration : ion.radius) = value;
    }
  }
  if (ion.concentration < 0) state.fail(keyword.line, "an ion's concentration cannot be negative");
  if (ion.radius < 0) state.fail(keyword.line, "an ion's radius cannot be negative");
  elec.ions.push_back(ion);
}

void read_write(ParseState& state, const Token& keyword, ElecBlock& elec) {
  const Token type = state.tokens.expect("write", keyword.line);
  static constexpr std::pair<std::string_view, WriteType> kTypes[] = {
      {"pot", WriteType::Pot},     {"charge", WriteType::Charge}, {"kappa", WriteType::Kappa},
      {"dielx", WriteType::DielX}, {"diely", WriteType::DielY},   {"dielz", WriteType::DielZ},
      {"smol", WriteType::Smol},   {"sspl", WriteType::Sspl},     {"vdw", WriteType::Vdw},
      {"ivdw", WriteType::Ivdw},   {"lap", WriteType::Lap},       {"edens", WriteType::Edens},
      {"ndens", WriteType::Ndens}, {"qdens", WriteType::Qdens}};
  WriteRequest request;
  request.line = keyword.line;
  const std::string type_name = lower(type.text);
  bool known = false;
  for (const auto& [name, value] : kTypes)
    if (type_name == name) request.type = value, known = true;
  if (!known) {
    if (type_name == "atompot" || type_name == "3dmap")
      state.unsupported(type, "write " + type.text + ": per-atom potentials of APBS's other solvers");
    state.fail(type.line,
               "write cannot write '" + type.text +
                   "' (pot, charge, kappa, dielx, diely, dielz, smol, sspl, vdw, ivdw, lap, edens, ndens, qdens)");
  }
  const Token format = state.tokens.expect("write", keyword.line);
  const std::string format_name = lower(format.text);
  if (format_name == "dx") {
    request.format = WriteFormat::Dx;
  } else if (format_name == "gz") {
    request.format = WriteFormat::Gz;
  } else if (format_name == "dxbin" || format_name == "uhbd" || format_name == "avs" || format_name == "flat") {
    state.unsupported(format, "write format " + format.text + "; espgrid writes dx and gz");
  } else {
    state.fail(format.line, "write takes the format dx or gz, not '" + format.text + "'");
  }
  request.stem = state.tokens.path("write's file stem", keyword.line).text;
  elec.writes.push_back(std::move(request));
}

/// Keywords of APBS's equation part (PBEparm); false when `key` is not one of them.
bool parse_equation_keyword(ParseState& state, const Token& keyword, const std::string& key, ElecBlock& elec) {
  if (key == "mol") {
    elec.molecule = state.integer("mol", keyword.line, 1, 1'000'000);
    elec.molecule_line = keyword.line;
  } else if (key == "lpbe" || key == "npbe") {
    elec.equation = key == "lpbe" ? Equation::Linearized : Equation::Nonlinear;
  } else if (key == "lrpbe" || key == "nrpbe") {
    state.unsupported(keyword, "the regularized PB equation, which APBS's multigrid does not solve either");
  } else if (key == "smpbe") {
    state.unsupported(keyword, "the size-modified PB equation, disabled in APBS 3.4.1 too");
  } else if (key == "bcfl") {
    read_boundary(state, keyword, elec);
  } else if (key == "ion") {
    read_ion(state, keyword, elec);
  } else if (key == "pdie" || key == "sdie" || key == "srad" || key == "swin" || key == "sdens" || key == "temp") {
    Scalar& s = key == "pdie"    ? elec.pdie
                : key == "sdie"  ? elec.sdie
                : key == "srad"  ? elec.srad
                : key == "swin"  ? elec.swin
                : key == "sdens" ? elec.sdens
                                 : elec.temp;
    read_scalar(state, keyword, s);
  } else if (key == "srfm") {
    read_surface(state, keyword, elec);
  } else if (key == "usemap") {
    state.unsupported(keyword, "coefficient maps read from files; espgrid computes them from the molecule");
  } else if (key == "calcenergy") {
    read_energy(state, keyword, elec);
  } else if (key == "calcforce") {
    read_force(state, keyword);
  } else if (key == "write") {
    read_write(state, keyword, elec);
  } else if (key == "writemat") {
    state.unsupported(keyword, "writing the operator matrix");
  } else if (key == "zmem" || key == "lmem" || key == "mdie" || key == "memv") {
    state.unsupported(keyword, "membrane boundary conditions");
  } else {
    return false;
  }
  return true;
}

/// Keywords of APBS's grid part (MGparm); false when `key` is not one of them.
bool parse_grid_keyword(ParseState& state, const Token& keyword, const std::string& key, ElecBlock& elec) {
  if (key == "dime") {
    read_triple(state, keyword, elec.dime);
  } else if (key == "chgm") {
    read_charges(state, keyword, elec);
  } else if (key == "nlev") {
    state.integer("nlev", keyword.line, -1'000'000, 1'000'000);
    state.notice(keyword.line, "nlev is deprecated and has no effect (APBS derives the levels from dime too)");
  } else if (key == "etol") {
    const double tolerance = state.number("etol", keyword.line);
    if (!(tolerance > 0)) state.fail(keyword.line, "etol must be greater than 0");
    elec.etol = tolerance;
  } else if (key == "grid" || key == "glen" || key == "cglen" || key == "fglen") {
    Triple<double>& t = key == "grid"    ? elec.grid
                        : key == "glen"  ? elec.glen
                        : key == "cglen" ? elec.cglen
                                         : elec.fglen;
    read_triple(state, keyword, t);
    for (double v : t.value) {
      if (!(v > 0)) state.fail(keyword.line, keyword.text + " must be positive");
      if (v > kMaxLength) state.fail(keyword.line, keyword.text + " is implausible (over 1e6 A)");
    }
  } else if (key == "gcent" || key == "cgcent" || key == "fgcent") {
    read_center(state, keyword, key == "gcent" ? elec.gcent : key == "cgcent" ? elec.cgcent : elec.fgcent);
  } else if (key == "pdime") {
    read_triple(state, keyword, elec.pdime);
  } else if (key == "ofrac") {
    read_scalar(state, keyword, elec.ofrac);
    if (elec.ofrac.value < 0 || elec.ofrac.value >= 0.5) state.fail(keyword.line, "ofrac must lie in [0, 0.5)");
  } else if (key == "async") {
    elec.async = state.integer("async", keyword.line, 0, 1'000'000);
  } else if (key == "gamma") {
    state.tokens.expect("gamma", keyword.line);
    state.notice(keyword.line, "gamma is deprecated and has no effect (APBS ignores it too)");
  } else if (key == "useaqua") {
    state.notice(keyword.line, "useaqua chooses APBS's solver library; espgrid's solver is its own");
  } else {
    return false;
  }
  return true;
}

}  // namespace

void parse_elec_body(ParseState& state, ElecBlock& elec) {
  for (;;) {
    const Token keyword = state.tokens.expect("the ELEC block", elec.line);
    const std::string key = lower(keyword.text);
    if (key == "end") {
      elec.end_line = keyword.line;
      return;
    }
    if (parse_equation_keyword(state, keyword, key, elec)) continue;
    if (parse_grid_keyword(state, keyword, key, elec)) continue;
    state.fail(keyword.line, "keyword " + keyword.text + " is not supported in an ELEC block (not an APBS " +
                                 std::string(method_name(elec.method)) + " keyword)");
  }
}

}  // namespace espgrid::apbs::detail
