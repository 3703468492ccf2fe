// Maps written while they are computed (maps/map_stream.h, pipeline MapFiles): the streamed file
// is byte for byte the file written from the finished map, whatever order and thread the
// planes come in; a missing, repeated or non-finite plane leaves nothing at the destination.
// The CUDA cases (one GPU, and two workers on one GPU, whose planes arrive out of order from
// two threads) skip without a GPU and fail with ESPGRID_REQUIRE_GPU=1.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <thread>

#include "src/core/errors.h"
#include "src/maps/map_format_table.h"
#include "src/maps/map_formats.h"
#include "src/maps/map_stream.h"
#include "src/pipeline/map_pipeline.h"
#include "tests/file_helpers.h"
#include "tests/pb_test_support.h"
#include "tests/test_support.h"

namespace espgrid {
namespace {

namespace fs = std::filesystem;

class Streaming : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("espgrid_streaming_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    map_.grid.dims = {13, 11, 29};
    map_.grid.origin = {-4.5, 2.25, 100.0};
    map_.grid.spacing = {0.4, 0.45, 0.35};
    map_.source = "streaming test";
    std::mt19937 rng(testing::test_seed());
    std::uniform_real_distribution<float> value(-20.0f, 20.0f);
    map_.values.resize(map_.grid.point_count());
    for (float& v : map_.values) v = value(rng);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::size_t files_in_dir() const {
    return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir_), fs::directory_iterator{}));
  }
  /// The file write_map makes of the finished map (extension `ext`): what every streamed file
  /// of that format must equal.
  std::string whole_map_file(const std::string& ext) {
    write_map(map_, path("whole" + ext));
    std::string bytes = testing::slurp(path("whole" + ext));
    fs::remove(path("whole" + ext));
    return bytes;
  }

  fs::path dir_;
  PotentialMap map_;
};

/// The extensions of the formats the table streams with the default options (MRC and
/// uncompressed .vti today): a new format with a plane writer is tested here by its entry.
std::vector<std::string> streamed_extensions() {
  std::vector<std::string> out;
  for (const MapFormatInfo& f : map_format_table())
    if (f.plane_writer && f.plane_writer(MapWriteOptions{})) out.emplace_back(f.extensions.front());
  return out;
}

TEST_F(Streaming, PlanesInOrderGiveTheWholeMapFile) {
  for (const std::string& ext : streamed_extensions()) {
    const std::string want = whole_map_file(ext);
    {
      StreamingMapWriter writer(map_, path("s" + ext));
      for (std::int64_t k = 0; k < 29; k += 3) writer.planes_ready(k, std::min<std::int64_t>(3, 29 - k));
      EXPECT_FALSE(fs::exists(path("s" + ext))) << "the destination appeared before finish()";
      writer.finish();
    }
    EXPECT_TRUE(testing::slurp(path("s" + ext)) == want) << ext;
    EXPECT_EQ(files_in_dir(), 1u) << "a temporary file was left behind";
    fs::remove(path("s" + ext));
  }
}

// Several GPUs report chunks in any order from their workers' threads: four threads here,
// each reporting a shuffled share of single planes and pairs.
TEST_F(Streaming, PlanesInAnyOrderFromSeveralThreads) {
  std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
  for (std::int64_t k = 0; k < 29;) {
    const std::int64_t count = k % 3 == 0 && k + 2 <= 29 ? 2 : 1;
    ranges.emplace_back(k, count);
    k += count;
  }
  std::mt19937 rng(testing::test_seed());
  for (const std::string& ext : streamed_extensions()) {
    const std::string want = whole_map_file(ext);
    std::shuffle(ranges.begin(), ranges.end(), rng);
    StreamingMapWriter writer(map_, path("s" + ext));
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        for (std::size_t r = t; r < ranges.size(); r += 4) writer.planes_ready(ranges[r].first, ranges[r].second);
      });
    for (auto& t : threads) t.join();
    writer.finish();
    EXPECT_TRUE(testing::slurp(path("s" + ext)) == want) << ext << ", seed " << testing::test_seed();
  }
}

