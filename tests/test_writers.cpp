// Writers round-trip: the .dx parsed back (and byte for byte what a plain sequential writer
// makes), the .mrc header and data read back, the .vti read back with VTK with every
// compressor, and the atomic write never leaves a partial or non-finite map.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <thread>

#include "src/core/errors.h"
#include "src/core/text_format.h"
#include "src/core/text_parsing.h"
#include "src/maps/map_format_table.h"
#include "src/maps/map_formats.h"
#include "tests/file_helpers.h"

#if ESPGRID_HAVE_ZLIB
#include <zlib.h>
#endif

#if ESPGRID_HAVE_VTK
#include <vtkFieldData.h>
#include <vtkFloatArray.h>
#include <vtkImageData.h>
#include <vtkNew.h>
#include <vtkPointData.h>
#include <vtkStringArray.h>
#include <vtkXMLImageDataReader.h>
#endif

namespace espgrid {
namespace {

namespace fs = std::filesystem;

class Writers : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("espgrid_writers_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    map_.grid.dims = {5, 4, 3};
    map_.grid.origin = {-12.345678, 0.125, 1e-3};
    map_.grid.spacing = {0.5, 0.37, 1.25};
    map_.physics.unit = PotentialUnit::KcalPerMolPerE;
    map_.physics.dielectric = 2;
    map_.source = "unit test";
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> value(-50.0f, 50.0f);
    map_.values.resize(map_.grid.point_count());
    for (float& v : map_.values) v = value(rng);
    map_.values[3] = 1.2345678e-30f;  // tiny and huge magnitudes must survive the text
    map_.values[7] = -9.8765432e+20f;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::size_t files_in_dir() const {
    return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir_), fs::directory_iterator{}));
  }

  fs::path dir_;
  PotentialMap map_;
};

TEST_F(Writers, DxRoundTripsExactly) {
  write_map(map_, path("m.dx"));
  const PotentialMap back = read_dx(path("m.dx"));
  EXPECT_EQ(back.grid.dims, map_.grid.dims);
  EXPECT_EQ(back.grid.origin, map_.grid.origin);  // shortest round-trip text: exact
  EXPECT_EQ(back.grid.spacing, map_.grid.spacing);
  EXPECT_EQ(back.values, map_.values);  // 9 significant digits: every float exact
}

TEST_F(Writers, DxHasApbsLayout) {
  write_map(map_, path("m.dx"));
  const TextLines text(path("m.dx"));
  std::size_t n = 1;
  while (text.line(n).substr(0, 1) == "#") ++n;  // comments only at the top
  EXPECT_GE(n, 2u);
  EXPECT_EQ(text.line(n), "object 1 class gridpositions counts 5 4 3");
  EXPECT_EQ(text.line(n + 1), "origin -12.345678 0.125 0.001");
  EXPECT_EQ(text.line(n + 2), "delta 0.5 0 0");
  EXPECT_EQ(text.line(n + 3), "delta 0 0.37 0");
  EXPECT_EQ(text.line(n + 4), "delta 0 0 1.25");
  EXPECT_EQ(text.line(n + 5), "object 2 class gridconnections counts 5 4 3");
  EXPECT_EQ(text.line(n + 6), "object 3 class array type double rank 0 items 60 data follows");
  // z fastest: the first line holds (0,0,0), (0,0,1), (0,0,2); the second starts at (0,1,0)
  const auto first = split_whitespace(text.line(n + 7));
  ASSERT_EQ(first.size(), 3u);
  const std::size_t nx = 5, ny = 4;
  for (std::size_t k = 0; k < 3; ++k) EXPECT_EQ(static_cast<float>(*parse_number(first[k])), map_.values[nx * ny * k]);
  EXPECT_EQ(static_cast<float>(*parse_number(split_whitespace(text.line(n + 8))[0])), map_.values[nx]);
  for (std::size_t line = n + 7; line < n + 7 + 20; ++line) EXPECT_EQ(split_whitespace(text.line(line)).size(), 3u);
  EXPECT_EQ(text.line(n + 27), "attribute \"dep\" string \"positions\"");
  EXPECT_EQ(text.line(n + 28), "object \"regular positions regular connections\" class field");
  EXPECT_EQ(text.line(n + 29), "component \"positions\" value 1");
  EXPECT_EQ(text.line(n + 30), "component \"connections\" value 2");
  EXPECT_EQ(text.line(n + 31), "component \"data\" value 3");
  EXPECT_EQ(text.count(), n + 31);
}

