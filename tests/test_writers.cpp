// Writers round-trip: the .dx parsed back, the .vti read back with VTK, and the atomic
// write never leaves a partial or non-finite map.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

#include "src/core/errors.h"
#include "src/io/map_formats.h"
#include "src/io/text_parsing.h"

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

TEST_F(Writers, NonFiniteValueIsRefusedAndNothingIsWritten) {
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    map_.values[17] = bad;
    for (const char* name : {"bad.dx", "bad.vti"}) {
      if (std::string(name).ends_with(".vti") && !vti_supported()) continue;
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

  std::ifstream raw(path("m.vti"));
  std::string head(600, '\0');
  raw.read(head.data(), 600);
  EXPECT_NE(head.find("compressor=\"vtkZLibDataCompressor\""), std::string::npos);
  EXPECT_NE(head.find("format=\"appended\""), std::string::npos);
}
#else
TEST_F(Writers, VtiIsRefusedWithoutVtk) {
  try {
    write_map(map_, path("m.vti"));
    FAIL() << "wrote .vti without VTK";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("without VTK"), std::string::npos);
  }
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
