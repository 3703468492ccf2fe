// libFuzzer target for the APBS input language (src/apbs/apbs_input.h) and NOsh's setup
// (src/apbs/apbs_setup.h): the input is the text of an APBS input file, parsed as "fuzz". The
// only accepted failure is espgrid::apbs::ApbsInputError naming "fuzz" and a line of the text;
// any other exception, a crash, an ASan/UBSan report or a hang is a finding.
//
// A file that parses must be one APBS could run: every block has what APBS requires, every
// molecule and print refers to something that exists, dime keeps APBS's multigrid levels. Its
// calculations (molecule centres taken at the origin) must be grids of finite positive
// spacings whose focusing levels lie inside the level before, and an mg-para block's
// partitions must cover its global grid exactly once.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "src/apbs/apbs_input.h"
#include "src/apbs/apbs_setup.h"

namespace {

using namespace espgrid::apbs;

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "\nespgrid fuzz finding: %s\n", what.c_str());
  std::abort();  // libFuzzer saves the input as a crash
}

void check_error(const ApbsInputError& e, std::size_t line_count) {
  const std::string what = e.what();
  if (e.file() != "fuzz") finding("ApbsInputError names file '" + e.file() + "'");
  if (what.rfind("fuzz:", 0) != 0) finding("ApbsInputError message does not start with 'fuzz:': " + what);
  if (e.line() < 1 || e.line() > line_count)
    finding("ApbsInputError line " + std::to_string(e.line()) + " outside 1.." + std::to_string(line_count) + ": " +
            what);
}

void check_input(const ApbsInput& in) {
  const auto molecules = static_cast<int>(in.molecules.size());
  for (const ElecBlock& e : in.elecs) {
    if (!e.dime.set || !e.charges || !e.equation || !e.boundary || !e.surface || !e.pdie.set || !e.sdie.set ||
        !e.temp.set)
      finding("a block lacking a required keyword was accepted");
    if (e.molecule < 1 || e.molecule > molecules) finding("mol out of range accepted");
    for (int d : e.dime.value)
      if (multigrid_axis(d).levels <= 0 || multigrid_axis(d).dime != d) finding("a dime APBS cannot use kept");
    if (!(e.pdie.value > 0) || !(e.sdie.value > 0) || !(e.temp.value > 0)) finding("a non-positive pdie/sdie/temp");
  }
  for (const PrintStatement& p : in.prints) {
    if (p.elecs.empty() || p.elecs.size() != p.signs.size()) finding("a print without operands");
    for (int e : p.elecs)
      if (e < 0 || e >= static_cast<int>(in.elecs.size()) ||
          in.elecs[static_cast<std::size_t>(e)].energy == EnergyRequest::None)
        finding("a print of a missing block or one without energy accepted");
  }
}

bool inside(const LevelGrid& fine, const LevelGrid& coarse) {
  for (int j = 0; j < 3; ++j) {
    const double slack = 1e-6 * std::max(1.0, coarse.length[j]);
    if (fine.center[j] - 0.5 * fine.length[j] < coarse.center[j] - 0.5 * coarse.length[j] - slack) return false;
    if (fine.center[j] + 0.5 * fine.length[j] > coarse.center[j] + 0.5 * coarse.length[j] + slack) return false;
  }
  return true;
}

void check_plan(const ApbsInput& in, const CalculationPlan& plan) {
  if (plan.result_of_elec.size() != in.elecs.size()) finding("a block without a result calculation");
  for (std::size_t i = 0; i < plan.calculations.size(); ++i) {
    const Calculation& c = plan.calculations[i];
    for (int j = 0; j < 3; ++j)
      if (!(c.grid.spacing[j] > 0) || !std::isfinite(c.grid.length[j]) || !std::isfinite(c.grid.center[j]) ||
          c.grid.dime[j] < 1)
        finding("calculation " + std::to_string(i + 1) + ": a grid that is not finite and positive");
    if (c.boundary == Boundary::Focus && (i == 0 || !inside(c.grid, plan.calculations[i - 1].grid)))
      finding("calculation " + std::to_string(i + 1) + " focuses from a grid that does not hold it");
  }
  for (std::size_t e = 0; e < in.elecs.size(); ++e) {
    if (in.elecs[e].method != ElecMethod::Parallel || in.elecs[e].async) continue;
    const ParallelLayout layout = parallel_layout(in.elecs[e]);
    long long covered = 0;
    for (const Partition& p : plan.partitions[e]) {
      for (int j = 0; j < 3; ++j)
        if (p.first[j] < 0 || p.first[j] + p.count[j] > layout.global_dime[j]) finding("a partition off its grid");
      covered += p.count[0] * p.count[1] * p.count[2];
    }
    if (covered != static_cast<long long>(layout.global_dime[0]) * layout.global_dime[1] * layout.global_dime[2])
      finding("mg-para partitions do not cover the global grid exactly once");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::size_t line_count = 1;
  for (const char c : text) line_count += c == '\n' ? 1 : 0;
  try {
    const ApbsInput input = parse_apbs_input(text, "fuzz");
    check_input(input);
    const std::vector<std::array<double, 3>> centers(input.molecules.size(), std::array<double, 3>{0, 0, 0});
    check_plan(input, plan_calculations(input, centers));
  } catch (const ApbsInputError& e) {
    check_error(e, line_count);
  }
  // Anything else escapes: libFuzzer reports the uncaught exception as a crash.
  return 0;
}