// A source path with a newline or of great length must not break the header's comment block.
TEST_F(Writers, DxCommentIsOneSafeLine) {
  map_.source = "/tmp/odd\ndir/" + std::string(3000, 'x') + ".pqr";
  write_map(map_, path("m.dx"));
  const TextLines text(path("m.dx"));
  std::size_t n = 1;
  while (text.line(n).substr(0, 1) == "#") {
    EXPECT_LT(text.line(n).size(), 300u);
    ++n;
  }
  EXPECT_EQ(text.line(n), "object 1 class gridpositions counts 5 4 3");
  EXPECT_EQ(read_dx(path("m.dx")).values, map_.values);
}

TEST_F(Writers, DxWithCountNotAMultipleOfThree) {
  map_.grid.dims = {2, 2, 2};
  map_.values.resize(8);
  write_map(map_, path("m.dx"));
  EXPECT_EQ(read_dx(path("m.dx")).values, map_.values);
}

/// The DX file of `map` as the writer made it before it was parallel: one thread, std::to_chars
/// with 8 digits after the point, z fastest, three values a line, the same header and trailer.
/// Independent of the writer under test (src/maps/dx_format.cpp), so a difference is a defect.
std::string sequential_dx(const PotentialMap& map) {
  const GridSpec& g = map.grid;
  std::string out = "# Electrostatic potential by espgrid " ESPGRID_VERSION " (direct Coulomb summation)\n";
  if (!map.source.empty()) out += "# " + map.source + "\n";
  out += "# " + physics_comment(map.physics) + "\n";
  const std::string counts =
      std::to_string(g.dims[0]) + " " + std::to_string(g.dims[1]) + " " + std::to_string(g.dims[2]) + "\n";
  out += "object 1 class gridpositions counts " + counts;
  out += "origin " + shortest_text(g.origin[0]) + " " + shortest_text(g.origin[1]) + " " + shortest_text(g.origin[2]) +
         "\n";
  out += "delta " + shortest_text(g.spacing[0]) + " 0 0\n";
  out += "delta 0 " + shortest_text(g.spacing[1]) + " 0\n";
  out += "delta 0 0 " + shortest_text(g.spacing[2]) + "\n";
  out += "object 2 class gridconnections counts " + counts;
  out += "object 3 class array type double rank 0 items " + std::to_string(g.point_count()) + " data follows\n";
  std::size_t n = 0;
  for (std::int64_t i = 0; i < g.dims[0]; ++i)
    for (std::int64_t j = 0; j < g.dims[1]; ++j)
      for (std::int64_t k = 0; k < g.dims[2]; ++k) {
        char text[32];
        const double v = map.values[static_cast<std::size_t>(i + g.dims[0] * (j + g.dims[1] * k))];
        const auto end = std::to_chars(text, text + sizeof text, v, std::chars_format::scientific, 8).ptr;
        out.append(text, end);
        out += (++n % 3 == 0 || n == g.point_count()) ? '\n' : ' ';
      }
  out +=
      "attribute \"dep\" string \"positions\"\n"
      "object \"regular positions regular connections\" class field\n"
      "component \"positions\" value 1\n"
      "component \"connections\" value 2\n"
      "component \"data\" value 3\n";
  return out;
}

/// A map of random values of every magnitude and sign, `dims` points.
PotentialMap random_map(std::array<std::int64_t, 3> dims, unsigned seed) {
  PotentialMap map;
  map.grid.dims = dims;
  map.grid.origin = {-31.25, 0.1, 7.0};
  map.grid.spacing = {0.5, 0.3, 0.7};
  map.source = "random values";
  std::mt19937 rng(seed);
  std::normal_distribution<double> log_magnitude(0.0, 5.0);
  map.values.resize(map.grid.point_count());
  for (std::size_t n = 0; n < map.values.size(); ++n)
    map.values[n] = static_cast<float>(std::exp(log_magnitude(rng)) * (rng() % 2 ? 1 : -1));
  return map;
}

