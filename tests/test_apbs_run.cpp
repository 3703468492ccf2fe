// `espgrid apbs` runs: solved and written as APBS writes them, every refusal made before
// anything is solved or written, and the command line's exit codes, JSON and dry run. The
// energies of the fixtures against APBS's own (tests/data/apbs/nosh), level by level.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "src/apbs/apbs_run.h"
#include "src/core/units.h"
#include "src/maps/map_formats.h"
#include "tests/child_process.h"
#include "tests/file_helpers.h"

namespace espgrid::apbs {
namespace {

namespace fs = std::filesystem;
using testing::contains;
using testing::slurp;

using testing::kSource;

/// An ion of charge +1 at the origin (APBS's born example) and a one-block mg-manual input
/// around it; `extra` keywords go at the block's end.
class ApbsRun : public testing::ScratchDirTest {
 protected:
  void SetUp() override {
    ScratchDirTest::SetUp();
    std::ofstream(path("ion.pqr")) << "ATOM      1  I   ION     1       0.000   0.000  0.000  1.00  3.00\n";
  }
  std::string input(const std::string& extra, const std::string& more_blocks = "") {
    const std::string text =
        "read mol pqr ion.pqr end\n"
        "elec name solvated\n"
        "  mg-manual dime 33 33 33 glen 20 20 20 gcent mol 1 mol 1\n"
        "  lpbe bcfl mdh pdie 1 sdie 1 chgm spl2 srfm mol srad 1.4 sdens 10 temp 298.15\n" +
        extra + "end\n" + more_blocks + "quit\n";
    std::ofstream(path("in.in")) << text;
    return path("in.in");
  }
  ApbsRunOptions options() const {
    ApbsRunOptions o;
    o.directory = dir_.string();
    o.solver.backend = SolverChoice::Backend::Cpu;  // espgrid's multigrid on the CPU: no hypre or GPU needed
    o.keep_maps = true;
    return o;
  }
};

TEST_F(ApbsRun, SolvesAndWritesWhatApbsWrites) {
  (void)input("  write pot dx pot\n  write pot gz zipped\n");
  const ApbsResult r = run_apbs("in.in", options(), nullptr);
  ASSERT_EQ(r.calculations.size(), 1u);
  ASSERT_EQ(r.maps.size(), 2u);
  EXPECT_TRUE(fs::exists(path("pot-PE0.dx")));
  EXPECT_TRUE(fs::exists(path("zipped-PE0.dx.gz")));
  const PotentialMap written = read_map(path("pot-PE0.dx"));
  EXPECT_EQ(written.grid.dims, (std::array<std::int64_t, 3>{33, 33, 33}));
  EXPECT_NEAR(written.grid.origin[0], -10.0, 1e-12);
  EXPECT_NEAR(written.grid.spacing[0], 0.625, 1e-12);
  EXPECT_EQ(written.values, r.maps[0].values);
  EXPECT_EQ(read_map(path("zipped-PE0.dx.gz")).values, written.values);
  EXPECT_TRUE(contains(slurp(path("pot-PE0.dx")), "# POTENTIAL (kT/e)\n"));
  // A unit charge in a uniform dielectric of 1 with Coulomb boundary values: φ = k/r kT/e, up to
  // the 7-point stencil's error near the spread charge. Measured at 0.625 Å spacing (2026-11-27):
  // at most 0.52% from 4 Å out (median 0.02%); 1% is asserted. The map is as symmetric as the
  // problem (x ↔ −x) to the solver's tolerance (relative residual 1e-6).
  const auto at = [&](int i, int j, int k) { return written.values[i + 33 * (j + 33 * k)]; };
  const double k_coulomb = coulomb_constant(PotentialUnit::KTPerE, 298.15);
  int checked = 0;
  for (int i = 0; i < 33; ++i)
    for (int j = 0; j < 33; ++j)
      for (int k = 0; k < 33; ++k) {
        const double x = -10 + 0.625 * i, y = -10 + 0.625 * j, z = -10 + 0.625 * k;
        const double r = std::sqrt(x * x + y * y + z * z);
        EXPECT_NEAR(at(i, j, k), at(32 - i, j, k), 1e-4 * std::abs(at(i, j, k)) + 1e-6);
        if (r < 4) continue;
        EXPECT_NEAR(at(i, j, k), k_coulomb / r, 0.01 * k_coulomb / r) << i << " " << j << " " << k;
        ++checked;
      }
  EXPECT_GT(checked, 30000);
}

TEST_F(ApbsRun, RefusesBeforeWritingAnything) {
  // The first block would run; the second asks for what APBS forbids, espgrid does not build or
  // the solver does not take: each stops the run at its line before the first block is solved.
  const std::string second =
      "elec name second mg-manual dime 33 33 33 glen 20 20 20 gcent mol 1 mol 1 lpbe bcfl mdh\n"
      "  pdie 1 sdie 1 chgm spl2 srfm mol srad 1.4 sdens 10 temp 298.15\n";
  const auto refused_at = [&](const std::string& rest, std::size_t line, const std::string& why) {
    (void)input("  write pot dx pot\n", second + rest + "end\n");
    try {
      run_apbs("in.in", options(), nullptr);
      ADD_FAILURE() << "accepted: " << rest;
    } catch (const ApbsInputError& e) {
      EXPECT_EQ(e.line(), line) << e.what();
      EXPECT_TRUE(contains(e.what(), why)) << e.what();
    }
    EXPECT_EQ(entries(), (std::vector<std::string>{"in.in", "ion.pqr"})) << rest;
  };
  refused_at("  write pot dx pot\n", 9, "names the file pot-PE0.dx that line 5 writes too");
  refused_at("  calcforce total\n", 9,
             "keyword calcforce is not supported (calcforce total: espgrid computes no forces");
  // APBS takes any probe radius; espgrid's surface construction stops at 10 Å (a typing error,
  // pb_options.cpp). The line is the block's: the value may come from any of its lines.
  refused_at("  srad 12\n", 7, "outside what espgrid's PB solver takes: --probe-radius must be 0 to 10 Å, got 12");
}

TEST_F(ApbsRun, RefusesAnOutputThatCannotBeWrittenBeforeSolving) {
  (void)input("  write pot dx missing/pot\n");
  try {
    run_apbs("in.in", options(), nullptr);
    FAIL() << "an output in a missing directory was accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "missing/pot-PE0.dx")) << e.what();
  }
  EXPECT_EQ(entries(), (std::vector<std::string>{"in.in", "ion.pqr"}));
}

TEST_F(ApbsRun, CommandLineExitsTwoWithFileAndLineAndWritesNothing) {
  // The molecule by its full path: the child runs in the source directory.
  std::ofstream(path("bad.in")) << "read mol pqr " << path("ion.pqr") << " end\n"
                                << "elec mg-manual\n  dime 33 33 33\n  pdie two\nend\n";
  const testing::Outcome bad = run({"apbs", path("bad.in")});
  EXPECT_EQ(bad.code, 2) << bad;
  EXPECT_TRUE(contains(bad.err, "bad.in:4: 'two' is not a number")) << bad.err;
  EXPECT_EQ(entries(), (std::vector<std::string>{"bad.in", "ion.pqr"}));
  const testing::Outcome missing = run({"apbs", path("absent.in")});
  EXPECT_EQ(missing.code, 2) << missing;
  EXPECT_TRUE(contains(missing.err, "absent.in: cannot open the APBS input file")) << missing.err;
}

TEST_F(ApbsRun, CommandLineDryRunPrintsApbsGrids) {
  std::ofstream(path("auto.in")) << "read mol pqr " << path("ion.pqr") << " end\n"
                                 << "elec name solvated mg-auto dime 33 33 33 cglen 50 50 50 fglen 12 12 12\n"
                                    "  cgcent mol 1 fgcent mol 1 mol 1 lpbe bcfl mdh pdie 1 sdie 78.54 chgm spl2\n"
                                    "  srfm mol srad 1.4 sdens 10 temp 298.15 end\n";
  const testing::Outcome out = run({"apbs", path("auto.in"), "--dry-run"});
  // APBS's born example: 50 → 24.495 → 12 Å (tests/data/apbs/nosh/born_auto.apbs.txt).
  EXPECT_TRUE(contains(out.out, "CALCULATION #2 (solvated): MULTIGRID")) << out.out;
  EXPECT_TRUE(contains(out.out, "  Grid lengths: 24.495 x 24.495 x 24.495\n")) << out.out;
  EXPECT_TRUE(contains(out.out, "  Boundary conditions from focusing\n")) << out.out;
  EXPECT_EQ(out.code, 0) << out;
  EXPECT_EQ(entries(), (std::vector<std::string>{"auto.in", "ion.pqr"}));  // a dry run writes nothing
}

TEST_F(ApbsRun, CommandLineWritesJsonAndApbsLines) {
  std::ofstream(path("ok.in")) << "read mol pqr " << path("ion.pqr") << " end\n"
                               << "elec mg-manual dime 33 33 33 glen 20 20 20 gcent 0 0 0 mol 1 lpbe bcfl mdh\n"
                                  "  pdie 1 sdie 78.54 chgm spl2 srfm mol srad 1.4 sdens 10 temp 298.15\n"
                                  "  write pot dx "
                               << path("pot") << " end\n";
  const testing::Outcome out = run({"apbs", path("ok.in"), "--json", path("run.json"), "--backend", "cpu"});
  if (out.code != 0 && contains(out.err, "without hypre")) GTEST_SKIP() << "this build has no CPU PB solver (hypre)";
  ASSERT_EQ(out.code, 0) << out;
  EXPECT_TRUE(contains(out.out, "CALCULATION #1: MULTIGRID\n")) << out.out;
  EXPECT_TRUE(contains(out.out, "  Writing potential to " + path("pot-PE0.dx") + "\n")) << out.out;
  const std::string json = slurp(path("run.json"));
  EXPECT_TRUE(contains(json, "\"dime\": [")) << json;
  EXPECT_TRUE(contains(json, path("pot-PE0.dx"))) << json;
  EXPECT_TRUE(fs::exists(path("pot-PE0.dx")));
}

/// The fixtures' energies against APBS's.
class FixtureEnergies : public ::testing::TestWithParam<std::string> {};

TEST_P(FixtureEnergies, AgreeWithApbsLevelByLevel) {
  const fs::path work = fs::temp_directory_path() / ("espgrid_apbs_energy_" + std::to_string(::getpid()));
  fs::create_directories(work);
  const std::string name = GetParam();
  fs::copy_file(kSource / "tests/data/apbs/nosh" / (name + ".in"), work / (name + ".in"),
                fs::copy_options::overwrite_existing);
  for (const char* m : {"tests/data/apbs/ion.pqr", "data/fasciculin2.pqr", "data/actin_dimer.pqr"})
    fs::copy_file(kSource / m, work / fs::path(m).filename(), fs::copy_options::overwrite_existing);
  ApbsRunOptions options;
  options.directory = work.string();
  options.write_files = false;
  ApbsResult result;
  try {
    result = run_apbs(name + ".in", options, nullptr);
  } catch (...) {
    fs::remove_all(work);
    throw;
  }
  fs::remove_all(work);
  std::ifstream log(kSource / "tests/data/apbs/nosh" / (name + ".apbs.txt"));
  std::vector<double> apbs;
  for (std::string line; std::getline(log, line);)
    if (double e; std::sscanf(line.c_str(), "  Total electrostatic energy = %lf", &e) == 1) apbs.push_back(e);
  ASSERT_EQ(result.calculations.size(), apbs.size());
  // The issue's target is 0.1%. On the same grids and discretization the energies differ by APBS's
  // older constants (k_B, N_A, e of 1986 against CODATA 2018): 1.1-1.2e-5 measured on these
  // fixtures (2026-11-27, pbphys c86c9f4 merged); 1e-4 leaves room for the two solvers' 1e-6
  // residuals and still catches a wrong focusing energy (the outside-the-level terms are 1-100%).
  for (std::size_t i = 0; i < apbs.size(); ++i) {
    ASSERT_TRUE(result.calculations[i].energy) << "CALCULATION #" << i + 1;
    EXPECT_NEAR(*result.calculations[i].energy, apbs[i], 1e-4 * std::abs(apbs[i])) << "CALCULATION #" << i + 1;
  }
}

INSTANTIATE_TEST_SUITE_P(ApbsLogs, FixtureEnergies,
                         ::testing::Values("born_auto", "fas_offcenter", "fas_levels", "fas_manual", "actin_auto",
                                           "ion_npbe_para"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace espgrid::apbs
