// A model added in one file reaches everything: tests/models/softened_potential.h,
// compiled into espgrid_core_added_model through ESPGRID_EXTRA_MODEL_HEADER and nothing else.
// Every registry row whose kernel is templated on the evaluator computes it (against the double
// oracle, which instantiates the same evaluator in double), the option table offers the model
// and its parameter with the same checks as the built-in ones, and every output format records
// it. CUDA rows run where a GPU is (the library is built with CUDA when
// ESPGRID_TEST_MODEL_CUDA=ON); without one they skip, or fail with ESPGRID_REQUIRE_GPU=1.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "src/core/errors.h"
#include "src/job/job_options.h"
#include "src/maps/map_format_table.h"
#include "src/maps/map_formats.h"
#include "src/pipeline/map_pipeline.h"
#include "src/pipeline/map_summary.h"
#include "src/pipeline/point_sampling.h"
#include "src/registry/kernel_registry.h"
#include "tests/test_support.h"

namespace espgrid {
namespace {

const PairModel kSoftened = static_cast<PairModel>(3);

TEST(AddedModel, IsListedNamedAndDescribed) {
  EXPECT_EQ(kPairModelCount, 4);
  EXPECT_EQ(parse_model("softened"), kSoftened);
  EXPECT_EQ(model_name(kSoftened), "softened");
  EXPECT_NE(model_help().find("softened  phi = k sum q / (eps sqrt(r^2 + w^2))"), std::string::npos) << model_help();
  PhysicsOptions physics;
  physics.model = kSoftened;
  physics.set_parameter("softening-width", 2.5);
  EXPECT_EQ(describe_model(physics), "softened (w = 2.5 A)");
  EXPECT_FLOAT_EQ(pair_parameters(physics).own[0], 6.25f);
}

TEST(AddedModel, TheOptionTableOffersItsParameterWithTheUsualChecks) {
  const JobOption* model = find_job_option("model");
  const JobOption* width = find_job_option("softening_width");  // Python spelling finds it too
  ASSERT_NE(model, nullptr);
  ASSERT_NE(width, nullptr);
  EXPECT_EQ(width->group, OptionGroup::Physics);
  EXPECT_NE(model->help.find("softened"), std::string::npos) << model->help;
  MapJob job;
  model->apply(job, OptionValue::text("softened"));
  width->apply(job, OptionValue::text("0.75"));
  finish_job(job, JobUse::Values);
  EXPECT_EQ(job.physics.model, kSoftened);
  EXPECT_DOUBLE_EQ(job.physics.parameter(SoftenedPotential::parameters[0]), 0.75);
  // Out of its declared range, or given to another model: the same kind of usage error as
  // --ionic-strength with the Coulomb model.
  MapJob too_wide;
  model->apply(too_wide, OptionValue::text("softened"));
  width->apply(too_wide, OptionValue::number(1e3));
  try {
    finish_job(too_wide, JobUse::Values);
    FAIL() << "accepted a width of 1000 A";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--softening-width must be 0 to 100 A"), std::string::npos) << e.what();
  }
  MapJob other;
  width->apply(other, OptionValue::number(1.0));
  try {
    finish_job(other, JobUse::Values);
    FAIL() << "accepted --softening-width with the coulomb model";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--softening-width applies to --model softened"), std::string::npos)
        << e.what();
  }
}

class AddedModelKernel : public ::testing::TestWithParam<std::string> {};

// Random atoms on a grid of awkward size, w = 0.8 Å; the double oracle judges (the tolerance of
// compute/oracle.h, from the evaluator's own error scales).
TEST_P(AddedModelKernel, MatchesTheOracle) {
  const KernelVariant& kernel = find_kernel(GetParam());
  if (kernel.backend == Backend::Cuda && !ESPGRID_HAVE_CUDA)
    GTEST_SKIP() << "this test's library was built without CUDA (-DESPGRID_TEST_MODEL_CUDA=ON builds it with)";
  ESPGRID_SKIP_UNLESS_RUNNABLE(kernel);
  std::mt19937 rng(testing::test_seed() + 22);
  const GridSpec grid = testing::make_test_grid(19, 11, 7);
  PhysicsOptions physics;
  physics.model = kSoftened;
  physics.set_parameter("softening-width", 0.8);
  const PreparedProblem problem(testing::random_atoms(rng, 257, grid), grid, 1.0, kSoftened, pair_parameters(physics));
  const std::vector<float> out = testing::run_poisoned(kernel, problem);
  testing::expect_matches_oracle(problem, out);
}

std::vector<std::string> rows_with_every_model() {
  std::vector<std::string> names;
  for (const KernelVariant& k : kernel_variants())
    if (k.supports(kSoftened)) names.emplace_back(k.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(EveryModelCapableRow, AddedModelKernel, ::testing::ValuesIn(rows_with_every_model()),
                         testing::param_name);

TEST(AddedModel, ThePointEvaluatorAndTheSummaryTakeIt) {
  // espgrid sample's CPU evaluator (double, over the evaluator): one charge gives k·q/√(r² + a² + w²).
  Atoms atoms;
  atoms.push_back(1, 2, 3, -0.5, 1.5);
  MapJob job;
  job.compute.backend = BackendChoice::Cpu;
  job.physics.model = kSoftened;
  job.physics.set_parameter("softening-width", 0.8);
  const PointValues v = sample_points(job, atoms, {1, 2, 3, 4, 6, 3});
  const double k = coulomb_factor(job.physics), w2 = double(0.8f * 0.8f);  // w² travels as float32 (own[0])
  const double a2 = kSofteningLength * kSofteningLength;
  // The double sum rounds once to float32: half an ulp, 6e-8 relative.
  EXPECT_NEAR(v.values[0], -0.5 * k / std::sqrt(a2 + w2), 1e-7 * 0.5 * k / std::sqrt(w2));
  EXPECT_NEAR(v.values[1], -0.5 * k / std::sqrt(25 + a2 + w2), 1e-7 * 0.5 * k / 5);
  // The JSON summary names its parameter, as Python's keyword spells it.
  const std::string parameters = model_parameters_json(job.physics).dump(0);
  EXPECT_EQ(parameters,
            "{\"name\": \"softened\", \"description\": \"softened (w = 0.8 A)\", \"softening_width\": 0.8}");
}

TEST(AddedModel, EveryRowTemplatedOnTheEvaluatorTakesIt) {
  // The rows that compute every built-in model compute the added one; the Coulomb-only ones
  // refuse it, and so do the MSM rows, which split only the kernels they know (msm_math.h).
  for (const KernelVariant& k : kernel_variants()) {
    if (k.approximate()) {
      EXPECT_FALSE(k.supports(kSoftened)) << k.name;
      EXPECT_TRUE(k.supports(PairModel::Debye)) << k.name;
      continue;
    }
    EXPECT_EQ(k.supports(kSoftened), k.supports(PairModel::Debye) && k.supports(PairModel::Distance)) << k.name;
  }
  EXPECT_GE(rows_with_every_model().size(), 4u);  // cpu-naive, -reference, -parallel, -simd at least
}

TEST(AddedModel, EveryFormatRecordsIt) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("espgrid-added-model-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  PotentialMap map;
  map.grid = testing::make_test_grid(5, 4, 3);
  map.values.assign(map.grid.point_count(), 0.25f);
  map.physics.model = kSoftened;
  map.physics.dielectric = 2;
  map.physics.set_parameter("softening-width", 1.5);
  map.source = "added-model test";
  std::vector<std::string> names;  // every format of the table this build writes
  for (const MapFormatInfo& f : map_format_table())
    if (f.writable()) names.push_back("m" + std::string(f.extensions.front()));
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    const std::string path = (dir / name).string();
    write_map(map, path);
    std::ifstream in(path, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    const std::string text = bytes.str();
    // gzip (.dx.gz): compressed, the uncompressed format's case reads the same header back
    if (text.size() >= 2 && static_cast<unsigned char>(text[0]) == 0x1f && static_cast<unsigned char>(text[1]) == 0x8b)
      continue;
    EXPECT_NE(text.find("softened"), std::string::npos) << "the file does not name the model";
    EXPECT_TRUE(text.find("width 1.5 A") != std::string::npos || text.find("softening-width") != std::string::npos)
        << "the file does not record the model's parameter";
  }
  // And every format reads it back (read_map: .mrc from its labels, .vti from its field data).
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    bool unit_known = false;
    const PotentialMap back = read_map((dir / name).string(), &unit_known);
    EXPECT_TRUE(unit_known);
    EXPECT_EQ(back.physics.model, kSoftened);
    EXPECT_EQ(back.physics.dielectric, 2);
    EXPECT_DOUBLE_EQ(back.physics.parameter(SoftenedPotential::parameters[0]), 1.5);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace espgrid