// The parallel writer formats blocks of lines on several threads; the file must be the one
// the sequential writer makes, byte for byte, for any thread count and for maps smaller than
// one block, of exactly one, and of many with a ragged end (point counts not a multiple of 3).
TEST_F(Writers, ParallelDxEqualsSequentialDx) {
  const std::array<std::int64_t, 3> shapes[] = {{1, 1, 1}, {2, 2, 2}, {5, 4, 3}, {1, 1, 65538}, {61, 47, 53}};
  for (const auto& dims : shapes) {
    const PotentialMap map = random_map(dims, 11 + static_cast<unsigned>(dims[2]));
    const std::string want = sequential_dx(map);
    for (const int threads : {1, 2, 3, 8}) {
      MapWriteOptions options;
      options.threads = threads;
      write_map(map, path("p.dx"), options);
      EXPECT_TRUE(testing::slurp(path("p.dx")) == want)
          << dims[0] << "x" << dims[1] << "x" << dims[2] << " on " << threads << " threads";
    }
    EXPECT_EQ(read_dx(path("p.dx")).values, map.values);
  }
}

#if ESPGRID_HAVE_ZLIB
/// The whole decompressed content of a gzip file (every member), read with zlib's gzread.
std::string gunzip(const std::string& file) {
  gzFile in = gzopen(file.c_str(), "rb");
  if (!in) return "";
  std::string out;
  char buffer[1 << 16];
  for (int n; (n = gzread(in, buffer, sizeof buffer)) > 0;) out.append(buffer, static_cast<std::size_t>(n));
  gzclose(in);
  return out;
}

// .dx.gz: the same text as the .dx, in gzip members compressed on several threads; zlib reads
// the members back as one stream, for one block and for many.
TEST_F(Writers, DxGzDecompressesToTheDx) {
  const std::array<std::int64_t, 3> shapes[] = {{5, 4, 3}, {61, 47, 53}};
  for (const auto& dims : shapes) {
    const PotentialMap map = random_map(dims, 23);
    for (const int threads : {1, 3}) {
      MapWriteOptions options;
      options.threads = threads;
      write_map(map, path("p.dx.gz"), options);
      const std::string packed = testing::slurp(path("p.dx.gz"));
      ASSERT_GE(packed.size(), 2u);
      EXPECT_EQ(static_cast<unsigned char>(packed[0]), 0x1f);  // gzip magic
      EXPECT_EQ(static_cast<unsigned char>(packed[1]), 0x8b);
      EXPECT_TRUE(gunzip(path("p.dx.gz")) == sequential_dx(map)) << dims[2] << " planes, " << threads << " threads";
    }
  }
  EXPECT_EQ(map_format_from_extension("x.DX.GZ"), MapFormat::DxGz);
  EXPECT_THROW(map_format_from_extension("x.pqr.gz"), UsageError);
}
#else
TEST_F(Writers, DxGzIsRefusedWithoutZlib) {
  EXPECT_THROW(write_map(map_, path("m.dx.gz")), UsageError);
  EXPECT_EQ(files_in_dir(), 0u);
}
#endif

// The format table: every extension names its entry (in any case), no two entries share an
// extension or a word, every entry can be written and read back by its own functions, and the
// help texts the table makes name every extension.
TEST(FormatTable, EveryEntryIsFoundByItsExtensionsAndListedInTheHelp) {
  std::vector<std::string_view> seen;
  for (const MapFormatInfo& f : map_format_table()) {
    SCOPED_TRACE(std::string(f.name));
    ASSERT_FALSE(f.extensions.empty());
    EXPECT_EQ(&map_format_info(f.format), &f);
    EXPECT_EQ(find_map_format_word(f.word()), &f);
    EXPECT_NE(f.write, nullptr);
    EXPECT_NE(f.read, nullptr);
    for (const std::string_view extension : f.extensions) {
      EXPECT_EQ(std::find(seen.begin(), seen.end(), extension), seen.end()) << extension << " twice";
      seen.push_back(extension);
      std::string upper(extension);
      for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      EXPECT_EQ(map_format_from_extension("dir.x/name" + std::string(extension)), f.format);
      EXPECT_EQ(map_format_from_extension("NAME" + upper), f.format);
      EXPECT_NE(map_extensions_text().find(extension), std::string::npos);
      EXPECT_NE(map_formats_help().find(extension), std::string::npos);
    }
    EXPECT_NE(map_format_words().find(f.word()), std::string::npos);
  }
  EXPECT_THROW(map_format_from_extension("x.pqr.gz"), UsageError);
  EXPECT_THROW(map_format_from_extension(".dx"), UsageError);  // a hidden file without extension
  try {
    map_format_from_extension("x.txt");
    ADD_FAILURE() << "x.txt taken for a map";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(map_extensions_text()), std::string::npos) << e.what();
  }
}

