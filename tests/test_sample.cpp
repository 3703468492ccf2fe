// The potential at points and the scripting surface: the points file's reader and its
// messages, the table writer, the point evaluators (CPU in double; the CUDA one against it where
// a GPU is present), interpolation's outside points, the JSON summary, and the time estimate.
// The CUDA case skips without a GPU and fails with ESPGRID_REQUIRE_GPU=1.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "src/compute/oracle.h"
#include "src/core/errors.h"
#include "src/core/json.h"
#include "src/job/job_options.h"
#include "src/pipeline/map_pipeline.h"
#include "src/pipeline/map_summary.h"
#include "src/pipeline/point_sampling.h"
#include "src/pipeline/time_estimate.h"
#include "src/registry/kernel_registry.h"
#include "src/structure/point_file.h"
#include "src/view/vertex_potential.h"
#include "tests/test_support.h"

namespace {

using namespace espgrid;

/// The InputError's message for `text` read as a points file named "p.txt" ("" when none).
std::string points_error(const std::string& text) {
  try {
    read_points_text("p.txt", text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// ---- the points file ------------------------------------------------------------------------------

TEST(PointsFile, WhitespaceCommasCommentsAndOneHeader) {
  const PointList p = read_points_text(
      "p.csv", "# APBS multivalue's CSV, or whitespace\r\nx,y,z\n1,2,3\n\n  -4.5 , 5e1,6\n7\t8 9\n# end\n");
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p.xyz, (std::vector<double>{1, 2, 3, -4.5, 50, 6, 7, 8, 9}));
  EXPECT_EQ(p.lines, (std::vector<std::size_t>{3, 5, 6}));
  EXPECT_EQ(p.where(1), "p.csv:5");
  EXPECT_EQ(read_points_text("p.txt", "X Y Z\n0 0 0\n").size(), 1u);
}

TEST(PointsFile, EveryDefectNamesItsLine) {
  EXPECT_EQ(points_error("1 2 3\n4 5\n"),
            "p.txt:2: expected three numbers x y z (Å), separated by spaces or commas; found 2 fields");
  EXPECT_EQ(points_error("1,2,3,4\n"),
            "p.txt:1: expected three numbers x y z (Å), separated by spaces or commas; found 4 fields");
  EXPECT_EQ(points_error("1,,3\n"), "p.txt:1: y is empty");
  EXPECT_EQ(points_error("1 2 3\n1 2 3x\n"), "p.txt:2: z is not a number: '3x'");
  EXPECT_EQ(points_error("nan 2 3\n"), "p.txt:1: x is nan: points must be finite numbers (Å)");
  EXPECT_EQ(points_error("1 -inf 3\n"), "p.txt:1: y is -inf: points must be finite numbers (Å)");
  EXPECT_EQ(points_error("1 2 2e6\n"), "p.txt:1: z = 2e6 is beyond ±1e6 Å; check the file's units");
  // A header is the first line only; later it is a bad point.
  EXPECT_EQ(points_error("1 2 3\nx y z\n"), "p.txt:2: x is not a number: 'x'");
  EXPECT_EQ(points_error(""), "p.txt: the file is empty: no points (x y z a line)");
  EXPECT_EQ(points_error("# nothing\n\nx,y,z\n"),
            "p.txt:3: no points in the file (x y z a line; '#' starts a comment)");
  EXPECT_NE(points_error(std::string("1 2 3\n4 5 \0\n", 12)).find("p.txt:2:"), std::string::npos);
}

TEST(PointsFile, MissingFileIsAnError) { EXPECT_THROW(read_points("/nonexistent/points.txt"), Error); }

TEST(PointsFile, TablesKeepTheCoordinatesExactly) {
  const PointList p = read_points_text("p.txt", "0.1 -2.25 1e-3\n3 4 5\n");
  const std::vector<float> v = {1.5f, -0.1f};
  EXPECT_EQ(point_table(p, v, PointTableFormat::Csv, {"ignored in CSV"}),
            "x,y,z,potential\n0.1,-2.25,0.001,1.5\n3,4,5,-0.1\n");
  EXPECT_EQ(point_table(p, v, PointTableFormat::Text, {"a comment"}),
            "# a comment\n# x y z potential\n0.1 -2.25 0.001 1.5\n3 4 5 -0.1\n");
  EXPECT_EQ(point_table_format_from_extension("out/V.CSV"), PointTableFormat::Csv);
  EXPECT_EQ(point_table_format_from_extension("values.txt"), PointTableFormat::Text);
  EXPECT_THROW(parse_point_table_format("tsv"), UsageError);
}

// ---- the point evaluators ---------------------------------------------------------------------------

MapJob cpu_job(PairModel model, int threads = 0) {
  MapJob job;
  job.compute.backend = BackendChoice::Cpu;
  job.compute.run.threads = threads;
  job.physics.model = model;
  if (model == PairModel::Debye) {
    job.physics.dielectric = 78.54;
    job.physics.ionic_strength = 0.15;
  }
  return job;
}

TEST(SamplePoints, CpuIsTheDoubleSumOnAnyThreadCount) {
  const Atoms atoms = espgrid::testing::load_molecule("fasciculin2.pqr");
  std::mt19937 rng(espgrid::testing::test_seed());
  std::uniform_real_distribution<double> coordinate(-30.0, 40.0);
  std::vector<double> points(3 * 200);
  for (double& c : points) c = coordinate(rng);
  for (PairModel model : {PairModel::Coulomb, PairModel::Distance, PairModel::Debye}) {
    const MapJob job = cpu_job(model, 1);
    const PointValues one = sample_points(job, atoms, points);
    const PointValues two = sample_points(cpu_job(model, 2), atoms, points);
    // Each point's sum runs over the atoms in order on whichever thread: the same bits.
    EXPECT_EQ(one.values, two.values) << model_name(model);
    EXPECT_EQ(one.values, surface::potential_at(atoms, job.physics, points)) << model_name(model);
    EXPECT_EQ(one.device, "CPU, 1 thread");
    EXPECT_EQ(one.why, "backend cpu");
  }
}

TEST(SamplePoints, CpuReportsProgressInChunks) {
  // 2^17 atoms: chunks of 2^28 / 2^17 = 2048 points, so 4100 points come in three (the last
  // partial), each reported once, in order; the values are those of one call over all points.
  std::mt19937 rng(espgrid::testing::test_seed());
  const GridSpec grid = espgrid::testing::make_test_grid(20, 20, 20);
  const Atoms atoms = espgrid::testing::random_atoms(rng, std::size_t{1} << 17, grid);
  std::vector<double> points;
  for (int p = 0; p < 4100; ++p) points.insert(points.end(), {0.01 * p, -0.02 * p, 0.5});
  std::vector<std::pair<std::size_t, std::size_t>> reports;
  const MapJob job = cpu_job(PairModel::Coulomb);
  const PointValues v = sample_points(job, atoms, points,
                                      [&](std::size_t done, std::size_t total) { reports.emplace_back(done, total); });
  EXPECT_EQ(reports, (std::vector<std::pair<std::size_t, std::size_t>>{{2048, 4100}, {4096, 4100}, {4100, 4100}}));
  EXPECT_EQ(v.values, surface::potential_at(atoms, job.physics, points));
}

TEST(SamplePoints, AgreesWithTheReferenceKernelAtGridPoints) {
  // The map's reference kernel sums the same terms in float32 from float32 positions relative
  // to the grid origin: the double sum at its grid points lies within the oracle's float32
  // tolerance of it (float_tolerance: summation, each term, positions).
  std::mt19937 rng(espgrid::testing::test_seed());
  const GridSpec grid = espgrid::testing::make_test_grid(7, 6, 5);
  const Atoms atoms = espgrid::testing::random_atoms(rng, 80, grid);
  const MapJob job = cpu_job(PairModel::Debye);
  const PreparedProblem prepared = PreparedProblem::for_physics(atoms, grid, job.physics);
  std::vector<float> map = espgrid::testing::poisoned(grid.point_count());
  reference_kernel().run(prepared.view(map.data()), RunOptions{});
  std::vector<double> points;
  for (std::int64_t k = 0; k < 5; ++k)
    for (std::int64_t j = 0; j < 6; ++j)
      for (std::int64_t i = 0; i < 7; ++i)
        points.insert(points.end(), {grid.position(0, i), grid.position(1, j), grid.position(2, k)});
  const PointValues v = sample_points(job, atoms, points);
  const GridSumProblem problem = prepared.view(nullptr);
  for (std::size_t p = 0; p < map.size(); ++p) {
    const auto i = static_cast<std::int64_t>(p % 7), j = static_cast<std::int64_t>(p / 7 % 6),
               k = static_cast<std::int64_t>(p / 42);
    const OracleValue o = oracle_at(problem, i, j, k);
    EXPECT_NEAR(v.values[p], map[p], float_tolerance(o, atoms.size(), prepared.coordinate_extent())) << p;
  }
}

TEST(SamplePoints, RefusesWhatHasNoSumAtAPoint) {
  const Atoms atoms = espgrid::testing::load_molecule("fasciculin2.pqr");
  const std::vector<double> points = {0, 0, 0};
  MapJob pb = cpu_job(PairModel::Coulomb);
  pb.physics.method = MapMethod::PoissonBoltzmann;
  EXPECT_THROW(sample_points(pb, atoms, points), UsageError);
  MapJob approximate = cpu_job(PairModel::Coulomb);
  approximate.compute.run.method.accuracy = 1e-3;
  EXPECT_THROW(sample_points(approximate, atoms, points), UsageError);
  MapJob kernel = cpu_job(PairModel::Coulomb);
  kernel.compute.kernel = "cpu-simd";
  EXPECT_THROW(sample_points(kernel, atoms, points), UsageError);
  MapJob devices = cpu_job(PairModel::Coulomb);
  devices.compute.run.devices = {0, 1};
  EXPECT_THROW(sample_points(devices, atoms, points), UsageError);
  std::string reason;
  if (!cuda_available(&reason)) {
    MapJob cuda = cpu_job(PairModel::Coulomb);
    cuda.compute.backend = BackendChoice::Cuda;
    EXPECT_THROW(sample_points(cuda, atoms, points), Error);
    cuda.compute.backend = BackendChoice::Auto;  // auto without a GPU: the CPU, saying why
    const PointValues v = sample_points(cuda, atoms, points);
    EXPECT_EQ(v.why, "backend auto: no GPU (" + reason + ")");
  }
}

/// Σ|q|·f(r) and Σ|q|·|f'(r)| at a point, in double: the scales of the float32 bound.
std::pair<double, double> magnitude_and_gradient(const Atoms& atoms, const PhysicsOptions& physics, const double* p) {
  const double k = coulomb_factor(physics);
  const PairParameters pair = pair_parameters(physics);
  double magnitude = 0, gradient = 0;
  with_pair_potential(physics.model, [&](auto potential) {
    for (std::size_t a = 0; a < atoms.size(); ++a) {
      const double dx = p[0] - atoms.x[a], dy = p[1] - atoms.y[a], dz = p[2] - atoms.z[a];
      const double r2 = dx * dx + dy * dy + dz * dz + kSofteningLength * kSofteningLength;
      magnitude += std::fabs(atoms.charge[a] * k) * potential.value(r2, pair);
      gradient += std::fabs(atoms.charge[a] * k) * potential.slope(r2, pair);
    }
  });
  return {magnitude, gradient};
}

TEST(SamplePoints, CudaAgreesWithTheDoubleSum) {
  ESPGRID_REQUIRE_CUDA_OR_SKIP();
  // Enough atoms and points that they take two launches (kernels/points.cu: 2^28 terms each, but
  // at least four blocks of 128 points an SM: 100,000 points are two launches up to 195 SMs).
  const Atoms molecule = espgrid::testing::load_molecule("actin_dimer.pqr");
  std::mt19937 rng(espgrid::testing::test_seed());
  std::vector<double> points;
  std::uniform_int_distribution<std::size_t> pick(0, molecule.size() - 1);
  std::normal_distribution<double> offset(0.0, 3.0);
  for (int p = 0; p < 100000; ++p) {
    const std::size_t a = pick(rng);
    const bool on_atom = p % 1000 == 0;  // r = the softening length: the largest terms there are
    points.insert(points.end(),
                  {molecule.x[a] + (on_atom ? 0 : offset(rng)), molecule.y[a] + (on_atom ? 0 : offset(rng)),
                   molecule.z[a] + (on_atom ? 0 : offset(rng))});
  }
  double extent = 0;
  for (std::size_t a = 0; a < molecule.size(); ++a)
    extent = std::max({extent, std::fabs(molecule.x[a]), std::fabs(molecule.y[a]), std::fabs(molecule.z[a])});
  for (PairModel model : {PairModel::Coulomb, PairModel::Distance, PairModel::Debye}) {
    MapJob gpu = cpu_job(model);
    gpu.compute.backend = BackendChoice::Cuda;
    std::size_t reports = 0, last = 0;
    const PointValues on_gpu = sample_points(gpu, molecule, points, [&](std::size_t done, std::size_t total) {
      EXPECT_GT(done, last);
      EXPECT_EQ(total, points.size() / 3);
      last = done;
      ++reports;
    });
    EXPECT_EQ(last, points.size() / 3);
    EXPECT_GT(reports, 1u) << "one launch: the chunking is not exercised";
    const PointValues exact = sample_points(cpu_job(model), molecule, points);
    const PairParameters pair = pair_parameters(gpu.physics);
    const auto count = static_cast<std::int64_t>(points.size() / 3);
    std::vector<std::pair<double, double>> scales(points.size() / 3);
#pragma omp parallel for schedule(dynamic, 64)
    for (std::int64_t p = 0; p < count; ++p)
      scales[static_cast<std::size_t>(p)] =
          magnitude_and_gradient(molecule, gpu.physics, &points[3 * static_cast<std::size_t>(p)]);
    std::size_t failures = 0;
    for (std::size_t p = 0; p < points.size() / 3; ++p) {
      const auto [magnitude, gradient] = scales[p];
      // One float32 sum against the double one: kernel_difference_bound allows two float sums'
      // rounding (a margin of 2), plus positions rounded to float32 relative to the atoms' centre
      // (each coordinate within half an ulp of 2·extent, three coordinates, point and atom: 2^-22
      // of the extent times √3 a distance), times Σ|q|·|f'(r)|.
      const double tolerance = kernel_difference_bound(magnitude, molecule.size(), model, pair) +
                               gradient * 2 * extent * 0x1p-22 * std::sqrt(3.0);
      if (!(std::fabs(on_gpu.values[p] - exact.values[p]) <= tolerance) && ++failures <= 5)
        ADD_FAILURE() << model_name(model) << " point " << p << ": GPU " << on_gpu.values[p] << ", double "
                      << exact.values[p] << ", tolerance " << tolerance;
    }
    EXPECT_EQ(failures, 0u) << model_name(model);
  }
}

// ---- interpolation ----------------------------------------------------------------------------------

TEST(InterpolatePoints, NamesOutsideAndNonFinitePoints) {
  PotentialMap map;
  map.grid.dims = {3, 3, 3};
  map.grid.origin = {0, 0, 0};
  map.grid.spacing = {1, 1, 1};
  map.values.assign(27, 2.0f);
  // A NaN at the corner (0, 0, 0) reaches every point of the cells around it (a weight of 0
  // times NaN is NaN), and no other: the cells of (1..2)³ are finite.
  map.values[0] = std::numeric_limits<float>::quiet_NaN();
  std::vector<std::size_t> outside, not_finite;
  const std::vector<double> points = {1, 1, 1, 2.0000001, 2, 2, 3, 0, 0, 0.1, 0.9, 0.5, -0.5, 1, 1};
  const PointValues v = interpolate_points(map, points, outside, not_finite);
  EXPECT_EQ(outside, (std::vector<std::size_t>{2, 4}));
  EXPECT_EQ(not_finite, (std::vector<std::size_t>{3}));
  EXPECT_EQ(v.values[0], 2.0f);
  EXPECT_EQ(v.values[1], 2.0f);  // within a millionth of a spacing of the face: on it
  EXPECT_EQ(box_text(map.grid), "(x 0 to 2, y 0 to 2, z 0 to 2 Å)");
}

// ---- the JSON summary -------------------------------------------------------------------------------

TEST(Json, WritesWhatParsersRead) {
  Json j = Json::object();
  j.set("text", "a \"quote\", a \\, a tab\t, Å and \x01");
  j.set("numbers", Json::array({Json(0.1), Json(1e-7), Json(-1365.1884f), Json(42), Json(std::nan(""))}));
  j.set("nothing", Json());
  j.set("yes", true);
  j.set("empty", Json::object());
  j.set("text", "replaced");
  EXPECT_EQ(
      j.dump(0),
      "{\"text\": \"replaced\", \"numbers\": [0.1, 1e-07, -1365.1884, 42, null], \"nothing\": null, \"yes\": true, "
      "\"empty\": {}}");
  EXPECT_EQ(json_quoted("a \"q\" \\ \t Å \x01"), "\"a \\\"q\\\" \\\\ \\t Å \\u0001\"");
  EXPECT_EQ(Json::object().set("a", Json::numbers(std::vector<int>{1, 2})).dump(2), "{\n  \"a\": [1, 2]\n}\n");
}

TEST(MapSummary, RecordsTheModelRangeAndProvenance) {
  PotentialMap map;
  map.grid.dims = {2, 1, 1};
  map.grid.origin = {-1, 0, 0.5};
  map.grid.spacing = {0.5, 0.5, 0.5};
  map.values = {-1.5f, 2.25f};
  map.physics.model = PairModel::Debye;
  map.physics.dielectric = 78.54;
  map.physics.ionic_strength = 0.15;
  map.source = "x.pqr, 3 atoms";
  TimingReport timing;
  timing.kernel_seconds = 0.5;
  timing.device = "CPU, 2 threads";
  MapProvenance provenance;
  provenance.atoms = 3;
  provenance.command = {"espgrid", "map", "x.pqr"};
  const std::string text = map_summary(map, "cpu-simd", "backend cpu", timing, provenance, {"x.dx"}).dump(0);
  for (const char* expected : {"\"model\": \"debye\"", "\"range\": [-1.5, 2.25]", "\"shape\": [2, 1, 1]",
                               "\"origin\": [-1, 0, 0.5]", "\"ionic_strength\": 0.15", "\"kappa_per_angstrom\": 0.127",
                               "\"atom_evaluations\": 6", "\"atom_evaluations_per_second\": 12",
                               "\"outputs\": [\"x.dx\"]", "\"command\": [\"espgrid\", \"map\", \"x.pqr\"]",
                               "\"kernel\": \"cpu-simd\"", "\"estimated_kernel_seconds\": null"})
    EXPECT_NE(text.find(expected), std::string::npos) << expected << " not in " << text;
  // --model pb records its solver's parameters and no atom-evaluations.
  map.physics = PhysicsOptions{};
  map.physics.method = MapMethod::PoissonBoltzmann;
  const std::string pb = map_summary(map, "cpu-simd", "", timing, provenance, {}).dump(0);
  for (const char* expected : {"\"model\": \"pb\"", "\"solvent_dielectric\": 78.54", "\"surface\": \"smol\"",
                               "\"atom_evaluations\": 0", "\"atom_evaluations_per_second\": null"})
    EXPECT_NE(pb.find(expected), std::string::npos) << expected << " not in " << pb;
}

// The CLI computes a map's range once (MapResult::value_range) for its summary line and the JSON:
// the pass over the map is the JSON's given range, and the result's range is the map's.
TEST(Summary, AGivenRangeIsTheOneWrittenAndAResultsRangeIsItsMaps) {
  MapResult result;
  result.map.grid.dims = {3, 1, 1};
  result.map.grid.spacing = {1, 1, 1};
  result.map.values = {0.5f, -2.75f, 3.25f};
  const auto [lo, hi] = result.value_range();
  EXPECT_EQ(lo, -2.75f);
  EXPECT_EQ(hi, 3.25f);
  const std::string text = map_summary(result.map, "cpu-simd", "", TimingReport{}, MapProvenance{}, {}, std::nullopt,
                                       nullptr, std::pair<float, float>{-7.5f, 8.5f})
                               .dump(0);
  EXPECT_NE(text.find("\"range\": [-7.5, 8.5]"), std::string::npos) << text;
  const std::string computed = map_summary(result.map, "cpu-simd", "", TimingReport{}, MapProvenance{}, {}).dump(0);
  EXPECT_NE(computed.find("\"range\": [-2.75, 3.25]"), std::string::npos) << computed;
}

// ---- the time estimate ------------------------------------------------------------------------------

PreparedJob prepared_for(const MapJob& job, const Atoms& atoms, const GridSpec& grid) {
  PreparedJob p;
  p.structure.atoms = atoms;
  p.grid = grid;
  p.kernel = select_kernel(job.compute, job.physics.model);
  return p;
}

TEST(TimeEstimate, ProbesOnlyMapsThatCanBeLong) {
  const Atoms atoms = espgrid::testing::load_molecule("fasciculin2.pqr");
  const GridSpec grid = espgrid::testing::make_test_grid(40, 40, 40, 1.0, {-29, -21, 0});
  MapJob job;
  job.compute.backend = BackendChoice::Cpu;
  job.compute.run.threads = 1;
  // A threshold of 0: every map is probed; the rate is a real one, the estimate the work over it.
  const auto e = estimate_map_time(job, prepared_for(job, atoms, grid), 0.0);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->evaluations, 64000.0 * 906.0);
  EXPECT_GT(e->rate, 1e6);  // atom-evaluations/s: any CPU of this century, loaded or not
  EXPECT_DOUBLE_EQ(e->seconds, e->evaluations / e->rate);
  // 5.8·10^7 evaluations: no CPU thread's ceiling (10^10/s) makes that an hour, so no probe.
  EXPECT_FALSE(estimate_map_time(job, prepared_for(job, atoms, grid), 3600.0).has_value());
  // Neither a PB solve nor an approximate method has a rate per atom-evaluation.
  MapJob pb = job;
  pb.physics.method = MapMethod::PoissonBoltzmann;
  EXPECT_FALSE(estimate_map_time(pb, prepared_for(pb, atoms, grid), 0.0).has_value());
  MapJob msm = job;
  msm.compute.run.method.accuracy = 1e-3;
  finish_job(msm, JobUse::Values);  // the method's parameters from the accuracy
  EXPECT_FALSE(estimate_map_time(msm, prepared_for(msm, atoms, grid), 0.0).has_value());
}

}  // namespace
