// The APBS front end beyond its grammar (tests/test_apbs_parser.cpp): NOsh's grids against what
// APBS 3.4.1 itself set up for the same inputs (tests/data/apbs/nosh/*.apbs.txt, made by
// make_apbs_fixtures.py), mg-para's per-process files, APBS's molecule readers, the DX layout,
// runs that solve (what this build's physics supports) and the refusals that leave nothing behind.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "src/apbs/apbs_dx.h"
#include "src/apbs/apbs_molecules.h"
#include "src/apbs/apbs_report.h"
#include "src/apbs/apbs_run.h"
#include "src/apbs/apbs_setup.h"
#include "src/maps/map_formats.h"
#include "tests/child_process.h"
#include "tests/file_helpers.h"

namespace espgrid::apbs {
namespace {

namespace fs = std::filesystem;
using testing::contains;
using testing::slurp;

using testing::kSource;
const fs::path kFixtures = kSource / "tests/data/apbs";

/// The input `name` from the fixtures, its molecules found in tests/data/apbs/ or data/.
ApbsInput fixture_input(const std::string& name) {
  ApbsInput input = read_apbs_input((kFixtures / "nosh" / name).string());
  for (MoleculeInput& m : input.molecules)
    m.path = (fs::exists(kFixtures / m.path) ? kFixtures / m.path : kSource / "data" / m.path).string();
  return input;
}

std::vector<std::array<double, 3>> centers_of(const ApbsInput& input) {
  std::vector<std::string> notices;
  std::vector<std::array<double, 3>> centers;
  for (const Molecule& m : load_molecules(input, "", notices)) centers.push_back(m.center);
  return centers;
}

/// One calculation as APBS printed it.
struct ApbsCalculation {
  std::array<int, 3> dime{};
  std::array<double, 3> spacing{}, length{}, center{};
  int levels = 0;
  std::string boundary;
  std::optional<double> energy;
};

/// A fixture's sections ("## rank R" for mg-para; one section otherwise): the calculations and
/// the headers (counts, origin) of the files APBS wrote.
struct ApbsSection {
  std::vector<ApbsCalculation> calculations;
  std::vector<std::pair<std::array<long long, 3>, std::array<double, 3>>> files;
};

std::vector<ApbsSection> read_fixture(const std::string& name) {
  std::ifstream in(kFixtures / "nosh" / (name + ".apbs.txt"));
  std::vector<ApbsSection> sections(1);
  std::string line;
  while (std::getline(in, line)) {
    ApbsSection& s = sections.back();
    ApbsCalculation* c = s.calculations.empty() ? nullptr : &s.calculations.back();
    double x, y, z;
    int a, b, d;
    long long ca, cb, cc;
    if (line.rfind("## rank", 0) == 0) {
      if (!sections.back().calculations.empty()) sections.emplace_back();
    } else if (line.rfind("CALCULATION #", 0) == 0) {
      s.calculations.emplace_back();
    } else if (std::sscanf(line.c_str(), "  Grid dimensions: %d x %d x %d", &a, &b, &d) == 3) {
      c->dime = {a, b, d};
    } else if (std::sscanf(line.c_str(), "  Grid spacings: %lf x %lf x %lf", &x, &y, &z) == 3) {
      c->spacing = {x, y, z};
    } else if (std::sscanf(line.c_str(), "  Grid lengths: %lf x %lf x %lf", &x, &y, &z) == 3) {
      c->length = {x, y, z};
    } else if (std::sscanf(line.c_str(), "  Grid center: (%lf, %lf, %lf)", &x, &y, &z) == 3) {
      c->center = {x, y, z};
    } else if (std::sscanf(line.c_str(), "  Multigrid levels: %d", &a) == 1) {
      c->levels = a;
    } else if (contains(line, "oundary conditions")) {
      c->boundary = line;
    } else if (std::sscanf(line.c_str(), "  Total electrostatic energy = %lf", &x) == 1) {
      c->energy = x;
    } else if (std::sscanf(line.c_str(), "object 1 class gridpositions counts %lld %lld %lld", &ca, &cb, &cc) == 3) {
      s.files.push_back({{ca, cb, cc}, {}});
    } else if (std::sscanf(line.c_str(), "origin %lf %lf %lf", &x, &y, &z) == 3) {
      s.files.back().second = {x, y, z};
    }
  }
  return sections;
}

std::string boundary_words(Boundary b) {
  switch (b) {
    case Boundary::Zero:
      return "Zero boundary";
    case Boundary::SingleDebyeHuckel:
      return "Single Debye-Huckel";
    case Boundary::MultipleDebyeHuckel:
      return "Multiple Debye-Huckel";
    case Boundary::Focus:
      return "from focusing";
  }
  return "?";
}

/// APBS prints grids "%4.3f": a value read back is within half a unit of the last digit (5e-4)
/// of APBS's; 6e-4 allows the rounding of our own value's last bit on top.
constexpr double kPrintedTolerance = 6e-4;

class NoshFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(NoshFixture, GridsAreApbsGridsLevelByLevel) {
  const ApbsInput input = fixture_input(GetParam() + ".in");
  const CalculationPlan plan = plan_calculations(input, centers_of(input));
  const std::vector<ApbsSection> apbs = read_fixture(GetParam());
  ASSERT_EQ(apbs.size(), 1u);
  ASSERT_EQ(plan.calculations.size(), apbs[0].calculations.size());
  for (std::size_t i = 0; i < plan.calculations.size(); ++i) {
    const Calculation& ours = plan.calculations[i];
    const ApbsCalculation& theirs = apbs[0].calculations[i];
    SCOPED_TRACE("CALCULATION #" + std::to_string(i + 1));
    EXPECT_EQ(ours.grid.dime, theirs.dime);
    for (int j = 0; j < 3; ++j) {
      EXPECT_NEAR(ours.grid.spacing[j], theirs.spacing[j], kPrintedTolerance) << "axis " << j;
      EXPECT_NEAR(ours.grid.length[j], theirs.length[j], kPrintedTolerance) << "axis " << j;
      EXPECT_NEAR(ours.grid.center[j], theirs.center[j], kPrintedTolerance) << "axis " << j;
    }
    EXPECT_EQ(ours.multigrid_levels, theirs.levels);
    EXPECT_TRUE(contains(theirs.boundary, boundary_words(ours.boundary))) << theirs.boundary;
  }
  // The files the finest levels write: APBS's headers ("%12.6e" origin) against our grids.
  std::size_t file = 0;
  for (std::size_t e = 0; e < input.elecs.size(); ++e)
    for (std::size_t w = 0; w < input.elecs[e].writes.size(); ++w, ++file) {
      ASSERT_LT(file, apbs[0].files.size());
      const GridSpec g = plan.calculations[plan.result_of_elec[e]].grid.grid();
      for (int j = 0; j < 3; ++j) {
        EXPECT_EQ(g.dims[j], apbs[0].files[file].first[j]);
        EXPECT_NEAR(g.origin[j], apbs[0].files[file].second[j], 1e-5 * std::max(1.0, std::abs(g.origin[j])));
      }
    }
}

INSTANTIATE_TEST_SUITE_P(ApbsLogs, NoshFixture,
                         ::testing::Values("born_auto", "fas_offcenter", "fas_levels", "fas_manual", "actin_auto"),
                         [](const auto& info) { return std::string(info.param); });

TEST(NoshSetup, FocusingLevelsFollowApbsRules) {
  // 300 Å to 10 Å at 33 points: a 30× reduction needs ⌈log 30 / log 4⌉ + 1 = 4 levels, each
  // shrinking by 30^(-1/3).
  const std::vector<LevelGrid> levels =
      focusing_levels({33, 33, 33}, {300, 300, 300}, {0, 0, 0}, {10, 10, 10}, {0, 0, 0}, "in.in", 1);
  ASSERT_EQ(levels.size(), 4u);
  for (std::size_t i = 1; i < levels.size(); ++i)
    EXPECT_NEAR(levels[i].spacing[0] / levels[i - 1].spacing[0], std::pow(30.0, -1.0 / 3), 1e-12);
  EXPECT_NEAR(levels.back().length[0], 10, 1e-9);
  // No reduction at all still focuses once (APBS's minimum of two levels).
  EXPECT_EQ(focusing_levels({33, 33, 33}, {50, 50, 50}, {0, 0, 0}, {50, 50, 50}, {0, 0, 0}, "in.in", 1).size(), 2u);
  // The finest grid must lie inside the coarse one as given: NOsh stops.
  try {
    focusing_levels({33, 33, 33}, {50, 50, 50}, {0, 0, 0}, {12, 12, 12}, {20, 0, 0}, "in.in", 7);
    FAIL() << "a fine grid past the coarse one was accepted";
  } catch (const ApbsInputError& e) {
    EXPECT_EQ(e.line(), 7u);
    EXPECT_TRUE(contains(e.what(), "reaches past the coarse grid along x")) << e.what();
  }
}

class ParallelFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(ParallelFixture, EveryProcessWritesApbsBlock) {
  const ApbsInput input = fixture_input(GetParam() + ".in");
  const CalculationPlan plan = plan_calculations(input, centers_of(input));
  const std::vector<ApbsSection> ranks = read_fixture(GetParam());
  const std::vector<Partition>& parts = plan.partitions[0];
  ASSERT_EQ(parts.size(), ranks.size());
  const GridSpec global = plan.calculations[plan.result_of_elec[0]].grid.grid();
  for (std::size_t r = 0; r < parts.size(); ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    ASSERT_EQ(ranks[r].files.size(), 1u);
    const auto& [counts, origin] = ranks[r].files[0];
    for (int j = 0; j < 3; ++j) {
      EXPECT_EQ(parts[r].count[j], counts[j]);
      // APBS's "%12.6e": 7 significant digits.
      EXPECT_NEAR(global.position(j, parts[r].first[j]), origin[j], 1e-6 * std::max(1.0, std::abs(origin[j])));
      // Every process's finest spacing is the global grid's.
      EXPECT_NEAR(global.spacing[j], ranks[r].calculations.back().spacing[j], kPrintedTolerance);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(ApbsLogs, ParallelFixture, ::testing::Values("born_para", "fas_para"),
                         [](const auto& info) { return std::string(info.param); });

TEST(ApbsMolecules, ReadsApbsPdbWithParameters) {
  const fs::path dir = fs::temp_directory_path() / ("espgrid_apbs_pdb_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "p.dat") << "# residue atom charge radius epsilon\nALK C -0.2 1.9 0.45\nALK H 0.1 1.4 0.06\n"
                                  "WAT OW 0 1.7 0.6\n";
  // Chain given, chain merged into resSeq, none; an insertion code before x.
  const std::string pdb =
      "REMARK made by hand\n"
      "ATOM      1  C   ALK A   1       1.000   2.000   3.000  1.00  0.00\n"
      "ATOM      2  H   alk A1001      -1.000   0.000   1.000\n"
      "HETATM    3  h   ALK     2   X   3.000   4.000  -5.000\n";
  std::ofstream(dir / "m.pdb") << pdb;
  std::ofstream(dir / "in.in") << "read mol pdb m.pdb parm flat p.dat end\n";
  const ApbsInput input = read_apbs_input((dir / "in.in").string());
  std::vector<std::string> notices;
  const std::vector<Molecule> molecules = load_molecules(input, dir.string(), notices);
  ASSERT_EQ(molecules.size(), 1u);
  const Atoms& a = molecules[0].atoms;
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a.charge, (std::vector<double>{-0.2, 0.1, 0.1}));
  EXPECT_EQ(a.radius, (std::vector<double>{1.9, 1.4, 1.4}));
  EXPECT_EQ(a.x, (std::vector<double>{1, -1, 3}));
  EXPECT_EQ(molecules[0].center, (std::array<double, 3>{1, 2, -1}));  // the bounding box's middle
  // An atom the file does not parametrize is refused at its line.
  std::ofstream(dir / "m.pdb") << pdb << "ATOM      4  N   ALK A   3       0.0 0.0 0.0\n";
  try {
    load_molecules(input, dir.string(), notices);
    FAIL() << "an atom without parameters was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), 5u);
    EXPECT_TRUE(contains(e.what(), "no parameters for atom N of residue ALK")) << e.what();
  }
  // A parameter entry that is not five fields of the right kinds: its line.
  try {
    parse_flat_parameters("ALK C -0.2 1.9 0.45\nALK H 0.1 big 0.06\n", "p.dat");
    FAIL() << "a radius 'big' was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), 2u);
    EXPECT_TRUE(contains(e.what(), "p.dat:2: 'big' is not a number (an atom's radius)")) << e.what();
  }
  EXPECT_THROW(parse_flat_parameters("ALK C -0.2 1.9\n", "p.dat"), InputError);  // the file ends mid-entry
  EXPECT_THROW(parse_flat_parameters("# nothing\n", "p.dat"), InputError);       // no entries
  // mol pdb without parm, and a molecule that is not there: the READ line.
  std::ofstream(dir / "in.in") << "read\n mol pdb m.pdb\n mol pqr missing.pqr\nend\n";
  EXPECT_THROW(load_molecules(read_apbs_input((dir / "in.in").string()), dir.string(), notices), ApbsInputError);
  std::ofstream(dir / "in.in") << "read\n mol pqr missing.pqr\nend\n";
  try {
    load_molecules(read_apbs_input((dir / "in.in").string()), dir.string(), notices);
    FAIL();
  } catch (const ApbsInputError& e) {
    EXPECT_EQ(e.line(), 2u);
    EXPECT_TRUE(contains(e.what(), "cannot open the molecule " + (dir / "missing.pqr").string() + " (no such file)"))
        << e.what();
  }
  fs::remove_all(dir);
}

TEST(ApbsDx, WritesApbsLayoutThatReadsBack) {
  const fs::path dir = fs::temp_directory_path() / ("espgrid_apbs_dx_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  GridSpec grid;
  grid.dims = {5, 4, 3};
  grid.origin = {-1.5, 2.25, 10};
  grid.spacing = {0.5, 0.75, 1.25};
  std::vector<float> values(grid.point_count());
  for (std::size_t n = 0; n < values.size(); ++n) values[n] = static_cast<float>(std::sin(0.37 * n) * 1e3);
  for (const bool gz : {false, true}) {
    const fs::path path = dir / (gz ? "m.dx.gz" : "m.dx");
    write_apbs_dx(path.string(), grid, values, whole_grid(grid), "POTENTIAL (kT/e)", "test", gz);
    const PotentialMap back = read_map(path.string());
    EXPECT_EQ(back.grid.dims, grid.dims);
    for (int j = 0; j < 3; ++j) {
      EXPECT_NEAR(back.grid.origin[j], grid.origin[j], 1e-12);
      EXPECT_NEAR(back.grid.spacing[j], grid.spacing[j], 1e-12);
    }
    EXPECT_EQ(back.values, values);  // nine digits: every float reads back exactly
  }
  const std::string text = slurp(dir / "m.dx");
  EXPECT_TRUE(contains(text,
                       "# POTENTIAL (kT/e)\n# \nobject 1 class gridpositions counts 5 4 3\n"
                       "origin -1.500000e+00 2.250000e+00 1.000000e+01\n"
                       "delta 5.000000e-01 0.000000e+00 0.000000e+00\n"))
      << text.substr(0, 400);
  // A block (a partition's file): its own counts and origin, its values in DX order.
  write_apbs_dx((dir / "b.dx").string(), grid, values, NodeBlock{{1, 2, 1}, {3, 2, 2}}, "T", "test", false);
  const PotentialMap block = read_map((dir / "b.dx").string());
  EXPECT_EQ(block.grid.dims, (std::array<std::int64_t, 3>{3, 2, 2}));
  EXPECT_NEAR(block.grid.origin[0], -1.0, 1e-12);
  EXPECT_EQ(block.values[0], values[1 + 5 * (2 + 4 * 1)]);
  EXPECT_EQ(block.values.back(), values[3 + 5 * (3 + 4 * 2)]);
  fs::remove_all(dir);
}

// A map of several batches (whole x planes, about 300,000 values a formatting thread): each batch
// put in DX order and formatted while the batch before is written comes out whole and in order.
TEST(ApbsDx, ManyBatchesWrittenWhileTheNextIsFormattedReadBackExactly) {
  const fs::path dir = fs::temp_directory_path() / ("espgrid_apbs_dx_batches_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  GridSpec grid;
  grid.dims = {131, 97, 103};  // 1.31 M values, 9,991 a plane: batches of 30, 60 or 120 planes
  grid.spacing = {0.5, 0.5, 0.5};
  std::vector<float> values(grid.point_count());
  for (std::size_t n = 0; n < values.size(); ++n)
    values[n] = static_cast<float>(std::sin(0.0137 * static_cast<double>(n)) * 1e2 + 1e-3 * static_cast<double>(n));
  const int threads_before = omp_get_max_threads();
  for (const int threads : {1, 2, 4}) {  // 5, 3 and 2 batches
    omp_set_num_threads(threads);
    const fs::path path = dir / ("m" + std::to_string(threads) + ".dx");
    write_apbs_dx(path.string(), grid, values, whole_grid(grid), "POTENTIAL (kT/e)", "test", false);
    const PotentialMap back = read_map(path.string());
    EXPECT_EQ(back.grid.dims, grid.dims);
    EXPECT_EQ(back.values, values) << threads << " threads";
  }
  omp_set_num_threads(threads_before);
  EXPECT_EQ(slurp(dir / "m1.dx"), slurp(dir / "m2.dx"));
  EXPECT_EQ(slurp(dir / "m1.dx"), slurp(dir / "m4.dx"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace espgrid::apbs