// No state shared between calls: maps written at the same time from several threads each
// come out whole and right.
TEST_F(Writers, DxWritersRunConcurrently) {
  std::vector<PotentialMap> maps;
  for (unsigned m = 0; m < 4; ++m) maps.push_back(random_map({23, 19, 37 + m}, 100 + m));
  std::vector<std::thread> threads;
  for (std::size_t m = 0; m < maps.size(); ++m)
    threads.emplace_back([&, m] {
      MapWriteOptions options;
      options.threads = 2;
      write_map(maps[m], path("c" + std::to_string(m) + ".dx"), options);
    });
  for (auto& t : threads) t.join();
  for (std::size_t m = 0; m < maps.size(); ++m)
    EXPECT_TRUE(testing::slurp(path("c" + std::to_string(m) + ".dx")) == sequential_dx(maps[m])) << "map " << m;
}

/// The fields of an MRC2014 file, read independently of the writer (the spec's word layout).
struct MrcFile {
  std::int32_t n[3], mode, start[3], m[3], map_axes[3], ispg, nsymbt, nversion, nlabl;
  float cell[3], angles[3], dmin, dmax, dmean, rms, origin[3];
  std::string map_id, labels[10];
  unsigned char stamp[4];
  std::vector<float> data;
  std::size_t file_bytes = 0;
};

MrcFile read_mrc(const std::string& file) {
  const std::string bytes = testing::slurp(file);
  MrcFile f{};
  f.file_bytes = bytes.size();
  if (bytes.size() < 1024) return f;
  auto word = [&](int w, auto& into) { std::memcpy(&into, bytes.data() + 4 * (w - 1), 4); };
  for (int a = 0; a < 3; ++a) {
    word(1 + a, f.n[a]);
    word(5 + a, f.start[a]);
    word(8 + a, f.m[a]);
    word(11 + a, f.cell[a]);
    word(14 + a, f.angles[a]);
    word(17 + a, f.map_axes[a]);
    word(50 + a, f.origin[a]);
  }
  word(4, f.mode);
  word(20, f.dmin);
  word(21, f.dmax);
  word(22, f.dmean);
  word(23, f.ispg);
  word(24, f.nsymbt);
  word(28, f.nversion);
  word(55, f.rms);
  word(56, f.nlabl);
  f.map_id = bytes.substr(208, 4);
  std::memcpy(f.stamp, bytes.data() + 212, 4);
  for (int l = 0; l < 10; ++l) f.labels[l] = bytes.substr(224 + 80 * static_cast<std::size_t>(l), 80);
  f.data.resize((bytes.size() - 1024) / 4);
  std::memcpy(f.data.data(), bytes.data() + 1024, 4 * f.data.size());
  return f;
}

