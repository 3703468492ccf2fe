// A large plain PQR is read in byte ranges on several threads (src/structure/pqr_ranges.h); any
// file that is not plain goes back to read_pqr. Held to read_pqr itself, on fresh random files of
// every record layout espgrid accepts, and on files that must go back (models, a defect, binary
// data), whose results and errors must be read_pqr's to the line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "src/core/errors.h"
#include "src/core/text_parsing.h"
#include "src/structure/pqr_ranges.h"
#include "src/structure/structure_reader.h"
#include "tests/test_support.h"

namespace espgrid {
namespace {

/// About `atoms` records in the layouts read_pqr accepts (chain or not, HETATM with its serial
/// run in, an element after the radius, fixed-column coordinates run together), with records
/// that carry no atoms, comments, blank lines and CRLF line ends among them: at least 4 MiB from
/// 60,000 atoms, so that the ranges are taken.
std::string random_pqr(std::mt19937& rng, std::size_t atoms) {
  std::uniform_real_distribution<double> coordinate(-99.0, 99.0), charge(-1.0, 1.0), radius(0.0, 2.5);
  std::string text = "REMARK   1 random atoms for the range reader\n";
  char line[160];
  for (std::size_t a = 1; a <= atoms; ++a) {
    const double x = coordinate(rng), y = coordinate(rng), z = coordinate(rng);
    const double q = charge(rng), r = radius(rng);
    switch (rng() % 5) {
      case 0:
        std::snprintf(line, sizeof line, "ATOM  %5zu  CA  ALA A%4zu    %8.3f%8.3f%8.3f %7.4f %6.4f", a % 100000,
                      a % 10000, x, y, z, q, r);
        break;
      case 1:
        std::snprintf(line, sizeof line, "HETATM%zu O HOH %zu %.3f %.3f %.3f %.4f %.4f", a % 100000, a % 10000, x, y, z,
                      q, r);
        break;
      case 2:
        std::snprintf(line, sizeof line, "ATOM %zu N MET B %zuA %.6f %.6f %.6f %.5f %.4f N", a, a % 1000, x, y, z, q,
                      r);
        break;
      case 3:
        std::snprintf(line, sizeof line, "ATOM  %5zu  C   GLY  %4zu    %8.3f%8.3f%8.3f %7.4f %6.4f", a % 100000,
                      a % 10000, -100.0 - std::fabs(x), y, z, q, r);  // x runs into y: -145.751-10.406
        break;
      default:
        std::snprintf(line, sizeof line, "atom\t%zu\tH1\tLYS\t%zu\t%.3f\t%.3f\t%.3f\t%.4f\t%.4f", a, a % 1000, x, y, z,
                      q, r);
    }
    text += line;
    text += rng() % 7 == 0 ? "\r\n" : "\n";
    const unsigned extra = rng() % 400;
    if (extra == 0) text += "TER\n";
    if (extra == 1) text += "# a comment\n";
    if (extra == 2) text += "\n";
    if (extra == 3) text += "REMARK350 BIOMOLECULE: 1\n";
  }
  return text + "END\n";
}

/// A file under the test's temporary folder holding `text`.
std::string write_file(const std::string& name, const std::string& text) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     ("espgrid_pqr_ranges_" + std::to_string(::getpid()) + "_" + name + ".pqr");
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

Structure line_by_line(const std::string& path) {
  LineSource lines(path);
  return read_pqr(lines);
}

void expect_same(const Structure& got, const Structure& want) {
  ASSERT_EQ(got.atoms.size(), want.atoms.size());
  EXPECT_EQ(got.atoms.x, want.atoms.x);
  EXPECT_EQ(got.atoms.y, want.atoms.y);
  EXPECT_EQ(got.atoms.z, want.atoms.z);
  EXPECT_EQ(got.atoms.charge, want.atoms.charge);
  EXPECT_EQ(got.atoms.radius, want.atoms.radius);
  EXPECT_TRUE(got.atoms.element == want.atoms.element);
  ASSERT_EQ(got.labels.size(), want.labels.size());
  for (std::size_t i = 0; i < got.labels.size(); ++i) {
    EXPECT_EQ(got.labels[i].residue_text(), want.labels[i].residue_text()) << "atom " << i + 1;
    EXPECT_EQ(got.labels[i].atom_name(), want.labels[i].atom_name()) << "atom " << i + 1;
  }
  EXPECT_EQ(got.notices, want.notices);
}

TEST(PqrRanges, ALargeFileReadInRangesIsReadPqrsAtomsInOrder) {
  std::mt19937 rng(testing::test_seed());
  SCOPED_TRACE("seed " + std::to_string(testing::test_seed()));
  const std::string path = write_file("plain", random_pqr(rng, 70000));
  const Structure want = line_by_line(path);
  ASSERT_EQ(want.atoms.size(), 70000u);
  for (const int threads : {2, 3, 7, 16}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    const std::optional<Structure> ranged = read_pqr_in_ranges(path, threads);
    ASSERT_TRUE(ranged) << "a plain file went back to read_pqr";
    expect_same(*ranged, want);
  }
  expect_same(read_structure(path, StructureFormat::Pqr), want);
  std::filesystem::remove(path);
}

// What is not plain goes back to read_pqr, wherever it sits: its results, notices and errors
// (file, line, message) are the line-by-line reader's.
TEST(PqrRanges, AFileThatIsNotPlainIsReadPqrsToTheLine) {
  std::mt19937 rng(testing::test_seed());
  SCOPED_TRACE("seed " + std::to_string(testing::test_seed()));
  const std::string text = random_pqr(rng, 60000);
  const std::size_t middle = text.find('\n', text.size() / 2 + rng() % (text.size() / 3)) + 1;
  const std::string models =
      "MODEL 1\n" + text.substr(0, middle) + "ENDMDL\nMODEL 2\n" + text.substr(middle) + "ENDMDL\n";
  const std::string defect = text.substr(0, middle) + "ATOM 1 N MET 1 1.000 2.000 nan 0.5 1.5\n" + text.substr(middle);
  const std::string binary = text.substr(0, middle) + "ATOM 1 N MET 1 1.0\x01 2.0 3.0 0.5 1.5\n" + text.substr(middle);
  const std::string unknown = text.substr(0, middle) + "SPAM 1 2 3\n" + text.substr(middle);
  const std::string marked = text.substr(0, middle) + "\xEF\xBB\xBF" + text.substr(middle);
  for (const auto& [name, content] : {std::pair<std::string, std::string>{"models", models},
                                      {"defect", defect},
                                      {"binary", binary},
                                      {"unknown", unknown},
                                      {"bom", marked}}) {
    SCOPED_TRACE(name);
    const std::string path = write_file(name, content);
    EXPECT_FALSE(read_pqr_in_ranges(path, 4)) << "taken in ranges";
    std::optional<Structure> want;
    std::string want_error;
    try {
      want = line_by_line(path);
    } catch (const InputError& e) {
      want_error = e.what();
    }
    // Models read (the first, with a notice); every other one is refused at its line.
    EXPECT_EQ(want.has_value(), name == "models") << want_error;
    if (want) EXPECT_EQ(want->notices.size(), 1u);
    try {
      const Structure got = read_structure(path, StructureFormat::Pqr);
      ASSERT_TRUE(want) << "read_pqr refused it: " << want_error;
      expect_same(got, *want);
    } catch (const InputError& e) {
      EXPECT_EQ(e.what(), want_error);
      EXPECT_NE(want_error, "");
    }
    std::filesystem::remove(path);
  }
}

}  // namespace
}  // namespace espgrid
