// The checks of a finished ELEC block: APBS's (MGparm_check, PBEparm_check, Vpbe_ctor's) in
// APBS's order, so the first complaint is the one APBS would make, then espgrid's own range
// checks, which APBS leaves to crashes or NaNs (a zero dielectric, a negative temperature).
#include <cmath>

#include "src/apbs/apbs_input.h"
#include "src/apbs/apbs_parse_support.h"
#include "src/physics/apbs_constants.h"

namespace espgrid::apbs {

MultigridAxis multigrid_axis(int dime) {
  constexpr int kMinimumLevels = 4;  // vhal.h VMGNLEV
  int halvings = 0;
  for (int rest = dime - 1; rest > 0 && rest % 2 == 0; rest /= 2) ++halvings;
  MultigridAxis axis{dime, halvings - 1};
  if (dime > 65 && axis.levels < kMinimumLevels) {
    const int blocks = std::max(1, dime / (1 << (kMinimumLevels + 1)));
    axis = {blocks * (1 << (kMinimumLevels + 1)) + 1, kMinimumLevels};
  }
  return axis;
}

namespace detail {
namespace {

void require(const ParseState& state, bool ok, const ElecBlock& elec, const std::string& what) {
  if (!ok) state.fail(elec.line, "this " + std::string(method_name(elec.method)) + " ELEC block " + what);
}

void check_grid_keywords(const ParseState& state, const ElecBlock& elec) {
  require(state, elec.dime.set, elec, "does not set dime");
  require(state, elec.charges.has_value(), elec, "does not set chgm");
  if (elec.method == ElecMethod::Manual) {
    require(state, elec.grid.set || elec.glen.set, elec, "sets neither grid nor glen");
    require(state, !(elec.grid.set && elec.glen.set), elec, "sets both grid and glen (APBS takes one)");
    require(state, elec.gcent.set, elec, "does not set gcent");
  } else {
    require(state, elec.cglen.set, elec, "does not set cglen");
    require(state, elec.fglen.set, elec, "does not set fglen");
    require(state, elec.cgcent.set, elec, "does not set cgcent");
    require(state, elec.fgcent.set, elec, "does not set fgcent");
  }
  if (elec.method == ElecMethod::Parallel) {
    require(state, elec.pdime.set, elec, "does not set pdime");
    require(state, elec.ofrac.set, elec, "does not set ofrac");
    const long long partitions =
        static_cast<long long>(elec.pdime.value[0]) * elec.pdime.value[1] * elec.pdime.value[2];
    // A limit far beyond any machine's processes, so the partitions can be listed.
    if (partitions > 100'000)
      state.fail(elec.pdime.line, "pdime asks for " + std::to_string(partitions) + " partitions (at most 100000)");
    if (elec.async && *elec.async >= partitions)
      state.fail(elec.line, "async " + std::to_string(*elec.async) + " names no partition (pdime gives " +
                                std::to_string(partitions) + ", numbered from 0)");
  }
}

/// Keywords the block's method does not use: APBS stores and ignores them; espgrid says so.
void note_ignored_keywords(ParseState& state, const ElecBlock& elec) {
  const auto note = [&](bool given, std::size_t line, const char* keyword) {
    if (given)
      state.notice(line, std::string(keyword) + " has no effect in an " + std::string(method_name(elec.method)) +
                             " block (APBS ignores it too)");
  };
  if (elec.method == ElecMethod::Manual) {
    note(elec.cglen.set, elec.cglen.line, "cglen");
    note(elec.fglen.set, elec.fglen.line, "fglen");
    note(elec.cgcent.set, elec.cgcent.line, "cgcent");
    note(elec.fgcent.set, elec.fgcent.line, "fgcent");
  } else {
    note(elec.glen.set, elec.glen.line, "glen");
    note(elec.grid.set, elec.grid.line, "grid");
    note(elec.gcent.set, elec.gcent.line, "gcent");
  }
  if (elec.method != ElecMethod::Parallel) {
    note(elec.pdime.set, elec.pdime.line, "pdime");
    note(elec.ofrac.set, elec.ofrac.line, "ofrac");
    note(elec.async.has_value(), elec.line, "async");
  }
}

void check_dime(ParseState& state, ElecBlock& elec) {
  int levels = 1 << 30;
  for (int axis = 0; axis < 3; ++axis) {
    const MultigridAxis rule = multigrid_axis(elec.dime.value[axis]);
    if (rule.dime != elec.dime.value[axis]) {
      state.notice(elec.dime.line, "dime " + std::to_string(elec.dime.value[axis]) + " becomes " +
                                       std::to_string(rule.dime) + " along " + "xyz"[axis] +
                                       ", as APBS changes it (its multigrid needs 32k + 1 points over 65)");
      elec.dime.value[axis] = rule.dime;
    }
    levels = std::min(levels, rule.levels);
  }
  if (levels <= 0)
    state.fail(elec.dime.line, "dime " + std::to_string(elec.dime.value[0]) + " " + std::to_string(elec.dime.value[1]) +
                                   " " + std::to_string(elec.dime.value[2]) +
                                   " leaves APBS's multigrid no level (each must be c*2^(l+1) + 1 with l >= 1, "
                                   "e.g. 33, 65, 97, 129, 161)");
}

void check_equation_keywords(const ParseState& state, const ElecBlock& elec) {
  require(state, elec.molecule != 0, elec, "does not set mol");
  require(state, elec.equation.has_value(), elec, "sets neither lpbe nor npbe");
  require(state, elec.boundary.has_value(), elec, "does not set bcfl");
  require(state, elec.pdie.set, elec, "does not set pdie");
  const bool molecular = elec.surface == SurfaceMethod::Mol || elec.surface == SurfaceMethod::Smol;
  const double srad = elec.srad.set ? elec.srad.value : 1.4;  // APBS's default, before the check
  require(state, !(molecular && !elec.sdens.set && srad > kApbsSmall), elec, "does not set sdens");
  require(state, elec.sdie.set, elec, "does not set sdie");
  require(state, elec.surface.has_value(), elec, "does not set srfm");
  require(state, !(molecular && !elec.srad.set), elec, "does not set srad");
  const bool spline = elec.surface == SurfaceMethod::Spline2 || elec.surface == SurfaceMethod::Spline4;
  require(state, !(spline && !elec.swin.set), elec, "does not set swin");
  require(state, elec.temp.set, elec, "does not set temp");
}

void check_ranges(const ParseState& state, const ElecBlock& elec) {
  const auto positive = [&](const Scalar& s, const char* name) {
    if (s.set && !(s.value > 0)) state.fail(s.line, std::string(name) + " must be positive");
  };
  positive(elec.pdie, "pdie");
  positive(elec.sdie, "sdie");
  positive(elec.temp, "temp");
  const bool molecular = elec.surface == SurfaceMethod::Mol || elec.surface == SurfaceMethod::Smol;
  if (molecular) positive(elec.sdens, "sdens");
  if (elec.srad.set && elec.srad.value < 0) state.fail(elec.srad.line, "srad cannot be negative");
  const bool spline = elec.surface == SurfaceMethod::Spline2 || elec.surface == SurfaceMethod::Spline4;
  if (spline) positive(elec.swin, "swin");
  double net = 0;  // Vpbe_ctor: the bulk electrolyte must be neutral
  for (const IonSpecies& ion : elec.ions) net += ion.charge * ion.concentration;
  if (std::abs(net) > kApbsSmall)
    state.fail(elec.ions.back().line,
               "the ions' charges do not balance (net " + std::to_string(net) + " M of charge; APBS refuses this too)");
}

}  // namespace

void check_elec(ParseState& state, ElecBlock& elec) {
  check_grid_keywords(state, elec);
  check_dime(state, elec);
  check_equation_keywords(state, elec);
  check_ranges(state, elec);
  note_ignored_keywords(state, elec);
}

}  // namespace detail
}  // namespace espgrid::apbs