TEST_F(Writers, MrcRoundTrips) {
  for (const char* name : {"m.mrc", "m.map", "m.ccp4", "M.MRC"}) {
    write_map(map_, path(name));
    const MrcFile f = read_mrc(path(name));
    ASSERT_EQ(f.file_bytes, 1024 + 4 * map_.values.size()) << name;
    EXPECT_EQ(f.map_id, "MAP ");
    EXPECT_EQ(f.stamp[0], 0x44);  // little-endian, as this machine (x86-64) is
    EXPECT_EQ(f.stamp[1], 0x44);
    EXPECT_EQ(f.mode, 2);
    EXPECT_EQ(f.ispg, 1);
    EXPECT_EQ(f.nsymbt, 0);
    EXPECT_EQ(f.nversion, 20140);
    for (int a = 0; a < 3; ++a) {
      const auto s = static_cast<std::size_t>(a);
      EXPECT_EQ(f.n[a], map_.grid.dims[s]);
      EXPECT_EQ(f.m[a], map_.grid.dims[s]);
      // This grid's origin is not a whole number of voxels: written the cryo-EM way, start 0 and
      // ORIGIN (tests/test_map_readers.cpp has the grids on the lattice).
      EXPECT_EQ(f.start[a], 0);
      EXPECT_EQ(f.map_axes[a], a + 1);  // x fastest: columns x, rows y, sections z
      EXPECT_EQ(f.angles[a], 90.0f);
      // What the format can hold: the float32 nearest the grid's origin and spacing. Readers
      // compute the voxel size as cell / samples.
      EXPECT_EQ(f.origin[a], static_cast<float>(map_.grid.origin[s]));
      EXPECT_EQ(static_cast<float>(static_cast<double>(f.cell[a]) / f.m[a]), static_cast<float>(map_.grid.spacing[s]));
    }
    EXPECT_EQ(f.data, map_.values);  // x fastest, as the map is stored
    const auto [lo, hi] = std::minmax_element(map_.values.begin(), map_.values.end());
    EXPECT_EQ(f.dmin, *lo);
    EXPECT_EQ(f.dmax, *hi);
    double sum = 0, squares = 0;
    for (const float v : map_.values) sum += v;
    const double mean = sum / static_cast<double>(map_.values.size());
    for (const float v : map_.values) squares += (v - mean) * (v - mean);
    // The writer sums each lane of 16 values in float before double (maps/mrc_format.cpp):
    // within ~1e-6 of the mean magnitude and of the RMS deviation; 4e-6 leaves margin.
    const double rms = std::sqrt(squares / static_cast<double>(map_.values.size()));
    EXPECT_NEAR(f.dmean, mean, 4e-6 * rms);
    EXPECT_NEAR(f.rms, rms, 4e-6 * rms);
    EXPECT_EQ(f.nlabl, 3);
    EXPECT_NE(f.labels[0].find("espgrid"), std::string::npos) << f.labels[0];
    EXPECT_NE(f.labels[1].find("Potential in kcal/mol/e"), std::string::npos) << f.labels[1];
    EXPECT_NE(f.labels[1].find("model coulomb"), std::string::npos) << f.labels[1];
    EXPECT_EQ(f.labels[2].substr(0, 9), "unit test");
    EXPECT_EQ(f.labels[3], std::string(80, ' '));
  }
}

// Labels are 80 printable ASCII characters: a long source or one with a newline is cut and
// cleaned, never spilling into the next label.
TEST_F(Writers, MrcLabelsStayInTheirEightyCharacters) {
  map_.source = "/tmp/odd\ndir/" + std::string(300, 'x') + ".pqr";
  write_map(map_, path("m.mrc"));
  const MrcFile f = read_mrc(path("m.mrc"));
  EXPECT_EQ(f.labels[2], "/tmp/odd?dir/" + std::string(67, 'x'));
  EXPECT_EQ(f.labels[3], std::string(80, ' '));
}

// The voxel size readers compute (cell / samples) for awkward spacings: the float32 nearest the
// spacing whenever a float32 cell can give it (found here by brute force over ±16 ulps of
// spacing × samples), and always within one float32 ulp of the spacing (relative 2^-23: a
// float cell of about spacing × samples carries 2^-24 of itself).
TEST_F(Writers, MrcVoxelSizeIsAsExactAsAFloatCellAllows) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> spacing(0.01, 5.0);
  std::size_t unreachable = 0;
  for (int trial = 0; trial < 200; ++trial) {
    map_.grid.spacing = {spacing(rng), spacing(rng), spacing(rng)};
    map_.grid.dims = {static_cast<std::int64_t>(1 + rng() % 700), 4, 3};
    map_.values.assign(map_.grid.point_count(), 1.5f);
    write_map(map_, path("v.mrc"));
    const MrcFile f = read_mrc(path("v.mrc"));
    for (int a = 0; a < 3; ++a) {
      const double h = map_.grid.spacing[static_cast<std::size_t>(a)];
      const double voxel = static_cast<double>(f.cell[a]) / f.m[a];
      EXPECT_LE(std::fabs(voxel - h), h * 0x1p-23) << "spacing " << h << " x " << f.m[a];
      bool reachable = false;
      float cell = static_cast<float>(h * f.m[a]);
      for (int s = 0; s < 16; ++s) cell = std::nextafter(cell, 0.0f);
      for (int s = 0; s <= 32; ++s, cell = std::nextafter(cell, 1e30f))
        reachable = reachable || static_cast<float>(static_cast<double>(cell) / f.m[a]) == static_cast<float>(h);
      if (reachable)
        EXPECT_EQ(static_cast<float>(voxel), static_cast<float>(h)) << "spacing " << h << " x " << f.m[a];
      else
        ++unreachable;
    }
  }
  EXPECT_LT(unreachable, 200u) << "almost no spacing reachable: the test would check little";
}