TEST_F(Streaming, MissingPlaneWritesNothing) {
  { std::ofstream(path("keep.mrc")) << "old content\n"; }
  StreamingMapWriter writer(map_, path("keep.mrc"));
  writer.planes_ready(0, 10);
  writer.planes_ready(11, 18);  // plane 10 never comes
  try {
    writer.finish();
    FAIL() << "finished a map with a plane missing";
  } catch (const Error& e) {
    EXPECT_TRUE(testing::contains(e.what(), "1 of 29 planes")) << e.what();
  }
  EXPECT_EQ(testing::slurp(path("keep.mrc")), "old content\n");
}

TEST_F(Streaming, RepeatedOrOutOfRangePlaneWritesNothing) {
  for (const auto& [first, count] : {std::pair<std::int64_t, std::int64_t>{5, 1}, {28, 2}}) {
    {
      StreamingMapWriter writer(map_, path("r.mrc"));
      writer.planes_ready(0, 29);
      writer.planes_ready(first, count);
      EXPECT_THROW(writer.finish(), Error);
    }
    EXPECT_EQ(files_in_dir(), 0u);
  }
}

TEST_F(Streaming, NonFiniteValueIsNamedAndNothingIsWritten) {
  map_.values[13 * 11 * 20 + 13 * 4 + 7] = std::numeric_limits<float>::quiet_NaN();
  {
    StreamingMapWriter writer(map_, path("n.mrc"));
    writer.planes_ready(0, 29);
    try {
      writer.finish();
      ADD_FAILURE() << "wrote a map holding NaN";
    } catch (const Error& e) {
      EXPECT_TRUE(testing::contains(e.what(), "(7, 4, 20) is not finite")) << e.what();
      EXPECT_TRUE(testing::contains(e.what(), path("n.mrc")))
          << "the message should name the destination: " << e.what();
    }
    EXPECT_FALSE(fs::exists(path("n.mrc")));
  }
  EXPECT_EQ(files_in_dir(), 0u) << "the temporary file outlived the writer";
}

// A map that arrives whole (a PB solve reports every plane at once) is a batch of 16 MB or more: its
// planes are summarized on several threads (PlaneWriter::write_planes_on), its bytes written in one
// call (directly to the disk where the file system allows). The file is write_map's, byte for byte,
// for each streamed format; a non-finite value is named by the first such plane, as one thread would.
TEST_F(Streaming, AWholeLargeMapAtOnceGivesTheWholeMapFile) {
  map_.grid.dims = {211, 197, 113};  // 4.7 M values, 18.8 MB
  map_.values.resize(map_.grid.point_count());
  std::mt19937 rng(testing::test_seed());
  std::uniform_real_distribution<float> value(-20.0f, 20.0f);
  for (float& v : map_.values) v = value(rng);
  for (const std::string& ext : streamed_extensions()) {
    const std::string want = whole_map_file(ext);
    {
      MapWriteOptions options;
      options.threads = 3;
      StreamingMapWriter writer(map_, path("big" + ext), options);
      writer.planes_ready(0, 113);
      writer.finish();
    }
    EXPECT_TRUE(testing::slurp(path("big" + ext)) == want) << ext << ", seed " << testing::test_seed();
    fs::remove(path("big" + ext));
  }
  map_.values[211 * 197 * 90 + 5] = std::numeric_limits<float>::infinity();
  map_.values[211 * 197 * 40 + 211 * 3 + 2] = std::numeric_limits<float>::quiet_NaN();
  MapWriteOptions options;
  options.threads = 4;
  StreamingMapWriter writer(map_, path("n.mrc"), options);
  writer.planes_ready(0, 113);
  try {
    writer.finish();
    ADD_FAILURE() << "wrote a map holding NaN";
  } catch (const Error& e) {
    EXPECT_TRUE(testing::contains(e.what(), "(2, 3, 40) is not finite")) << e.what();
  }
  EXPECT_FALSE(fs::exists(path("n.mrc")));
}

// A computation that fails part way destroys the writer without finish(): nothing is left.
TEST_F(Streaming, AbandonedWriterLeavesNothing) {
  {
    StreamingMapWriter writer(map_, path("a.mrc"));
    writer.planes_ready(0, 7);
  }
  EXPECT_EQ(files_in_dir(), 0u);
}

