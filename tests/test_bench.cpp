// `espgrid bench`: statistics, sizing by the time budget, the oracle check, CSV/JSON output,
// and a CPU-only run end to end (the GPU part needs a device and is not tested here).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <vector>

#include "src/bench/bench.h"
#include "src/compute/cpu_kernels.h"
#include "src/core/errors.h"
#include "src/core/units.h"

namespace espgrid::bench {
namespace {

namespace fs = std::filesystem;

// ---- a minimal JSON reader, enough to read the bench files back ----------------------------

struct Json {
  enum class Type { Null, Bool, Number, String, Array, Object } type = Type::Null;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Json> array;
  std::map<std::string, Json> object;

  const Json& operator[](const std::string& key) const {
    static const Json null;
    const auto it = object.find(key);
    return it == object.end() ? null : it->second;
  }
};

class JsonReader {
 public:
  explicit JsonReader(std::string text) : text_(std::move(text)) {}
  Json document() {
    Json v = value();
    space();
    if (pos_ != text_.size()) fail("trailing characters");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    throw std::runtime_error("JSON: " + what + " at offset " + std::to_string(pos_));
  }
  void space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  char peek() {
    space();
    if (pos_ >= text_.size()) fail("unexpected end");
    return text_[pos_];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  bool literal(const char* word) {
    const std::size_t n = std::strlen(word);
    if (text_.compare(pos_, n, word) != 0) return false;
    pos_ += n;
    return true;
  }
  std::string str() {
    expect('"');
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      char c = text_[pos_++];
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
      if (c == '\\') {
        if (pos_ >= text_.size()) fail("bad escape");
        const char e = text_[pos_++];
        switch (e) {
          case 'n':
            c = '\n';
            break;
          case 't':
            c = '\t';
            break;
          case 'r':
            c = '\r';
            break;
          case '"':
          case '\\':
          case '/':
            c = e;
            break;
          case 'u':
            if (pos_ + 4 > text_.size()) fail("bad \\u escape");
            c = static_cast<char>(std::stoi(text_.substr(pos_, 4), nullptr, 16));
            pos_ += 4;
            break;
          default:
            fail("bad escape");
        }
      }
      out += c;
    }
    expect('"');
    return out;
  }
  Json value() {
    Json v;
    const char c = peek();
    if (c == '{') {
      v.type = Json::Type::Object;
      ++pos_;
      if (peek() == '}') {
        ++pos_;
        return v;
      }
      for (;;) {
        std::string key = str();
        expect(':');
        v.object[key] = value();
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        expect('}');
        return v;
      }
    }
    if (c == '[') {
      v.type = Json::Type::Array;
      ++pos_;
      if (peek() == ']') {
        ++pos_;
        return v;
      }
      for (;;) {
        v.array.push_back(value());
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.type = Json::Type::String;
      v.string = str();
      return v;
    }
    if (literal("null")) return v;
    if (literal("true") || literal("false")) {
      v.type = Json::Type::Bool;
      v.boolean = text_[pos_ - 2] == 'u';  // tr(u)e
      return v;
    }
    const char* start = text_.c_str() + pos_;
    char* end = nullptr;
    v.number = std::strtod(start, &end);
    if (end == start) fail("bad value");
    v.type = Json::Type::Number;
    pos_ += static_cast<std::size_t>(end - start);
    return v;
  }

  std::string text_;
  std::size_t pos_ = 0;
};

Json parse_json_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return JsonReader(buffer.str()).document();
}

/// Splits one CSV line, honouring quotes.
std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        out.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("espgrid-test-bench-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

// ---- statistics and sizing --------------------------------------------------------------------

TEST(BenchStats, MedianMinMax) {
  const Stats odd = summarize({5, 1, 3});
  EXPECT_EQ(odd.median, 3);
  EXPECT_EQ(odd.min, 1);
  EXPECT_EQ(odd.max, 5);
  const Stats even = summarize({4, 1, 2, 10});
  EXPECT_EQ(even.median, 3);
  EXPECT_EQ(even.min, 1);
  EXPECT_EQ(even.max, 10);
  const Stats one = summarize({2.5});
  EXPECT_EQ(one.median, 2.5);
  EXPECT_EQ(one.min, 2.5);
  EXPECT_EQ(one.max, 2.5);
  EXPECT_THROW(summarize({}), Error);
}

TEST(BenchSizing, ShapeForRows) {
  EXPECT_EQ(shape_for_rows(1, 50, 40), (WorkShape{1, 1}));
  EXPECT_EQ(shape_for_rows(0, 50, 40), (WorkShape{1, 1}));    // at least one row
  EXPECT_EQ(shape_for_rows(49, 50, 40), (WorkShape{49, 1}));  // part of one plane
  EXPECT_EQ(shape_for_rows(50, 50, 40), (WorkShape{50, 1}));
  EXPECT_EQ(shape_for_rows(99, 50, 40), (WorkShape{50, 1}));  // whole planes only, rounded down
  EXPECT_EQ(shape_for_rows(120, 50, 40), (WorkShape{50, 2}));
  EXPECT_EQ(shape_for_rows(5000, 50, 40), (WorkShape{50, 40}));  // never more than the grid
}

TEST(BenchSizing, RowsForBudget) {
  // 1e8 evaluations/s, 0.5 s, rows of 100 points x 1000 atoms: 500 rows.
  EXPECT_EQ(rows_for_budget(1e8, 0.5, 100, 1000, 2000), 500);
  EXPECT_EQ(rows_for_budget(1e8, 0.5, 100, 1000, 300), 300);
  EXPECT_EQ(rows_for_budget(1e3, 0.5, 100, 1000, 300), 1);
  EXPECT_EQ(rows_for_budget(0, 0.5, 100, 1000, 300), 300);
  EXPECT_EQ(rows_for_budget(std::numeric_limits<double>::infinity(), 0.5, 100, 1000, 300), 300);
}

/// A simulated kernel: `overhead` seconds plus evaluations / rate; records what it ran.
struct FakeKernel {
  double rate, overhead = 0;
  std::int64_t nx;
  std::size_t atoms;
  std::vector<WorkShape> runs;
  double total_seconds = 0;
  double operator()(WorkShape s) {
    runs.push_back(s);
    const double t = overhead + static_cast<double>(nx * s.rows()) * static_cast<double>(atoms) / rate;
    total_seconds += t;
    return t;
  }
};

TEST(BenchSizing, FastKernelGetsTheWholeGrid) {
  // 256x256x128 points x 10,000 atoms at 1e12/s: 84 ms, within the budget.
  FakeKernel k{1e12, 20e-6, 256, 10000, {}};
  const Sizing s = size_by_budget(std::ref(k), 256, 256, 128, 10000, 0.5);
  EXPECT_EQ(s.shape, (WorkShape{256, 128}));
  EXPECT_EQ(k.runs.front(), (WorkShape{1, 1}));  // the warm-up
  EXPECT_EQ(s.probe_runs, static_cast<int>(k.runs.size()));
}

TEST(BenchSizing, SlowKernelGetsThePlanesThatFitTheBudget) {
  // 5e8 evaluations/s; a 256x256 plane with 100,000 atoms takes 13 s: only rows of one plane.
  FakeKernel naive{5e8, 0, 256, 100000, {}};
  const Sizing s = size_by_budget(std::ref(naive), 256, 256, 128, 100000, 0.5);
  EXPECT_EQ(s.shape.nz_used, 1);
  EXPECT_EQ(s.shape.ny_used, 9);  // floor(0.5 s x 5e8 / (256 x 1e5))
  EXPECT_LT(naive.total_seconds, 0.5) << "the probe itself must stay within the budget";
  // 2e10 evaluations/s with 4,096 atoms: a plane takes 13 ms, so 38 planes fill 0.5 s.
  FakeKernel parallel{2e10, 0, 256, 4096, {}};
  const Sizing p = size_by_budget(std::ref(parallel), 256, 256, 128, 4096, 0.5);
  EXPECT_EQ(p.shape, (WorkShape{256, 37}));  // floor(0.5 x 2e10 / (256 x 4096)) = 9536 rows
  EXPECT_LT(parallel.total_seconds, 0.5);
  for (const WorkShape& r : parallel.runs) EXPECT_LE(r.rows(), 256 * 128);
  EXPECT_NEAR(p.probe_evals_per_second, 2e10, 1e6);
}

TEST(BenchSizing, AtLeastOneRowEvenWhenOneRowIsOverBudget) {
  FakeKernel glacial{1e6, 0, 64, 100000, {}};
  const Sizing s = size_by_budget(std::ref(glacial), 64, 32, 8, 100000, 0.5);
  EXPECT_EQ(s.shape, (WorkShape{1, 1}));
}

// ---- inputs and the oracle check ----------------------------------------------------------------

TEST(BenchInputs, RandomAtomsAreReproducibleNonzeroAndAroundTheGrid) {
  const GridSpec grid = bench_grid({20, 10, 5}, {0.5, 0.5, 1.0});
  const Atoms a = random_atoms(5000, grid, 7);
  const Atoms b = random_atoms(5000, grid, 7);
  const Atoms c = random_atoms(5000, grid, 8);
  ASSERT_EQ(a.size(), 5000u);
  EXPECT_EQ(a.x, b.x);
  EXPECT_EQ(a.charge, b.charge);
  EXPECT_NE(a.x, c.x);
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_GE(a.charge[i], -1.0);
    ASSERT_LE(a.charge[i], 1.0);
    ASSERT_NE(a.charge[i], 0.0);
    ASSERT_GE(a.x[i], -2.0);
    ASSERT_LE(a.x[i], 9.5 + 2.0);
    ASSERT_GE(a.z[i], -2.0);
    ASSERT_LE(a.z[i], 4.0 + 2.0);
  }
  EXPECT_THROW(bench_grid({0, 1, 1}, {1, 1, 1}), UsageError);
  EXPECT_THROW(bench_grid({1, 1, 1}, {1, -1, 1}), UsageError);
}

TEST(BenchCheck, OracleCheckPassesCorrectMapsAndCatchesWrongOnes) {
  const GridSpec grid = bench_grid({17, 9, 4}, {0.7, 0.7, 0.7});
  const PreparedProblem problem(random_atoms(300, grid, 3), grid, coulomb_factor({}));
  std::vector<float> out(grid.point_count(), std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(count_nonfinite(out.data(), out.size()), out.size());
  GridSumProblem p = problem.view(out.data());
  cpu::reference(p, {});
  EXPECT_EQ(count_nonfinite(out.data(), out.size()), 0u);

  const OracleCheck all = check_against_oracle(p, problem.coordinate_extent(), 10000, 1);
  EXPECT_EQ(all.checked, grid.point_count());  // small maps: every point
  EXPECT_TRUE(all.ok());
  EXPECT_LT(all.max_err_over_tol, 1.0);
  const OracleCheck some = check_against_oracle(p, problem.coordinate_extent(), 100, 1);
  EXPECT_EQ(some.checked, 102u);  // 100 samples plus the first and last point
  EXPECT_TRUE(some.ok());

  for (float& v : out) v *= 1.001f;  // far outside float rounding
  const OracleCheck wrong = check_against_oracle(p, problem.coordinate_extent(), 100, 1);
  EXPECT_FALSE(wrong.ok());
  EXPECT_GT(wrong.max_err_over_tol, 1.0);

  out.back() = std::numeric_limits<float>::quiet_NaN();  // the last point is always checked
  const OracleCheck nan = check_against_oracle(p, problem.coordinate_extent(), 10, 1);
  EXPECT_FALSE(nan.ok());
  EXPECT_TRUE(std::isinf(nan.max_err_over_tol));
}

// ---- measure() with real and fake kernels -----------------------------------------------------------

void leaves_last_point(const GridSumProblem& p, const RunOptions& o) {
  reference_kernel().run(p, o);
  p.potential[p.point_count() - 1] = std::numeric_limits<float>::quiet_NaN();
}
void off_by_a_percent(const GridSumProblem& p, const RunOptions& o) {
  reference_kernel().run(p, o);
  for (std::size_t i = 0; i < p.point_count(); ++i) p.potential[i] *= 1.01f;
}
void refuses(const GridSumProblem&, const RunOptions&) { throw UsageError("block 4096x1 is too large"); }

/// A CPU registry row running `run`: a fake variant for the measuring code.
KernelVariant fake_cpu_entry(std::string_view name, KernelVariant::CpuRun run) {
  KernelVariant k = reference_kernel();
  k.name = name;
  k.role = KernelRole::Alternative;
  k.cpu_run = run;
  return k;
}

TEST(BenchMeasure, CpuKernelOnATinyProblemVerifies) {
  const GridSpec grid = bench_grid({24, 16, 6}, {0.5, 0.5, 0.5});
  const PreparedProblem problem(random_atoms(500, grid, 11), grid, coulomb_factor({}));
  Settings settings;
  settings.repeats = 3;
  settings.budget_seconds = 5;   // the whole grid fits
  settings.check_points = 5000;  // more than the map: every point is checked
  for (const KernelVariant* k : {&reference_kernel(), &fast_reference_kernel()}) {
    SCOPED_TRACE(k->name);
    const Measurement r = measure("variants", *k, problem, {}, settings);
    EXPECT_EQ(r.status, Status::Ok) << r.note;
    EXPECT_EQ(r.ny_used, 16);
    EXPECT_EQ(r.nz_used, 6);
    EXPECT_EQ(r.repeats, 3);
    EXPECT_EQ(r.evaluations, 24.0 * 16 * 6 * 500);
    EXPECT_LE(r.kernel_ms.min, r.kernel_ms.median);
    EXPECT_LE(r.kernel_ms.median, r.kernel_ms.max);
    EXPECT_NEAR(r.atom_evals_per_s, r.evaluations / (r.kernel_ms.median / 1e3), 1e-6 * r.atom_evals_per_s);
    EXPECT_NEAR(r.gflops, r.atom_evals_per_s * 6 / 1e9, 1e-9 * r.gflops);
    EXPECT_TRUE(std::isnan(r.ceiling_fraction));  // CPU: no rsqrt ceiling
    EXPECT_LE(r.max_err_over_tol, 1.0);
    EXPECT_EQ(r.points_checked, 24u * 16 * 6);
    EXPECT_TRUE(r.note.empty()) << r.note;
  }
}

TEST(BenchMeasure, SlowKernelComputesOnlyWhatFitsTheBudget) {
  const GridSpec grid = bench_grid({64, 32, 40}, {0.5, 0.5, 0.5});
  const PreparedProblem problem(random_atoms(3000, grid, 12), grid, coulomb_factor({}));
  Settings settings;
  settings.repeats = 1;
  settings.warmup = 0;
  settings.budget_seconds = 0.01;  // cpu-naive: 245,760,000 evaluations would take ~0.5 s
  const Measurement r = measure("variants", find_kernel("cpu-naive"), problem, {}, settings);
  EXPECT_EQ(r.status, Status::Ok) << r.note;
  EXPECT_LT(r.nz_used * r.ny_used, 32 * 40);
  EXPECT_GE(r.ny_used * r.nz_used, 1);
  EXPECT_EQ(r.evaluations, 64.0 * r.ny_used * r.nz_used * 3000);
  EXPECT_NE(r.note.find("time budget"), std::string::npos) << r.note;
}

// An approximate kernel is judged by its bound at points >= 1.4 Å from every atom. On a small
// grid packed with atoms there is none: the row must not pass, and must say why (it once read
// "relative RMS 0 at 0 sampled points", found by fuzzing `bench --dims 8,8,8`).
TEST(BenchMeasure, ApproximateKernelWithNoPointFarFromAtomsIsNotPassed) {
  const GridSpec grid = bench_grid({8, 8, 8}, {0.5, 0.5, 0.5});
  const PreparedProblem problem(random_atoms(2000, grid, 13), grid, coulomb_factor({}));
  Settings settings;
  settings.repeats = 1;
  settings.warmup = 0;
  settings.check_points = 20;
  const Measurement r = measure("variants", find_kernel("cpu-msm"), problem, {}, settings);
  EXPECT_EQ(r.status, Status::Fail) << r.note;
  EXPECT_EQ(r.points_checked, 0u);
  EXPECT_NE(r.note.find("not judged: no sampled point is >= 1.4 Å from every atom"), std::string::npos) << r.note;
  EXPECT_EQ(r.note.find("relative RMS 0"), std::string::npos) << r.note;
}

TEST(BenchMeasure, WrongOrUnwrittenOutputsFailAndRefusalsAreUnsupported) {
  const GridSpec grid = bench_grid({16, 8, 3}, {0.6, 0.6, 0.6});
  const PreparedProblem problem(random_atoms(200, grid, 13), grid, 1.0);
  Settings settings;
  settings.repeats = 2;
  const KernelVariant unwritten = fake_cpu_entry("fake-unwritten", &leaves_last_point);
  const KernelVariant wrong = fake_cpu_entry("fake-wrong", &off_by_a_percent);
  const KernelVariant refusing = fake_cpu_entry("fake-refusing", &refuses);

  const Measurement u = measure("variants", unwritten, problem, {}, settings);
  EXPECT_EQ(u.status, Status::Fail);
  EXPECT_NE(u.note.find("not written"), std::string::npos) << u.note;
  const Measurement w = measure("variants", wrong, problem, {}, settings);
  EXPECT_EQ(w.status, Status::Fail);
  EXPECT_GT(w.max_err_over_tol, 1.0);
  RunOptions shape;
  shape.shape.block_x = 4096;
  shape.shape.block_y = 1;
  const Measurement refused = measure("blocks", refusing, problem, shape, settings, true);
  EXPECT_EQ(refused.status, Status::Unsupported);
  EXPECT_EQ(refused.block_x, 4096);
  EXPECT_NE(refused.note.find("too large"), std::string::npos);
  const Measurement failed = measure("variants", refusing, problem, {}, settings, false);
  EXPECT_EQ(failed.status, Status::Fail);
}

// ---- files --------------------------------------------------------------------------------------------

Measurement sample_row() {
  Measurement r;
  r.sweep = "blocks";
  r.kernel = "cuda-gather";
  r.backend = "cuda";
  r.flops_per_evaluation = 11;
  r.nx = 256;
  r.ny = r.ny_used = 256;
  r.nz = 128;
  r.nz_used = 64;
  r.atoms = 100000;
  r.block_x = 32;
  r.block_y = 4;
  r.repeats = 5;
  r.kernel_ms = {10.5, 10.0, 11.0};
  r.wall_ms_median = 12.25;
  r.atom_evals_per_s = 4e12;
  r.gflops = 44000;
  r.ceiling_fraction = 0.75;
  r.max_err_over_tol = 0.01;
  r.status = Status::Ok;
  r.note = "time budget: first 64 of 128 planes; said \"hi\", twice";
  r.device = "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)";
  return r;
}

TEST(BenchFiles, CsvRowsHaveEveryColumn) {
  const auto header = split_csv(csv_header());
  ASSERT_EQ(header, csv_columns());
  const std::vector<std::string> agreed = {"sweep",
                                           "kernel",
                                           "backend",
                                           "nx",
                                           "ny",
                                           "nz_used",
                                           "atoms",
                                           "block_x",
                                           "block_y",
                                           "coarsening",
                                           "repeats",
                                           "kernel_ms_median",
                                           "kernel_ms_min",
                                           "kernel_ms_max",
                                           "wall_ms_median",
                                           "atom_evals_per_s",
                                           "gflops",
                                           "ceiling_fraction",
                                           "max_err_over_tol",
                                           "verified",
                                           "note"};
  ASSERT_GE(header.size(), agreed.size());
  EXPECT_TRUE(std::equal(agreed.begin(), agreed.end(), header.begin()));

  const auto fields = split_csv(csv_line(sample_row()));
  ASSERT_EQ(fields.size(), header.size());
  std::map<std::string, std::string> row;
  for (std::size_t i = 0; i < header.size(); ++i) row[header[i]] = fields[i];
  EXPECT_EQ(row["kernel"], "cuda-gather");
  EXPECT_EQ(row["nz_used"], "64");
  EXPECT_EQ(row["block_x"], "32");
  EXPECT_EQ(row["kernel_ms_median"], "10.5");
  EXPECT_EQ(row["ceiling_fraction"], "0.75");
  EXPECT_EQ(row["verified"], "ok");
  EXPECT_EQ(row["note"], "time budget: first 64 of 128 planes; said \"hi\", twice");
  EXPECT_EQ(row["nz_full"], "128");

  Measurement skipped = sample_row();
  skipped.status = Status::Skipped;
  skipped.kernel_ms = {};
  skipped.atom_evals_per_s = kNotAvailable;
  const auto s = split_csv(csv_line(skipped));
  EXPECT_EQ(s[11], "");  // n/a is an empty field
  EXPECT_EQ(s[19], "skipped");
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
}

TEST(BenchFiles, JsonReadsBackWithRowsAndMetadata) {
  EXPECT_EQ(JsonLine().num("x", kNotAvailable).text(), "{\"x\": null}");
  EXPECT_EQ(JsonLine().num("x", std::numeric_limits<double>::infinity()).text(), "{\"x\": null}");
  EXPECT_EQ(JsonLine().str("x", "a\"b\\c\n\x01").text(), "{\"x\": \"a\\\"b\\\\c\\n\\u0001\"}");

  Metadata meta = host_metadata();
  meta.command_line = "espgrid bench --out \"x y\"";
  meta.rsqrt_per_second = 4.2e12;
  meta.multiprocessors = 132;
  Measurement skipped = sample_row();
  skipped.status = Status::Skipped;
  skipped.kernel_ms = {};
  const fs::path dir = fresh_dir("json");
  Speedup speedup;
  speedup.label = "64x64x64, 1,000 atoms";
  speedup.kernel_speedup = 123.5;
  const auto paths = write_results(dir.string(), "blocks", meta, {sample_row(), skipped}, {speedup});
  ASSERT_EQ(paths.size(), 2u);
  EXPECT_TRUE(fs::exists(dir / "bench-blocks.csv"));

  const Json doc = parse_json_file(dir / "bench-blocks.json");
  EXPECT_EQ(doc["kind"].string, "blocks");
  EXPECT_EQ(doc["metadata"]["command_line"].string, meta.command_line);
  EXPECT_EQ(doc["metadata"]["espgrid_version"].string, ESPGRID_VERSION);
  EXPECT_FALSE(doc["metadata"]["git_commit"].string.empty());
  EXPECT_FALSE(doc["metadata"]["date_utc"].string.empty());
  EXPECT_EQ(doc["metadata"]["rsqrt_ceiling"]["rsqrt_per_second"].number, 4.2e12);
  EXPECT_EQ(doc["metadata"]["rsqrt_ceiling"]["sm_clock_ghz"].type, Json::Type::Null);
  ASSERT_EQ(doc["rows"].array.size(), 2u);
  const Json& r = doc["rows"].array[0];
  EXPECT_EQ(r["kernel"].string, "cuda-gather");
  EXPECT_EQ(r["nz_used"].number, 64);
  EXPECT_EQ(r["atom_evals_per_s"].number, 4e12);
  EXPECT_EQ(r["verified"].string, "ok");
  EXPECT_EQ(r["note"].string, sample_row().note);
  EXPECT_EQ(doc["rows"].array[1]["kernel_ms_median"].type, Json::Type::Null);
  EXPECT_EQ(doc["rows"].array[1]["verified"].string, "skipped");
  ASSERT_EQ(doc["speedups"].array.size(), 1u);
  EXPECT_EQ(doc["speedups"].array[0]["kernel_speedup"].number, 123.5);
  // Every CSV column is a key of every row.
  for (const std::string& column : csv_columns()) EXPECT_TRUE(r.object.count(column)) << column;

  std::ifstream csv(dir / "bench-blocks.csv");
  std::string line;
  int lines = 0;
  while (std::getline(csv, line)) ++lines;
  EXPECT_EQ(lines, 3);
  fs::remove_all(dir);
}

// ---- the command, CPU only -------------------------------------------------------------------------------

int run_command(const std::string& command, std::string* output) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return -1;
  char buffer[4096];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output->append(buffer, n);
  const int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(BenchCommand, CpuOnlyRunVerifiesAndWritesFiles) {
  const fs::path dir = fresh_dir("cli");
  std::string out;
  const int code = run_command(std::string(ESPGRID_BINARY) +
                                   " bench --dims 24,16,6 --atoms 400 --repeats 2 --budget 0.05 "
                                   "--kernel cpu-naive,cpu-reference,cpu-parallel,cuda-unrolled --out " +
                                   dir.string(),
                               &out);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("cpu-parallel"), std::string::npos) << out;
  EXPECT_EQ(out.find("FAIL"), std::string::npos) << out;
  const Json doc = parse_json_file(dir / "bench-variants.json");
  ASSERT_EQ(doc["rows"].array.size(), 4u) << out;
  for (const Json& row : doc["rows"].array) {
    if (row["backend"].string == "cpu") {
      EXPECT_EQ(row["verified"].string, "ok") << row["kernel"].string;
      EXPECT_GT(row["atom_evals_per_s"].number, 0);
      EXPECT_EQ(row["atoms"].number, 400);
      EXPECT_EQ(row["nx"].number, 24);
    }
  }
  std::string reason;
  if (!cuda_available(&reason)) {
    const Json& gpu = doc["rows"].array[3];
    EXPECT_EQ(gpu["verified"].string, "skipped");
    EXPECT_NE(gpu["note"].string.find(reason), std::string::npos);
    EXPECT_EQ(doc["metadata"]["rsqrt_ceiling"]["rsqrt_per_second"].type, Json::Type::Null);
  }
  fs::remove_all(dir);
}

// A structure file to a map file of each format through `espgrid map`'s path: every stage
// timed, wall at least the kernel, the map verified, and no map file left in the scratch folder.
TEST(BenchEndToEnd, EveryFormatIsTimedVerifiedAndCleanedUp) {
  const fs::path dir = fresh_dir("e2e");
  fs::create_directories(dir);
  EndToEndRequest request;
  request.job.input.path = std::string(ESPGRID_SOURCE_DIR) + "/tests/data/pqr_whitespace.pqr";
  request.job.grid.spacing = {0.5, 0.5, 0.5};
  request.job.grid.padding = 3;
  request.job.compute.backend = BackendChoice::Cpu;
  request.scratch_dir = dir.string();
  Settings settings;
  settings.repeats = 2;
  settings.warmup = 0;
  std::vector<EndToEnd> rows;
  for (const std::string format : {"mrc", "dx", "vti"}) {
    const EndToEnd e = measure_end_to_end(request, format, settings);
    EXPECT_EQ(e.status, Status::Ok) << format << ": " << e.note;
    EXPECT_EQ(e.streamed, format != "dx") << format;
    EXPECT_EQ(e.atoms, 38u);
    EXPECT_GT(e.kernel_ms, 0);
    EXPECT_GE(e.wall_ms, e.kernel_ms);
    EXPECT_GE(e.wall_over_kernel, 1.0);
    EXPECT_GE(e.file_bytes, sizeof(float) * static_cast<std::uint64_t>(e.nx * e.ny * e.nz));
    EXPECT_GT(e.points_checked, 0u);
    rows.push_back(e);
  }
  EXPECT_TRUE(fs::is_empty(dir)) << "a map file was left in the scratch folder";
  Metadata meta = host_metadata();
  const auto files = write_end_to_end(dir.string(), meta, rows);
  const Json doc = parse_json_file(files[1]);
  ASSERT_EQ(doc["end_to_end"].array.size(), 3u);
  EXPECT_EQ(doc["end_to_end"].array[1]["format"].string, "dx");
  EXPECT_EQ(doc["end_to_end"].array[1]["verified"].string, "ok");
  fs::remove_all(dir);
}

// A map that cannot be written fails the measurement with the reason; it is not timed.
TEST(BenchEndToEnd, AnUnwritableScratchFolderFails) {
  EndToEndRequest request;
  request.job.input.path = std::string(ESPGRID_SOURCE_DIR) + "/tests/data/pqr_whitespace.pqr";
  request.job.grid.spacing = {1, 1, 1};
  request.job.compute.backend = BackendChoice::Cpu;
  request.scratch_dir = "/nonexistent/espgrid";
  const EndToEnd e = measure_end_to_end(request, "mrc", Settings{});
  EXPECT_EQ(e.status, Status::Fail);
  EXPECT_NE(e.note.find("does not exist"), std::string::npos) << e.note;
  EXPECT_TRUE(std::isnan(e.wall_ms));
}

TEST(BenchCommand, BadOptionsAreUsageErrors) {
  std::string out;
  EXPECT_EQ(run_command(std::string(ESPGRID_BINARY) + " bench --sweep nonsense", &out), 2) << out;
  EXPECT_NE(out.find("unknown sweep"), std::string::npos) << out;
  out.clear();
  EXPECT_EQ(run_command(std::string(ESPGRID_BINARY) + " bench --repeats 0", &out), 2) << out;
  out.clear();
  EXPECT_EQ(run_command(std::string(ESPGRID_BINARY) + " bench --kernel nope", &out), 2) << out;
  out.clear();
  EXPECT_EQ(run_command(std::string(ESPGRID_BINARY) + " bench --sweep end-to-end", &out), 2) << out;
  EXPECT_NE(out.find("needs a structure file"), std::string::npos) << out;
}

}  // namespace
}  // namespace espgrid::bench

namespace espgrid::bench {
namespace {

/// A GPU-like kernel: a fixed launch latency per row of blocks makes small runs look slow.
struct UnderfilledGpu {
  std::vector<WorkShape> runs;
  double operator()(WorkShape s) {
    runs.push_back(s);
    const double rows = static_cast<double>(s.rows());
    // 40 µs per row until 4,096 rows fill the device, then 4e12 evaluations/s
    return rows < 4096 ? 40e-6 * rows : 256.0 * rows * 300000.0 / 4e12;
  }
};

// Run 2 on the H200 timed cuda-coarsened on 4 rows of a 300,000-atom problem and reported
// 0.2% of the ceiling: the budget probe had shrunk the work below what fills the GPU.
TEST(BenchSizing, ParallelKernelsAreTimedOnWholePlanes) {
  UnderfilledGpu gpu;
  const Sizing s = size_by_budget(std::ref(gpu), 256, 256, 128, 300000, 0.2, /*min_rows=*/256);
  EXPECT_GE(s.shape.ny_used, 256);
  for (std::size_t r = 1; r < gpu.runs.size(); ++r) EXPECT_GE(gpu.runs[r].rows(), 256);  // after the warm-up
}

}  // namespace
}  // namespace espgrid::bench