TEST_F(Writers, NonFiniteValueIsRefusedAndNothingIsWritten) {
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    map_.values[17] = bad;
    for (const MapFormatInfo& format : map_format_table()) {
      if (!format.writable()) continue;
      const std::string name = "bad" + std::string(format.extensions.front());
      try {
        write_map(map_, path(name));
        ADD_FAILURE() << "wrote a map holding " << bad;
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("(2, 3, 0)"), std::string::npos) << e.what();
      }
      EXPECT_EQ(files_in_dir(), 0u) << "a partial file was left behind";
    }
  }
}

// The plane writers (MRC, uncompressed .vti) check values in their vectorized summary pass,
// four at a time, with a scalar tail: a NaN or infinity anywhere in a plane is caught and named.
TEST_F(Writers, PlaneWritersFindANonFiniteValueAnywhere) {
  map_.grid.dims = {5, 3, 4};  // 15 points a plane: three groups of four and a tail of three
  for (const char* name : {"p.mrc", "p.vti"}) {
    for (std::size_t at = 0; at < 60; at += 1) {
      map_.values.assign(60, 1.25f);
      map_.values[at] = at % 2 ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::quiet_NaN();
      try {
        write_map(map_, path(name));
        ADD_FAILURE() << name << " written with a non-finite value at " << at;
      } catch (const Error& e) {
        const std::string where =
            "(" + std::to_string(at % 5) + ", " + std::to_string(at / 5 % 3) + ", " + std::to_string(at / 15) + ")";
        EXPECT_NE(std::string(e.what()).find(where), std::string::npos) << e.what();
      }
      EXPECT_EQ(files_in_dir(), 0u);
    }
  }
}

// A map over 16 MB is checked and summarized by the run's threads, then written in one call: the
// same bytes as the one-thread pass, and of two non-finite values the one in the earlier plane is
// named, whichever thread finds its own first.
TEST_F(Writers, PlaneWritersGiveTheSameBytesOnOneThreadAndOnSeveral) {
  map_.grid.dims = {161, 160, 170};  // 4.4 M values: over write_all_planes' 4 M threshold
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> value(-300.0f, 300.0f);
  map_.values.resize(map_.grid.point_count());
  for (float& v : map_.values) v = value(rng);
  const auto bytes_of = [](const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  MapWriteOptions one, four;
  one.threads = 1;
  four.threads = 4;
  for (const char* name : {"p.mrc", "p.vti"}) {
    SCOPED_TRACE(name);
    write_map(map_, path(std::string("one-") + name), one);
    write_map(map_, path(std::string("four-") + name), four);
    const std::string a = bytes_of(path(std::string("one-") + name)), b = bytes_of(path(std::string("four-") + name));
    ASSERT_GT(a.size(), map_.values.size() * sizeof(float));
    EXPECT_TRUE(a == b) << "the files differ";
  }
  fs::remove_all(dir_);
  fs::create_directories(dir_);
  const std::size_t plane = 161 * 160;
  map_.values[150 * plane + 5] = std::numeric_limits<float>::infinity();       // the last thread's planes
  map_.values[9 * plane + 161 + 3] = std::numeric_limits<float>::quiet_NaN();  // the first thread's
  for (const char* name : {"bad.mrc", "bad.vti"}) {
    try {
      write_map(map_, path(name), four);
      ADD_FAILURE() << name << " written with non-finite values";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("(3, 1, 9)"), std::string::npos) << e.what();
    }
    EXPECT_EQ(files_in_dir(), 0u);
  }
}