TEST_F(Streaming, RefusesFormatsThatDoNotStream) {
  MapWriteOptions compressed;
  compressed.vti_compression = VtiCompression::ZLib;
  EXPECT_FALSE(streams_planes(MapFormat::Dx, {}));
  EXPECT_TRUE(streams_planes(MapFormat::Vti, {}));
  EXPECT_FALSE(streams_planes(MapFormat::Vti, compressed));
  EXPECT_TRUE(streams_planes(MapFormat::Mrc, {}));
  EXPECT_THROW(StreamingMapWriter(map_, path("d.dx")), Error);
  EXPECT_THROW(StreamingMapWriter(map_, path("z.vti"), compressed), Error);
  EXPECT_EQ(files_in_dir(), 0u);
}

/// compute_map through MapFiles with `kernel` (and `run`): the streamed .mrc and .vti equal the
/// files written from the finished map, the .dx is written after it, and the map matches the oracle.
void expect_streamed_files_match(const std::string& kernel_name, const RunOptions& run, const fs::path& dir) {
  const KernelVariant& kernel = find_kernel(kernel_name);
  std::mt19937 rng(testing::test_seed() + 3);
  const GridSpec grid = testing::make_test_grid(37, 23, 41);
  const Atoms atoms = testing::random_atoms(rng, 300, grid);
  MapRequest request;
  request.grid = grid;
  request.compute.run = run;
  request.source = "streamed by " + kernel_name;
  const std::string mrc = (dir / (kernel_name + ".mrc")).string(), dx = (dir / (kernel_name + ".dx")).string(),
                    vti = (dir / (kernel_name + ".vti")).string();
  MapFiles files({mrc, dx, vti});
  EXPECT_EQ(files.streamed_paths(), (std::vector<std::string>{mrc, vti}));
  MapResult result = compute_map(atoms, request, KernelSelection{&kernel, "test"}, &files);
  std::vector<std::string> written;
  files.finish(result.map, &result.timing, [&](const std::string& p) { written.push_back(p); });
  EXPECT_EQ(written, (std::vector<std::string>{mrc, dx, vti}));
  for (const std::string& streamed : {mrc, vti}) {
    const std::string whole = (dir / ("whole" + fs::path(streamed).extension().string())).string();
    write_map(result.map, whole);
    EXPECT_TRUE(testing::slurp(streamed) == testing::slurp(whole)) << kernel_name << ": " << streamed;
  }
  EXPECT_EQ(read_dx(dx).values, result.map.values);
  const PreparedProblem problem = PreparedProblem::for_physics(atoms, grid, request.physics);
  testing::expect_matches_exact_sum(kernel, problem, result.map.values, 97);
}

TEST_F(Streaming, ComputeMapStreamsOnTheCpu) {
  for (const auto& k : kernel_variants())
    if (k.backend == Backend::Cpu && k.supports(PairModel::Coulomb)) {
      if (!k.not_built.empty()) {  // cpu-simd without Google Highway: listed, cannot run
        std::printf("%s skipped: %s\n", std::string(k.name).c_str(), std::string(k.not_built).c_str());
        continue;
      }
      SCOPED_TRACE(std::string(k.name));
      expect_streamed_files_match(std::string(k.name), {}, dir_);
    }
}

TEST_F(Streaming, ComputeMapStreamsOnOneGpu) {
  ESPGRID_REQUIRE_CUDA_OR_SKIP();
  RunOptions run;
  run.max_slab_bytes = 64 * 1024;  // a few planes a slab: the planes come in many reports
  expect_streamed_files_match(std::string(default_kernel(Backend::Cuda).name), run, dir_);
}

// Two workers on one GPU take chunks from one queue: planes arrive out of order, from two threads.
TEST_F(Streaming, ComputeMapStreamsFromSeveralDeviceWorkers) {
  ESPGRID_REQUIRE_CUDA_OR_SKIP();
  RunOptions run;
  run.devices = {0, 0};
  run.max_slab_bytes = 64 * 1024;
  expect_streamed_files_match(std::string(default_kernel(Backend::Cuda).name), run, dir_);
}

