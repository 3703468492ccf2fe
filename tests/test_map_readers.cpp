// Reading maps back (issues #21 and #25): read_map reads every format espgrid writes, by its
// structure, and refuses what `espgrid map` would refuse; `espgrid convert` reads them all.
// docs/reliability.md ("Issue #21: maps, trajectories, renderer input") lists each defect
// class with its test here. Unit tests first (read_map, read_map_bytes), then the verb end to
// end through the binary (ESPGRID_TEST_BINARY=OLD runs these against an older binary).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "src/core/errors.h"
#include "src/core/grid.h"
#include "src/maps/map_format_table.h"
#include "src/maps/map_formats.h"
#include "tests/child_process.h"
#include "tests/file_helpers.h"

#if ESPGRID_HAVE_ZLIB
#include <zlib.h>
#endif
#if ESPGRID_HAVE_VTK
#include <vtkImageData.h>
#include <vtkNew.h>
#include <vtkXMLImageDataReader.h>
#include <vtkXMLImageDataWriter.h>
#endif

namespace espgrid {
namespace {

namespace fs = std::filesystem;
using testing::Child;
using testing::contains;
using testing::Outcome;
using testing::slurp;

/// A map with awkward sizes, origin and spacing, and values of every magnitude.
PotentialMap sample_map(PairModel model = PairModel::Coulomb) {
  PotentialMap m;
  m.grid.dims = {5, 4, 3};
  m.grid.origin = {-12.25, 0.5, 1.75};  // on the lattice of the spacings below
  m.grid.spacing = {0.35, 0.25, 1.75};
  m.physics.unit = PotentialUnit::KcalPerMolPerE;
  m.physics.dielectric = 78.54;
  m.physics.temperature = 310;
  m.physics.model = model;
  if (model == PairModel::Debye) m.physics.ionic_strength = 0.15;
  m.source = "unit test";
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> value(-50.0f, 50.0f);
  m.values.resize(m.grid.point_count());
  for (float& v : m.values) v = value(rng);
  m.values[2] = 1.2345678e-30f;
  m.values[7] = -9.8765432e+20f;
  return m;
}

/// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

class MapReaders : public testing::ScratchDirTest {
 protected:
  std::string write(const std::string& name, const std::string& bytes) const {
    std::ofstream(path(name), std::ios::binary) << bytes;
    return path(name);
  }
  /// The map written as `name` and read back as text or bytes.
  std::string written(const PotentialMap& m, const std::string& name, const MapWriteOptions& options = {}) const {
    write_map(m, path(name), options);
    return slurp(path(name));
  }
  /// The error of reading `bytes` as `name` (an InputError, or a UsageError for the limits);
  /// fails the test when there is none.
  std::string read_error(const std::string& name, const std::string& bytes) const {
    write(name, bytes);
    try {
      read_map(path(name));
    } catch (const Error& e) {
      return e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not an espgrid::Error: " << e.what();
      return e.what();
    }
    ADD_FAILURE() << name << " was read without an error";
    return "";
  }
  static void expect_same(const PotentialMap& a, const PotentialMap& b, bool exact_grid = true) {
    EXPECT_EQ(a.grid.dims, b.grid.dims);
    for (std::size_t i = 0; i < 3; ++i) {
      if (exact_grid) {
        EXPECT_EQ(a.grid.origin[i], b.grid.origin[i]) << i;
        EXPECT_EQ(a.grid.spacing[i], b.grid.spacing[i]) << i;
      } else {  // through float32 header fields: the float nearest the value
        EXPECT_EQ(static_cast<float>(a.grid.origin[i]), static_cast<float>(b.grid.origin[i])) << i;
        EXPECT_EQ(static_cast<float>(a.grid.spacing[i]), static_cast<float>(b.grid.spacing[i])) << i;
      }
    }
    EXPECT_EQ(a.values, b.values);  // every format stores the floats exactly
    EXPECT_EQ(a.physics.unit, b.physics.unit);
    EXPECT_EQ(a.physics.model, b.physics.model);
    EXPECT_EQ(a.physics.dielectric, b.physics.dielectric);
    EXPECT_EQ(a.physics.temperature, b.physics.temperature);
    EXPECT_EQ(a.physics.ionic_strength, b.physics.ionic_strength);
  }
  /// A small DX text with the given header lines and data.
  static std::string dx(const std::string& counts, const std::string& origin, const std::string& deltas,
                        const std::string& connections, const std::string& array, const std::string& data,
                        const std::string& trailer = "attribute \"dep\" string \"positions\"\n") {
    return "# Potential in kT/e (T = 298.15 K), dielectric 1\n" + counts + "\n" + origin + "\n" + deltas + connections +
           "\n" + array + "\n" + data + trailer;
  }
  static std::string good_dx(const std::string& data) {
    return dx("object 1 class gridpositions counts 2 2 2", "origin 0 0 0", "delta 1 0 0\ndelta 0 1 0\ndelta 0 0 1\n",
              "object 2 class gridconnections counts 2 2 2",
              "object 3 class array type double rank 0 items 8 data follows", data);
  }
};

// ==== every format espgrid writes reads back ===========================================

TEST_F(MapReaders, EveryFormatReadsBackWithItsGridValuesAndPhysics) {
  for (const PairModel model : {PairModel::Coulomb, PairModel::Distance, PairModel::Debye}) {
    const PotentialMap m = sample_map(model);
    // Every extension of every format in the table that this build writes, and .vti's encoders.
    std::vector<std::pair<std::string, MapWriteOptions>> files;
    for (const MapFormatInfo& f : map_format_table())
      for (const std::string_view extension : f.extensions)
        if (f.writable()) files.push_back({"m" + std::string(extension), {}});
    if (vti_supported())
      for (const VtiCompression c : {VtiCompression::Lz4, VtiCompression::ZLib, VtiCompression::Lzma}) {
        MapWriteOptions o;
        o.vti_compression = c;
        files.push_back({"c" + std::string(compression_name(c)) + ".vti", o});
      }
    for (const auto& [name, options] : files) {
      SCOPED_TRACE(name + " " + model_name(model));
      write_map(m, path(name), options);
      bool unit_known = false;
      const PotentialMap back = read_map(path(name), &unit_known);
      EXPECT_TRUE(unit_known);
      // The .mrc header holds float32 numbers: the grid reads back as the floats nearest it.
      expect_same(m, back, map_format_info(map_format_from_extension(name)).exact_grid);
    }
  }
}

// A map espgrid did not compute (APBS's; one of unknown unit) is written with a note instead of
// physics; every format's reader takes the note back, so it converts again as what it is. A
// program's name no format could carry whole is read as "another program", never as espgrid's map.
TEST_F(MapReaders, ForeignMapsKeepTheirProgramAndUnitInEveryFormat) {
  struct Case {
    std::string foreign;
    bool unit_known;
    std::string foreign_back;
  };
  const std::string too_long(kMaxForeignName + 1, 'x');
  for (const Case& c : {Case{"APBS", true, "APBS"}, Case{"APBS", false, "APBS"},
                        Case{"another program", false, "another program"}, Case{too_long, true, "another program"}})
    for (const MapFormatInfo& f : map_format_table())
      for (const std::string_view extension : f.extensions) {
        if (!f.writable()) continue;
        SCOPED_TRACE(c.foreign + (c.unit_known ? ", unit known, " : ", unit unknown, ") + std::string(extension));
        PotentialMap m = sample_map(PairModel::Coulomb);
        m.foreign = c.foreign;
        m.unit_known = c.unit_known;
        m.physics = PhysicsOptions{};
        m.physics.unit = PotentialUnit::KTPerE;
        const std::string name = "foreign" + std::string(extension);
        write_map(m, path(name), {});
        bool unit_known = !c.unit_known;
        const PotentialMap back = read_map(path(name), &unit_known);
        EXPECT_EQ(unit_known, c.unit_known);
        EXPECT_EQ(back.unit_known, c.unit_known);
        EXPECT_EQ(back.foreign, c.foreign_back);
        if (c.unit_known) EXPECT_EQ(back.physics.unit, PotentialUnit::KTPerE);
        EXPECT_EQ(back.values, m.values);
      }
}

TEST_F(MapReaders, AForeignTitleWithEspgridPhysicsKeepsOnlyTheUnit) {
  // fuzz_map's finding (CI, 2026-11-27): a .dx whose title says "not computed by espgrid (" and whose
  // next comment is an espgrid physics line read as a foreign map with a model and medium, which
  // its writer then drops ("model and medium unknown"): the round trip changed the physics. Foreign
  // wins on reading, so what is read is what is written back.
  const std::string text =
      "# Electrostatic potential by espgrid 0.1.0 (direct Coulombnot computed by espgrid ( summation)\n"
      "# two.xyz, 2 atoms, total charge +0.0000 e\n"
      "# Potential in kT/e (T = 298.15 K), dielectric 78.54, model debye, ionic strength 0.15 M\n"
      "object 1 class gridpositions counts 2 2 2\norigin 0 0 0\ndelta 0.5 0 0\ndelta 0 0.5 0\ndelta 0 0 0.5\n"
      "object 2 class gridconnections counts 2 2 2\n"
      "object 3 class array type double rank 0 items 8 data follows\n1 2 3\n4 5 6\n7 8\n";
  bool unit_known = false;
  const PotentialMap m = read_map_bytes(MapFormat::Dx, "edited.dx", text, &unit_known);
  EXPECT_FALSE(m.foreign.empty());
  ASSERT_TRUE(unit_known);
  EXPECT_EQ(m.physics.unit, PotentialUnit::KTPerE);
  EXPECT_EQ(m.physics.model, PhysicsOptions{}.model);  // not debye: a foreign map's model is unknown
  EXPECT_EQ(m.physics.ionic_strength, PhysicsOptions{}.ionic_strength);
  write_map(m, path("edited-back.dx"), {});
  bool again = false;
  const PotentialMap back = read_map(path("edited-back.dx"), &again);
  EXPECT_TRUE(again);
  EXPECT_EQ(back.foreign, m.foreign);
  EXPECT_EQ(back.physics.unit, m.physics.unit);
  EXPECT_EQ(back.physics.model, m.physics.model);
  EXPECT_EQ(back.physics.dielectric, m.physics.dielectric);
  EXPECT_EQ(back.physics.temperature, m.physics.temperature);
  EXPECT_EQ(back.physics.ionic_strength, m.physics.ionic_strength);
  EXPECT_EQ(back.values, m.values);
}

TEST_F(MapReaders, MrcHeaderNumbersReadAsTheDecimalsTheyStandFor) {
  // 0.35 and -12.25 + ... are not floats; the .mrc holds the nearest floats, and the reader
  // gives back the shortest decimals that round to them: the grid a .dx of it would print.
  const PotentialMap m = sample_map();
  write_map(m, path("m.mrc"));
  const PotentialMap back = read_map(path("m.mrc"));
  EXPECT_EQ(back.grid.spacing, m.grid.spacing);
  EXPECT_EQ(back.grid.origin, m.grid.origin);
}

// ==== .mrc placement for every reader ==================================================

/// The header of an .mrc: the 56 words (1-based as in the spec).
struct MrcWords {
  std::string bytes;
  std::int32_t integer(int w) const {
    std::int32_t v;
    std::memcpy(&v, bytes.data() + 4 * (w - 1), 4);
    return v;
  }
  float real(int w) const { return std::bit_cast<float>(integer(w)); }
  void set(int w, std::int32_t v) { std::memcpy(bytes.data() + 4 * (w - 1), &v, 4); }
  void set(int w, float v) { std::memcpy(bytes.data() + 4 * (w - 1), &v, 4); }
  std::string label(int l) const { return bytes.substr(224 + 80 * static_cast<std::size_t>(l), 80); }
};

TEST_F(MapReaders, MrcStartIndicesCarryTheOriginForEveryReader) {
  PotentialMap m = sample_map();
  const MrcWords w{written(m, "m.mrc")};
  // gemmi and Coot place point i at (NXSTART + i) * CELLA / MX; VMD, Mol*, PyMOL take ORIGIN
  // when it is not 0, else the same; GridDataFormats adds ORIGIN and NXSTART * CELLA / MX.
  // With ORIGIN 0 all of them put the map where it is.
  for (int a = 0; a < 3; ++a) {
    const auto s = static_cast<std::size_t>(a);
    const int start = w.integer(5 + a), samples = w.integer(8 + a);
    EXPECT_EQ(start, static_cast<int>(std::lround(m.grid.origin[s] / m.grid.spacing[s]))) << a;
    EXPECT_NE(start, 0) << a;  // the old writer's 0 put the map at the origin 0 in gemmi
    const double placed = start * static_cast<double>(w.real(11 + a)) / samples;
    // float32 CELLA: ~6e-8 relative of a cell length of at most 35 Å, times |start| ≤ 35 voxels
    EXPECT_NEAR(placed, m.grid.origin[s], 1e-5) << a;
    EXPECT_EQ(w.real(50 + a), 0.0f) << a;  // ORIGIN 0: no reader adds a second offset
  }
  EXPECT_TRUE(mrc_placement(m.grid).exact);
  // Off the lattice (an explicit --origin) on one axis only: all three axes the cryo-EM way,
  // start 0 and ORIGIN the origin (a reader that finds ORIGIN non-zero takes it for every axis).
  m.grid.origin = {-12.25, 0.1, 1.75};
  const MrcPlacement off = mrc_placement(m.grid);
  EXPECT_FALSE(off.exact);
  EXPECT_EQ(off.start, (std::array<std::int32_t, 3>{0, 0, 0}));
  const MrcWords o{written(m, "o.mrc")};
  for (int a = 0; a < 3; ++a) {
    EXPECT_EQ(o.integer(5 + a), 0) << a;
    EXPECT_EQ(o.real(50 + a), static_cast<float>(m.grid.origin[static_cast<std::size_t>(a)])) << a;
  }
  EXPECT_EQ(read_map(path("o.mrc")).grid.origin, m.grid.origin);
}

TEST_F(MapReaders, DefaultGridsAreOnTheLatticeSoEveryMrcIsPlacedExactly) {
  Atoms atoms;
  atoms.push_back(-3.123, 2.71, 10.05, 1.0, 1.5);
  atoms.push_back(4.3, 7.1, 12.0, -1.0, 1.5);
  for (const double h : {0.35, 0.5, 1.0 / 3.0, 0.2, 1.7}) {
    GridRequest request;
    request.spacing = {h, h, h};
    request.padding = 4.321;
    const GridSpec g = make_grid(request, atoms);
    EXPECT_TRUE(mrc_placement(g).exact) << h;
  }
}

TEST_F(MapReaders, MrcPhysicsLabelsSplitAndOldLabelsStillRead) {
  // Debye's comment is longer than one 80-character label: it continues in the next.
  const PotentialMap m = sample_map(PairModel::Debye);
  const MrcWords w{written(m, "d.mrc")};
  EXPECT_EQ(w.label(1).substr(0, 13), "Potential in ");
  EXPECT_EQ(w.label(1).find_last_not_of(' '), w.label(1).rfind(','));  // continues
  EXPECT_NE(w.label(2).find("ionic strength 0.15 M"), std::string::npos) << w.label(2);
  // The single label espgrid wrote before (comment + ", model NAME").
  MrcWords old{written(sample_map(), "old.mrc")};
  std::string label = "Potential in V (T = 298.15 K), dielectric 4, model coulomb";
  label.resize(80, ' ');
  old.bytes.replace(224 + 80, 80, label);
  bool known = false;
  const PotentialMap back = read_map(write("old2.mrc", old.bytes), &known);
  EXPECT_TRUE(known);
  EXPECT_EQ(back.physics.unit, PotentialUnit::Volt);
  EXPECT_EQ(back.physics.dielectric, 4);
}

// ==== .dx read by its structure ========================================================

TEST_F(MapReaders, DxValueTooManyOrTooFewIsFoundOnItsLine) {
  const std::string data = "1 2 3\n4 5 6\n7 8\n";
  const PotentialMap ok = read_map(write("ok.dx", good_dx(data)));
  EXPECT_EQ(ok.values[1], 5.0f);  // point (1,0,0): the fifth value (z fastest in the file)
  // One extra number on the first data line: every later value would shift by one place.
  // The data starts on line 9 of good_dx.
  const struct {
    const char* name;
    std::string data, message;
  } cases[] = {
      // one extra number on a data line: before, every later value shifted by one place, exit 0
      {"a.dx", "1 2 3 9\n4 5 6\n7 8\n", "a.dx:9: this data line holds 4 values where the lines after it hold 3"},
      {"b.dx", "1 2 3\n4 5 6 9\n7 8\n", "b.dx:10: this data line holds 4 values where the first (line 9) holds 3"},
      {"c.dx", "1 2 3\n4 5\n7 8 9\n", "c.dx:10: this data line holds 2 values where the first (line 9) holds 3"},
      {"d.dx", "1 2 3\n4 5 6\n7 8 9\n", "d.dx:11: this data line holds more than the 8 values"},
      {"e.dx", "1 2 3\n4 5 6\n7\n", "e.dx:12: the data ends after 7 of the 8 values"},
      {"f.dx", "1 2 3\n4 5 6\n7 8\n9\n", "f.dx:12: a number after the 8 values of the data"},
      {"g.dx", "1 2 3\n4 5 6\n7 8\nhello\n", "g.dx:12: unexpected 'hello' after the data"},
      {"h.dx", "1 2 x\n", "h.dx:9: value 'x' is not a number"},
  };
  for (const auto& c : cases) {
    const std::string message = read_error(c.name, good_dx(c.data));
    EXPECT_TRUE(contains(message, c.message)) << message << "\nexpected: " << c.message;
  }
}

TEST_F(MapReaders, DxImpossibleHeadersAreRefusedAtTheirLine) {
  const std::string deltas = "delta 1 0 0\ndelta 0 1 0\ndelta 0 0 1\n";
  const std::string connections = "object 2 class gridconnections counts 2 2 2";
  const std::string array = "object 3 class array type double rank 0 items 8 data follows";
  const std::string data = "1 2 3\n4 5 6\n7 8\n";
  const std::string counts = "object 1 class gridpositions counts 2 2 2";
  struct Case {
    std::string text, message;
  } cases[] = {
      // overflowing counts: once a wrapped point count and a write past the buffer (SIGSEGV)
      {dx("object 1 class gridpositions counts 4294967296 4294967296 1", "origin 0 0 0", deltas,
          "object 2 class gridconnections counts 4294967296 4294967296 1",
          "object 3 class array type double rank 0 items 0 data follows", ""),
       ":2: grid count '4294967296' must be a whole number from 1 to 1048576"},
      {dx("object 1 class gridpositions counts 1048576 1048576 1048576", "origin 0 0 0", deltas,
          "object 2 class gridconnections counts 1048576 1048576 1048576",
          "object 3 class array type double rank 0 items 0 data follows", ""),
       ": grid of 1048576 x 1048576 x 1048576 = 1,152,921,504,606,846,976 points is absurdly large"},
      {dx(counts, "origin 0 0 0", "delta 0 0 0\ndelta 0 1 0\ndelta 0 0 1\n", connections, array, data),
       ":4: grid spacing '0' along x must be positive"},
      {dx(counts, "origin 0 0 0", "delta -1 0 0\ndelta 0 1 0\ndelta 0 0 1\n", connections, array, data),
       ":4: grid spacing '-1' along x must be positive"},
      {dx(counts, "origin 0 0 0", "delta 1 0 0\ndelta 0 1e300 0\ndelta 0 0 1\n", connections, array, data),
       ":6: grid spacing along y is 1e+300 Å"},
      {dx(counts, "origin 1e300 0 0", deltas, connections, array, data), ":6: grid origin along x is 1e+300 Å"},
      {dx(counts, "origin nan 0 0", deltas, connections, array, data), ":3: origin 'nan' is not a finite number"},
      {dx(counts, "origin 0 0 0", "delta 1 0.5 0\ndelta 0 1 0\ndelta 0 0 1\n", connections, array, data),
       ":4: delta 1 is not along the x axis"},
      {dx(counts, "origin 0 0 0", deltas, "object 2 class gridconnections counts 2 2 3", array, data),
       ":7: the gridconnections counts differ from the gridpositions counts of line 2"},
      {dx(counts, "origin 0 0 0", deltas, connections, "object 3 class array type double rank 0 items 9 data follows",
          data),
       ":8: items 9 is not the grid's 2 x 2 x 2 = 8 points"},
      {dx(counts, "origin 0 0 0", deltas, connections, "object 3 class array type double rank 1 items 8 data follows",
          data),
       ":8: the array has rank '1'"},
      {dx(counts, "origin 0 0 0", deltas, connections, "object 3 class array type double rank 0 items 8 data file x",
          data),
       ":8: cannot read 'data'"},
      {"# Potential in kT/e (T = nan K), dielectric 1\n" + good_dx(data).substr(good_dx(data).find('\n') + 1),
       ":1: the map's header says: temperature must be a positive number of kelvin"},
      {"# Potential in kT/e (T = 298.15 K), dielectric 0\n" + good_dx(data).substr(good_dx(data).find('\n') + 1),
       ":1: the map's header says: dielectric must be a positive number"},
      {good_dx("1 2 3\n4 1e39 6\n7 8\n"), ":10: value '1e39' is beyond the range of a float32 map"},
      {good_dx("1 2 3\n4 nan 6\n7 8\n"), ":10: value 'nan' is not a finite number"},
      {good_dx("1 2 3\n4 1e999 6\n7 8\n"), ":10: value '1e999' is not a number"},
      {"", ":1: the file ends before 'object 1 class gridpositions counts NX NY NZ' (it is empty)"},
      {std::string("object 1 class gridpositions counts 2 2 2\n") + "\x01\x02", ":2: binary data"},
  };
  for (const Case& c : cases) {
    const std::string message = read_error("x.dx", c.text);
    EXPECT_TRUE(contains(message, path("x.dx") + c.message)) << message << "\nexpected: " << c.message;
  }
}

TEST_F(MapReaders, DxFromOtherWritersReads) {
  // GridDataFormats 1.0 (quoted type, its own trailer) and APBS (its unit comment).
  const std::string gdf =
      "# OpenDX density file written by gridDataFormats.Grid.export()\n"
      "object 1 class gridpositions counts 2 1 2\norigin 60.000000 -3.500000 0.000000\n"
      "delta 0.5 0 0\ndelta 0 1 0\ndelta 0 0 0.25\nobject 2 class gridconnections counts 2 1 2\n"
      "object 3 class array type \"float\" rank 0 items 4 data follows\n1.5 2 3\n4\n"
      "attribute \"dep\" string \"positions\"\nobject \"density\" class field\n"
      "component \"positions\" value 1\ncomponent \"connections\" value 2\ncomponent \"data\" value 3\n";
  bool known = true;
  const PotentialMap g = read_map(write("gdf.dx", gdf), &known);
  EXPECT_FALSE(known);  // no unit said: convert asks for --units
  EXPECT_EQ(g.grid.origin, (std::array<double, 3>{60, -3.5, 0}));
  EXPECT_EQ(g.values, (std::vector<float>{1.5f, 3, 2, 4}));  // x fastest: (0,0,0) (1,0,0) (0,0,1) (1,0,1)
  const PotentialMap a = read_map(write("apbs.dx", "# POTENTIAL (kT/e)\n" + gdf.substr(gdf.find('\n') + 1)), &known);
  EXPECT_TRUE(known);
  EXPECT_EQ(a.physics.unit, PotentialUnit::KTPerE);
}

#if ESPGRID_HAVE_ZLIB
TEST_F(MapReaders, TruncatedOrCorruptDxGzIsAnError) {
  const std::string whole = written(sample_map(), "m.dx.gz");
  write("cut.dx.gz", whole.substr(0, whole.size() * 2 / 3));
  EXPECT_THROW(read_map(path("cut.dx.gz")), InputError);
  std::string corrupt = whole;
  corrupt[corrupt.size() / 2] ^= 0x5a;
  write("bad.dx.gz", corrupt);
  EXPECT_THROW(read_map(path("bad.dx.gz")), InputError);
  // A .dx that holds gzip data reads as what it is.
  write("named.dx", whole);
  EXPECT_EQ(read_map(path("named.dx")).values, sample_map().values);
}
#endif

// ==== .mrc and .vti read by their sizes ================================================

TEST_F(MapReaders, MrcTruncatedOrWithBytesAfterTheDataIsAnError) {
  const std::string whole = written(sample_map(), "m.mrc");
  EXPECT_TRUE(contains(read_error("cut.mrc", whole.substr(0, whole.size() - 4)), ": it is truncated"));
  EXPECT_TRUE(contains(read_error("long.mrc", whole + "xxxx"), "4 bytes after the"));
  EXPECT_TRUE(contains(read_error("head.mrc", whole.substr(0, 500)), "an MRC map starts with a 1024-byte header"));
  struct Edit {
    int word;
    std::int32_t integer;
    float real;
    bool is_real;
    const char* message;
  } edits[] = {{4, 0, 0, false, "MODE is 0"},
               {1, 0, 0, false, "NX is 0"},
               {2, 2000000000, 0, false, "NY is 2000000000"},
               {8, 0, 0, false, "MX is 0"},
               {11, 0, 0.0f, true, "(CELLA) is 0"},
               {12, 0, std::numeric_limits<float>::infinity(), true, "(CELLA) is inf"},
               {14, 0, 60.0f, true, "cell angles are 60, 90, 90"},
               {17, 2, 0, false, "MAPC, MAPR, MAPS are 2, 2, 3"},
               // The most negative int: MAPC - 1 must not overflow (a fuzz_map finding).
               {17, std::numeric_limits<std::int32_t>::min(), 0, false, "MAPC, MAPR, MAPS are -2147483648, 2, 3"},
               {24, -5, 0, false, "NSYMBT"},
               {50, 0, 1e30f, true, "grid origin along x is 1e+30"}};
  for (const Edit& e : edits) {
    MrcWords w{whole};
    if (e.is_real)
      w.set(e.word, e.real);
    else
      w.set(e.word, e.integer);
    const std::string message = read_error("e.mrc", w.bytes);
    EXPECT_TRUE(contains(message, path("e.mrc") + ": ")) << message;
    EXPECT_TRUE(contains(message, e.message)) << message << "\nexpected: " << e.message;
  }
  MrcWords nan{whole};
  std::memcpy(nan.bytes.data() + 1024 + 4 * 13, "\x00\x00\xc0\x7f", 4);  // point 13 = (3, 2, 0): NaN
  EXPECT_TRUE(contains(read_error("nan.mrc", nan.bytes), "the value at grid point (3, 2, 0) is NaN"));
}

TEST_F(MapReaders, MrcInAnyAxisOrderAndByteOrderReadsTheSameMap) {
  const PotentialMap m = sample_map();
  const MrcWords w{written(m, "m.mrc")};
  const auto nx = static_cast<std::size_t>(m.grid.dims[0]), ny = static_cast<std::size_t>(m.grid.dims[1]),
             nz = static_cast<std::size_t>(m.grid.dims[2]);
  // Sections along x, rows along y, columns along z (MAPC 3, MAPR 2, MAPS 1), as some CCP4
  // programs write: NX counts z.
  MrcWords zyx{w.bytes.substr(0, 1024)};
  zyx.set(1, static_cast<std::int32_t>(nz));
  zyx.set(3, static_cast<std::int32_t>(nx));
  zyx.set(5, w.integer(7));
  zyx.set(7, w.integer(5));
  zyx.set(17, 3);
  zyx.set(19, 1);
  for (std::size_t i = 0; i < nx; ++i)
    for (std::size_t j = 0; j < ny; ++j)
      for (std::size_t k = 0; k < nz; ++k)
        zyx.bytes.append(reinterpret_cast<const char*>(&m.values[i + nx * (j + ny * k)]), 4);
  const PotentialMap a = read_map(write("zyx.mrc", zyx.bytes));
  EXPECT_EQ(a.values, m.values);
  EXPECT_EQ(a.grid.dims, m.grid.dims);
  // Big-endian, as the machine stamp 0x11 0x11 says.
  std::string big = w.bytes;
  for (std::size_t at = 0; at < big.size(); at += 4) {
    if (at >= 208 && at < 224 + 800 && at != 212 && !(at >= 216 && at < 224)) continue;  // text: MAP, labels
    std::swap(big[at], big[at + 3]);
    std::swap(big[at + 1], big[at + 2]);
  }
  big[212] = big[213] = 0x11;
  const PotentialMap b = read_map(write("big.mrc", big));
  EXPECT_EQ(b.values, m.values);
  EXPECT_EQ(b.grid.spacing, m.grid.spacing);
}

/// The byte offset of the potential's byte count in an uncompressed .vti of espgrid.
std::size_t potential_count_at(const std::string& vti) {
  const std::size_t data = vti.find("_", vti.find("<AppendedData")) + 1;
  const std::size_t key = vti.find("Name=\"potential\"");
  const std::size_t offset = vti.find("offset=\"", key) + 8;
  return data + std::stoul(vti.substr(offset));
}

TEST_F(MapReaders, VtiTruncatedOrWithWrongSizesIsAnError) {
  const PotentialMap m = sample_map();
  const std::string whole = written(m, "m.vti");
  const std::size_t count_at = potential_count_at(whole);
  const std::size_t data_at = count_at + 8, data_end = data_at + 4 * m.values.size();
  const std::string tail = whole.substr(data_end);
  // Half the data removed, the closing tags kept: once rendered with values up to 2.4e29.
  const std::string half = whole.substr(0, data_at + 2 * m.values.size()) + tail;
  EXPECT_TRUE(contains(read_error("half.vti", half), "the file is truncated")) << read_error("half.vti", half);
  EXPECT_TRUE(contains(read_error("cut.vti", whole.substr(0, whole.size() - 40)), "does not end with </AppendedData>"));
  EXPECT_TRUE(
      contains(read_error("extra.vti", whole.substr(0, data_end) + "junk" + tail), "bytes after the last array"));
  std::string small = whole;
  const std::uint64_t fewer = 4 * (m.values.size() - 1);
  std::memcpy(small.data() + count_at, &fewer, 8);
  EXPECT_TRUE(contains(read_error("small.vti", small),
                       "array 'potential' holds 236 bytes, not the 60 x 1 x 4 = 240 of its 60 tuples"));
  std::string huge = whole;
  const std::uint64_t lots = std::uint64_t{1} << 62;
  std::memcpy(huge.data() + count_at, &lots, 8);
  EXPECT_TRUE(contains(read_error("huge.vti", huge), "the file is truncated"));
  std::string nan = whole;
  std::memcpy(nan.data() + data_at + 4 * 13, "\x00\x00\x80\x7f", 4);
  EXPECT_TRUE(contains(read_error("inf.vti", nan), "the value at grid point (3, 2, 0) is infinite"));
  // Physics that `espgrid map` would refuse: temperature_K = NaN (once written to a .vti).
  std::string hot = whole;
  const std::size_t t = hot.find("Name=\"temperature_K\"");
  const std::size_t t_at =
      hot.find("_", hot.find("<AppendedData")) + 1 + std::stoul(hot.substr(hot.find("offset=\"", t) + 8)) + 8;
  const double not_a_number = std::numeric_limits<double>::quiet_NaN();
  std::memcpy(hot.data() + t_at, &not_a_number, 8);
  EXPECT_TRUE(contains(read_error("hot.vti", hot), "temperature must be a positive number of kelvin, got nan") ||
              contains(read_error("hot.vti", hot), "temperature must be a positive number of kelvin (at least"))
      << read_error("hot.vti", hot);
  std::string bad_extent = whole;
  bad_extent.replace(bad_extent.find("WholeExtent=\"0 4"), 16, "WholeExtent=\"4 0");
  EXPECT_TRUE(contains(read_error("extent.vti", bad_extent), "is empty"));
  EXPECT_TRUE(contains(read_error("text.vti", "hello"), "this is not a VTK XML file"));
}

#if ESPGRID_HAVE_VTK
TEST_F(MapReaders, CompressedVtiTruncatedIsAnErrorNotACrash) {
  MapWriteOptions zlib;
  zlib.vti_compression = VtiCompression::ZLib;
  PotentialMap big = sample_map();
  big.grid.dims = {40, 30, 20};
  big.values.assign(big.grid.point_count(), 0.0f);
  for (std::size_t i = 0; i < big.values.size(); ++i) big.values[i] = std::sin(0.001f * static_cast<float>(i));
  const std::string whole = written(big, "z.vti", zlib);
  const std::size_t data = whole.find("_", whole.find("<AppendedData")) + 1;
  const std::string tail = whole.substr(whole.rfind("\n  </AppendedData>"));
  for (const double keep : {0.95, 0.6, 0.2}) {
    const std::size_t cut =
        data + static_cast<std::size_t>(keep * static_cast<double>(whole.size() - tail.size() - data));
    const std::string message = read_error("zcut.vti", whole.substr(0, cut) + tail);
    EXPECT_TRUE(contains(message, "the file is truncated")) << message;
  }
}
#endif

#if ESPGRID_HAVE_VTK
// Every encoding VTK 9 writes, read by espgrid's own decoder (maps/vti_decoding.h; VTK's reader
// crashed on damaged files): `from` (an uncompressed .vti of espgrid, read by VTK) written back
// by VTK's writer in each data mode, compressor, byte-count width and byte order.
struct VtkEncoding {
  const char* mode;  ///< "raw", "base64" (appended), "binary" (inline base64), "ascii"
  int compressor;    ///< vtkXMLWriter::NONE, ZLIB, LZ4, LZMA
  bool uint64_counts, big_endian;
  std::string name() const {
    return std::string(mode) + "-c" + std::to_string(compressor) + (uint64_counts ? "-u64" : "-u32") +
           (big_endian ? "-be" : "-le") + ".vti";
  }
};

void vtk_rewrite(const std::string& from, const std::string& to, const VtkEncoding& e) {
  vtkNew<vtkXMLImageDataReader> reader;
  reader->SetFileName(from.c_str());
  reader->Update();
  vtkNew<vtkXMLImageDataWriter> writer;
  writer->SetInputData(reader->GetOutput());
  writer->SetFileName(to.c_str());
  const std::string mode = e.mode;
  if (mode == "raw" || mode == "base64") {
    writer->SetDataModeToAppended();
    writer->SetEncodeAppendedData(mode == "base64");
  } else if (mode == "binary") {
    writer->SetDataModeToBinary();
  } else {
    writer->SetDataModeToAscii();
  }
  writer->SetCompressorType(e.compressor);
  // VTK's default level (5) for appended raw data with 32-bit little-endian headers, as ParaView
  // writes; level 1 for the other layouts, which differ from it in framing only: LZMA at 5
  // allocates and clears ~100 MB a file, which under AddressSanitizer (freed memory is not reused)
  // took 60 s of this test's 61 on CI's machine. The decoders read every level alike.
  if (std::string(e.mode) != "raw" || e.uint64_counts || e.big_endian) writer->SetCompressionLevel(1);
  if (e.uint64_counts)
    writer->SetHeaderTypeToUInt64();
  else
    writer->SetHeaderTypeToUInt32();
  if (e.big_endian)
    writer->SetByteOrderToBigEndian();
  else
    writer->SetByteOrderToLittleEndian();
  ASSERT_EQ(writer->Write(), 1) << to;
}

/// A map of 24,000 points: 94 KiB of float32, three of VTK's 32 KiB compression blocks.
PotentialMap multi_block_map(PairModel model) {
  PotentialMap m = sample_map(model);
  m.grid.dims = {40, 30, 20};
  m.values.resize(m.grid.point_count());
  for (std::size_t i = 0; i < m.values.size(); ++i)
    m.values[i] = std::sin(0.001f * static_cast<float>(i)) * std::pow(10.0f, static_cast<float>(i % 17) - 8.0f);
  return m;
}

TEST_F(MapReaders, VtiEveryEncodingVtkWritesReadsBackExactly) {
  for (const PairModel model : {PairModel::Coulomb, PairModel::Debye}) {
    const PotentialMap m = multi_block_map(model);
    write_map(m, path("m.vti"));
    for (const char* mode : {"raw", "base64", "binary", "ascii"})
      for (const int compressor : {0, 1, 2, 3})
        for (const bool uint64_counts : {false, true})
          for (const bool big_endian : {false, true}) {
            const VtkEncoding e{mode, compressor, uint64_counts, big_endian};
            SCOPED_TRACE(e.name() + " " + model_name(model));
            vtk_rewrite(path("m.vti"), path(e.name()), e);
            bool unit_known = false;
            const PotentialMap back = read_map(path(e.name()), &unit_known);
            EXPECT_TRUE(unit_known);
            expect_same(m, back);  // VTK's ascii floats carry enough digits to be exact
          }
  }
}

TEST_F(MapReaders, VtiDamagedEncodingsAreErrorsNamingTheArray) {
  const PotentialMap m = multi_block_map(PairModel::Coulomb);
  write_map(m, path("m.vti"));
  const auto encoded = [&](const VtkEncoding& e) {
    vtk_rewrite(path("m.vti"), path(e.name()), e);
    return slurp(path(e.name()));
  };
  // Each compressor's first block of the potential starting with 16 zero bytes: none of the
  // three decodes it (zlib: method 0 in its header; LZ4: a match at offset 0; LZMA: no .xz
  // magic). Damage to LZ4 data can go unseen: its blocks carry no checksum (README, formats).
  for (const int compressor : {1, 2, 3}) {
    SCOPED_TRACE(compressor);
    std::string file = encoded({"raw", compressor, false, false});
    const std::size_t data = file.find('_', file.find("<AppendedData")) + 1;
    const std::size_t key = file.find("Name=\"potential\"");
    const std::size_t offset = std::stoul(file.substr(file.find("offset=\"", key) + 8));
    std::uint32_t blocks;
    std::memcpy(&blocks, file.data() + data + offset, 4);
    ASSERT_EQ(blocks, 3u);
    const std::size_t first_block = data + offset + 4 * (3 + blocks);
    for (std::size_t i = 0; i < 16; ++i) file[first_block + i] = '\0';
    const std::string message = read_error("bad-block.vti", file);
    EXPECT_TRUE(contains(message, "array 'potential': block 1 of 3 does not decompress")) << message;
    // Cut inside the blocks, the closing tags kept: truncated.
    const std::string cut = file.substr(0, first_block + 100) + file.substr(file.rfind("\n  </AppendedData>"));
    EXPECT_TRUE(contains(read_error("cut-blocks.vti", cut), "the file is truncated")) << read_error("c.vti", cut);
  }
  // Inline base64 with a character outside the alphabet.
  std::string binary = encoded({"binary", 0, false, false});
  const std::size_t potential_text = binary.find('>', binary.find("Name=\"potential\"")) + 1;
  const std::size_t star = binary.find_first_not_of(" \n", potential_text) + 40;
  binary[star] = '*';
  EXPECT_TRUE(contains(read_error("star.vti", binary), "array 'potential' is not valid base64"));
  // Inline base64 cut short (the closing tags kept).
  std::string short_binary = encoded({"binary", 1, true, false});
  const std::size_t at = short_binary.find("</DataArray>", short_binary.find("Name=\"potential\""));
  short_binary.erase(at - 200, 200);
  EXPECT_TRUE(contains(read_error("short.vti", short_binary), "array 'potential'"))
      << read_error("s.vti", short_binary);
  // Ascii: a word that is not a number (at its line), one value too few.
  std::string ascii = encoded({"ascii", 0, false, false});
  const std::size_t values = ascii.find('>', ascii.find("Name=\"potential\"")) + 1;
  const std::size_t first = ascii.find_first_not_of(" \n", values);
  const std::size_t first_end = ascii.find_first_of(" \n", first);
  std::string word = ascii;
  word.replace(first, first_end - first, "0x1p3q");
  const std::string word_error = read_error("word.vti", word);
  EXPECT_TRUE(contains(word_error, "array 'potential' value 1 '0x1p3q' is not a number")) << word_error;
  const auto line = std::count(ascii.begin(), ascii.begin() + static_cast<std::ptrdiff_t>(first), '\n') + 1;
  EXPECT_TRUE(contains(word_error, ":" + std::to_string(line) + ":")) << word_error;
  std::string fewer = ascii;
  fewer.erase(first, first_end - first);
  EXPECT_TRUE(contains(read_error("fewer.vti", fewer), "array 'potential' holds 23999 values, not the 24000 x 1"))
      << read_error("f.vti", fewer);
}
#endif

TEST_F(MapReaders, MaxGridPointsAndMemoryAreCheckedBeforeAllocating) {
  const PotentialMap m = sample_map();  // 60 points
  std::vector<std::string> names;
  for (const MapFormatInfo& f : map_format_table())
    if (f.writable()) names.push_back("m" + std::string(f.extensions.front()));
  for (const std::string& name : names) write_map(m, path(name));
  const ScopedEnv limit("ESPGRID_MAX_GRID_POINTS", "59");
  for (const std::string& name : names) {
    try {
      read_map(path(name));
      ADD_FAILURE() << name << " was read over the limit";
    } catch (const UsageError& e) {
      EXPECT_TRUE(contains(e.what(), path(name) + ": grid of 5 x 4 x 3 = 60 points is over the limit of 59 points"))
          << e.what();
    }
  }
}

// ==== end to end: `espgrid convert` ================================================================

class ConvertMaps : public MapReaders {};

TEST_F(ConvertMaps, EveryFormatConvertsToEveryOther) {
  const std::string pqr = (fs::path(ESPGRID_SOURCE_DIR) / "tests/data/pqr_whitespace.pqr").string();
  Outcome r = run({"map", pqr, "-o", path("a.dx"), "-o", path("a.mrc"), "-o", path("a.vti"), "--spacing", "1.5",
                   "--padding", "2", "--units", "V"});
  ASSERT_EQ(r.code, 0) << r;
  const PotentialMap reference = read_map(path("a.dx"));
  for (const char* from : {"a.mrc", "a.vti", "a.dx"})
    for (const char* to : {"b.dx", "b.mrc", "b.vti"}) {
      SCOPED_TRACE(std::string(from) + " -> " + to);
      r = run({"convert", path(from), "-o", path(to)});
      ASSERT_EQ(r.code, 0) << r;
      const PotentialMap back = read_map(path(to));
      EXPECT_EQ(back.values, reference.values);
      EXPECT_EQ(back.physics.unit, PotentialUnit::Volt);
      fs::remove(path(to));
    }
}

TEST_F(ConvertMaps, BadMapsAreErrorsWithFileAndLineAndWriteNothing) {
  // Before: exit 0 with every later value shifted (extra number), SIGSEGV (counts), a .mrc
  // with CELLA 0 (delta 0), "internal error" (1e39); now each the file's error, no output.
  struct Case {
    std::string name, text;
    int code;
    std::string message;
  } cases[] = {
      {"shift.dx", good_dx("1 2 3 9\n4 5 6\n7 8\n"), 1, "shift.dx:9: this data line holds 4 values"},
      // 7 values: the old reader stopped at the 7th (the end of a line) and never saw the last
      // line: every value after the extra one shifted, the last dropped, exit 0.
      {"shift7.dx",
       dx("object 1 class gridpositions counts 1 1 7", "origin 0 0 0", "delta 1 0 0\ndelta 0 1 0\ndelta 0 0 1\n",
          "object 2 class gridconnections counts 1 1 7", "object 3 class array type double rank 0 items 7 data follows",
          "1 2 3 9\n4 5 6\n7\n"),
       1, "shift7.dx:9: this data line holds 4 values where the lines after it hold 3"},
      {"nan-temperature.dx",
       "# Potential in kT/e (T = nan K), dielectric 1\n" + good_dx("1 2 3\n4 5 6\n7 8\n").substr(49), 1,
       "nan-temperature.dx:1: the map's header says: temperature must be a positive number of kelvin"},
      {"counts.dx",
       dx("object 1 class gridpositions counts 4294967296 4294967296 1", "origin 0 0 0",
          "delta 1 0 0\ndelta 0 1 0\ndelta 0 0 1\n", "object 2 class gridconnections counts 4294967296 4294967296 1",
          "object 3 class array type double rank 0 items 0 data follows", ""),
       1, "counts.dx:2: grid count '4294967296'"},
      {"delta.dx",
       dx("object 1 class gridpositions counts 2 2 2", "origin 0 0 0", "delta 0 0 0\ndelta 0 1 0\ndelta 0 0 1\n",
          "object 2 class gridconnections counts 2 2 2", "object 3 class array type double rank 0 items 8 data follows",
          "1 2 3\n4 5 6\n7 8\n"),
       1, "delta.dx:4: grid spacing '0' along x must be positive"},
      {"big.dx", good_dx("1 2 3\n4 1e39 6\n7 8\n"), 1, "big.dx:10: value '1e39' is beyond the range"},
      {"after.dx", good_dx("1 2 3\n4 5 6\n7 8\n") + "9 9 9\n", 1, "after.dx:"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    write(c.name, c.text);
    for (const char* out : {"o.mrc", "o.vti", "o.dx"}) {
      const Outcome r = run({"convert", path(c.name), "-o", path(out)});
      expect_clean_error(r, c.code, c.message);
      EXPECT_FALSE(fs::exists(path(out)));
    }
  }
}

TEST_F(ConvertMaps, HonoursMaxGridPoints) {
  write("m.dx", good_dx("1 2 3\n4 5 6\n7 8\n"));
  Child::Options limited;
  limited.env["ESPGRID_MAX_GRID_POINTS"] = "7";
  Outcome r = run({"convert", path("m.dx"), "-o", path("o.mrc")}, limited);
  expect_clean_error(r, 2, "m.dx: grid of 2 x 2 x 2 = 8 points is over the limit of 7 points");
  EXPECT_FALSE(fs::exists(path("o.mrc")));
  limited.env["ESPGRID_MAX_GRID_POINTS"] = "8";
  r = run({"convert", path("m.dx"), "-o", path("o.mrc")}, limited);
  EXPECT_EQ(r.code, 0) << r;
}

}  // namespace
}  // namespace espgrid