// Finite values whose squares overflow float (|v| > 1.8e19) take the summary's double path:
// the header still holds the right statistics.
TEST_F(Writers, MrcStatisticsOfHugeFiniteValues) {
  map_.values.assign(map_.grid.point_count(), 3e30f);
  map_.values[0] = -1e38f;
  map_.values[59] = 2e38f;
  write_map(map_, path("h.mrc"));
  const MrcFile f = read_mrc(path("h.mrc"));
  EXPECT_EQ(f.dmin, -1e38f);
  EXPECT_EQ(f.dmax, 2e38f);
  double sum = 0, squares = 0;
  for (const float v : map_.values) sum += v;
  const double mean = sum / 60;
  for (const float v : map_.values) squares += (v - mean) * (v - mean);
  EXPECT_FLOAT_EQ(f.dmean, static_cast<float>(mean));
  EXPECT_FLOAT_EQ(f.rms, static_cast<float>(std::sqrt(squares / 60)));
}

TEST_F(Writers, FailedWriteLeavesTheExistingFileUntouched) {
  { std::ofstream(path("keep.dx")) << "old content\n"; }
  map_.values[0] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THROW(write_map(map_, path("keep.dx")), Error);
  std::ifstream in(path("keep.dx"));
  std::stringstream content;
  content << in.rdbuf();
  EXPECT_EQ(content.str(), "old content\n");
  EXPECT_EQ(files_in_dir(), 1u);
}

TEST_F(Writers, RejectsUnknownExtensionAndMissingDirectory) {
  EXPECT_THROW(write_map(map_, path("m.txt")), UsageError);
  EXPECT_THROW(write_map(map_, path("m.mrcs")), UsageError);  // an MRC image stack: not a volume
  try {
    write_map(map_, path("no/such/dir/m.dx"));
    FAIL() << "wrote into a missing directory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
}

#if ESPGRID_HAVE_VTK
TEST_F(Writers, VtiReadsBackWithVtk) {
  write_map(map_, path("m.vti"));
  vtkNew<vtkXMLImageDataReader> reader;
  reader->SetFileName(path("m.vti").c_str());
  reader->Update();
  vtkImageData* image = reader->GetOutput();
  int dims[3];
  image->GetDimensions(dims);
  EXPECT_EQ(dims[0], 5);
  EXPECT_EQ(dims[1], 4);
  EXPECT_EQ(dims[2], 3);
  double origin[3], spacing[3];
  image->GetOrigin(origin);
  image->GetSpacing(spacing);
  for (int a = 0; a < 3; ++a) {
    EXPECT_EQ(origin[a], map_.grid.origin[static_cast<std::size_t>(a)]);
    EXPECT_EQ(spacing[a], map_.grid.spacing[static_cast<std::size_t>(a)]);
  }
  auto* values = vtkFloatArray::SafeDownCast(image->GetPointData()->GetArray("potential"));
  ASSERT_NE(values, nullptr);
  ASSERT_EQ(values->GetNumberOfTuples(), 60);
  for (vtkIdType n = 0; n < 60; ++n) EXPECT_EQ(values->GetValue(n), map_.values[static_cast<std::size_t>(n)]);
  auto* units = vtkStringArray::SafeDownCast(image->GetFieldData()->GetAbstractArray("units"));
  ASSERT_NE(units, nullptr);
  EXPECT_EQ(units->GetValue(0), "kcal/mol/e");
  auto* source = vtkStringArray::SafeDownCast(image->GetFieldData()->GetAbstractArray("source"));
  ASSERT_NE(source, nullptr);
  EXPECT_EQ(source->GetValue(0), "unit test");
  auto* dielectric = image->GetFieldData()->GetArray("dielectric");
  auto* temperature = image->GetFieldData()->GetArray("temperature_K");
  ASSERT_NE(dielectric, nullptr);
  ASSERT_NE(temperature, nullptr);
  EXPECT_EQ(dielectric->GetTuple1(0), 2.0);
  EXPECT_EQ(temperature->GetTuple1(0), 298.15);

  std::ifstream raw(path("m.vti"));
  std::string head(600, '\0');
  raw.read(head.data(), 600);
  EXPECT_EQ(head.find("compressor="), std::string::npos);  // the default: uncompressed, espgrid's own writer
  EXPECT_NE(head.find("format=\"appended\""), std::string::npos);
}

// Every compressor --compression offers writes a file VTK reads back exactly, and says so in
// its header (ParaView reads the header to pick the decompressor).
TEST_F(Writers, VtiEveryCompressorReadsBack) {
  const PotentialMap map = random_map({37, 29, 31}, 5);
  const std::pair<VtiCompression, const char*> compressors[] = {{VtiCompression::None, nullptr},
                                                                {VtiCompression::Lz4, "vtkLZ4DataCompressor"},
                                                                {VtiCompression::ZLib, "vtkZLibDataCompressor"},
                                                                {VtiCompression::Lzma, "vtkLZMADataCompressor"}};
  for (const auto& [compression, name] : compressors) {
    MapWriteOptions options;
    options.vti_compression = compression;
    write_map(map, path("c.vti"), options);
    const std::string text = testing::slurp(path("c.vti"));
    const std::string head = text.substr(0, 600);
    if (name)
      EXPECT_NE(head.find(std::string("compressor=\"") + name + "\""), std::string::npos) << head;
    else
      EXPECT_EQ(head.find("compressor="), std::string::npos) << head;
    vtkNew<vtkXMLImageDataReader> reader;
    reader->SetFileName(path("c.vti").c_str());
    reader->Update();
    auto* values = vtkFloatArray::SafeDownCast(reader->GetOutput()->GetPointData()->GetArray("potential"));
    ASSERT_NE(values, nullptr) << compression_name(compression);
    ASSERT_EQ(values->GetNumberOfTuples(), static_cast<vtkIdType>(map.values.size()));
    EXPECT_EQ(std::memcmp(values->GetPointer(0), map.values.data(), sizeof(float) * map.values.size()), 0)
        << compression_name(compression);
  }
  EXPECT_EQ(parse_compression("zlib"), VtiCompression::ZLib);
  EXPECT_THROW(parse_compression("gzip"), UsageError);
}
#else
TEST_F(Writers, CompressedVtiIsRefusedWithoutVtk) {
  MapWriteOptions options;
  options.vti_compression = VtiCompression::ZLib;
  try {
    write_map(map_, path("m.vti"), options);
    FAIL() << "wrote compressed .vti without VTK";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("without VTK"), std::string::npos);
  }
  EXPECT_EQ(files_in_dir(), 0u);
}
#endif

}  // namespace
}  // namespace espgrid