// --model pb on a GPU: the device pipeline hands the map's planes on as it copies them back, and the
// streamed .mrc and .vti, opened at the first run with the solve's report in their source line, equal
// the files written from the finished map (one slab, and two on one device: runs from two threads).
TEST_F(Streaming, PbMapStreamsBesideTheDeviceCopies) {
  ESPGRID_REQUIRE_CUDA_OR_SKIP();
  const Atoms fas = testing::load_molecule("fasciculin2.pqr");
  for (const std::vector<int>& devices : {std::vector<int>{}, std::vector<int>{0, 0}}) {
    const std::string tag = devices.empty() ? "one" : "two";
    MapRequest request;
    request.grid = testing::grid_around(fas, 0.7, 8, 1);
    request.physics.method = MapMethod::PoissonBoltzmann;
    request.physics.unit = PotentialUnit::KTPerE;
    request.physics.dielectric = request.physics.pb.solute_dielectric;
    request.compute.backend = BackendChoice::Cuda;
    request.compute.run.devices = devices;
    request.source = "streamed PB";
    const std::string mrc = path(tag + ".mrc"), dx = path(tag + ".dx"), vti = path(tag + ".vti");
    MapFiles files({mrc, dx, vti});
    MapResult result = compute_map(fas, request, KernelSelection{&default_kernel(Backend::Cuda), "test", 0}, &files);
    ASSERT_TRUE(files.streaming()) << tag;
    files.finish(result.map, &result.timing);
    EXPECT_NE(result.map.source.find("streamed PB; espgrid multigrid-preconditioned CG"), std::string::npos)
        << result.map.source;
    EXPECT_NE(result.map.source.find("iterations, relative residual"), std::string::npos) << result.map.source;
    for (const std::string& streamed : {mrc, vti}) {
      const std::string whole = path("whole-" + tag + fs::path(streamed).extension().string());
      write_map(result.map, whole);
      EXPECT_TRUE(testing::slurp(streamed) == testing::slurp(whole)) << tag << ": " << streamed;
    }
    EXPECT_EQ(read_dx(dx).values, result.map.values) << tag;
    std::size_t bad = 0;
    for (const float v : result.map.values) bad += !std::isfinite(v);
    EXPECT_EQ(bad, 0u) << tag;
  }
}

// --no-stream: nothing is written during the computation, and the files are the same.
TEST_F(Streaming, NoStreamWritesTheSameFilesAfterwards) {
  MapRequest request;
  request.grid = testing::make_test_grid(21, 17, 19);
  std::mt19937 rng(testing::test_seed());
  const Atoms atoms = testing::random_atoms(rng, 50, request.grid);
  const KernelVariant& cpu = default_kernel(Backend::Cpu);
  MapWriteOptions later;
  later.stream = false;
  for (const std::string& ext : streamed_extensions()) {
    MapFiles streamed({path("s" + ext)}), after({path("a" + ext)}, later);
    EXPECT_EQ(streamed.streamed_paths(), std::vector<std::string>{path("s" + ext)});
    EXPECT_EQ(after.streamed_paths(), std::vector<std::string>{});
    MapResult one = compute_map(atoms, request, KernelSelection{&cpu, "test"}, &streamed);
    streamed.finish(one.map, &one.timing);
    MapResult two = compute_map(atoms, request, KernelSelection{&cpu, "test"}, &after);
    after.finish(two.map, &two.timing);
    EXPECT_EQ(two.timing.streamed_write_seconds, 0.0);
    EXPECT_TRUE(testing::slurp(path("s" + ext)) == testing::slurp(path("a" + ext))) << ext;
  }
}

// A computation that throws leaves no streamed file behind (MapFiles destroyed unfinished).
TEST_F(Streaming, FailedComputationLeavesNoFile) {
  MapRequest request;
  request.grid = testing::make_test_grid(9, 8, 7);
  request.compute.run.threads = kMaxCpuThreads + 1;  // refused by the CPU kernels when they start
  const std::string mrc = path("f.mrc");
  {
    MapFiles files({mrc});
    const KernelVariant& cpu = default_kernel(Backend::Cpu);
    EXPECT_THROW(compute_map(Atoms{}, request, KernelSelection{&cpu, "test"}, &files), UsageError);
  }
  EXPECT_EQ(files_in_dir(), 0u);
}

}  // namespace
}  // namespace espgrid