namespace espgrid {
namespace {

// Every file records the map's physics in its header; reading it back gives the same model,
// parameters, unit, temperature and dielectric (espgrid convert and the renderer rely on it).
TEST(MapMetadata, PhysicsCommentRoundTripsForEveryModel) {
  for (int m = 0; m < kPairModelCount; ++m) {
    PhysicsOptions physics;
    physics.model = static_cast<PairModel>(m);
    physics.unit = PotentialUnit::KcalPerMolPerE;
    physics.dielectric = physics.model == PairModel::Debye ? 78.54 : 4.0;
    physics.temperature = 310.5;
    if (physics.model == PairModel::Debye) physics.ionic_strength = 0.15;
    const std::string comment = physics_comment(physics);
    SCOPED_TRACE(comment);
    PhysicsOptions read;
    ASSERT_TRUE(parse_physics_comment(comment, read));
    EXPECT_EQ(read.model, physics.model);
    EXPECT_EQ(read.unit, physics.unit);
    EXPECT_EQ(read.dielectric, physics.dielectric);
    EXPECT_EQ(read.temperature, physics.temperature);
    EXPECT_EQ(read.ionic_strength, physics.ionic_strength);
  }
  PhysicsOptions untouched;
  untouched.dielectric = 7;
  EXPECT_FALSE(parse_physics_comment("Potential in kT/e (T = 300 K), dielectric 2, model yukawa", untouched));
  EXPECT_FALSE(parse_physics_comment("Data from somewhere else", untouched));
  EXPECT_EQ(untouched.dielectric, 7);
  ASSERT_TRUE(parse_physics_comment(" POTENTIAL (kT/e)", untouched));  // APBS
  EXPECT_EQ(untouched.unit, PotentialUnit::KTPerE);
}

}  // namespace
}  // namespace espgrid
