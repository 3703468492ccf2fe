#include "src/bench/bench.h"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "src/compute/approximation_error.h"
#include "src/compute/oracle.h"
#include "src/core/errors.h"
#include "src/core/stopwatch.h"
#include "src/core/text_format.h"
#include "src/maps/map_stream.h"
#include "src/os/atomic_output_file.h"

#ifndef ESPGRID_GIT_COMMIT
#define ESPGRID_GIT_COMMIT "unknown"
#endif

namespace espgrid::bench {

// ---- statistics ----------------------------------------------------------------------------

std::string format_or_dash(const char* printf_format, double value) {
  if (!std::isfinite(value)) return "-";
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, printf_format, value);
  return buffer;
}

Stats summarize(std::vector<double> samples) {
  if (samples.empty()) throw Error("no samples to summarize");
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  Stats s;
  s.min = samples.front();
  s.max = samples.back();
  s.median = n % 2 == 1 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  return s;
}

// ---- sizing ---------------------------------------------------------------------------------

WorkShape shape_for_rows(std::int64_t rows, std::int64_t ny, std::int64_t nz) {
  if (ny < 1 || nz < 1) throw Error("shape_for_rows: empty grid");
  rows = std::clamp<std::int64_t>(rows, 1, ny * nz);
  if (rows < ny) return {rows, 1};
  return {ny, rows / ny};
}

std::int64_t rows_for_budget(double evals_per_second, double budget_seconds, std::int64_t nx, std::size_t atoms,
                             std::int64_t total_rows) {
  if (!(evals_per_second > 0) || std::isinf(evals_per_second)) return total_rows;
  const double per_row = static_cast<double>(nx) * static_cast<double>(std::max<std::size_t>(atoms, 1));
  const double rows = std::floor(evals_per_second * budget_seconds / per_row);
  if (!(rows >= 1)) return 1;
  if (rows >= static_cast<double>(total_rows)) return total_rows;
  return static_cast<std::int64_t>(rows);
}

Sizing size_by_budget(const ProbeRun& run, std::int64_t nx, std::int64_t ny, std::int64_t nz, std::size_t atoms,
                      double budget_seconds, std::int64_t min_rows) {
  if (nx < 1 || ny < 1 || nz < 1) throw Error("cannot benchmark an empty grid");
  const std::int64_t total_rows = ny * nz;
  const double per_row = static_cast<double>(nx) * static_cast<double>(std::max<std::size_t>(atoms, 1));
  Sizing sizing;
  // Warm-up: the first call may create a CUDA context or load a module.
  run(shape_for_rows(1, ny, nz));
  ++sizing.probe_runs;
  const double start_rows = std::ceil(1e6 / per_row);
  // Parallel kernels are never timed on less than `min_rows` (a whole plane): a few rows leave
  // most of a GPU or of the CPU's threads idle and would measure that, not the kernel.
  min_rows = std::clamp<std::int64_t>(min_rows, 1, total_rows);
  std::int64_t rows = start_rows >= static_cast<double>(total_rows)
                          ? total_rows
                          : std::max<std::int64_t>(min_rows, static_cast<std::int64_t>(start_rows));
  WorkShape shape;
  double seconds = 0;
  for (int step = 0;; ++step) {
    shape = shape_for_rows(rows, ny, nz);
    seconds = run(shape);
    ++sizing.probe_runs;
    // Probe until a run takes a quarter of the budget: small probes underfill a GPU, so their
    // throughput would underestimate the kernel and shrink the timed work too far.
    if (seconds >= budget_seconds / 4 || shape.rows() == total_rows || step >= 24) break;
    const double grow = seconds > 0 ? std::clamp(budget_seconds / 3 / seconds, 2.0, 64.0) : 64.0;
    const double next = std::ceil(static_cast<double>(shape.rows()) * grow);
    rows = next >= static_cast<double>(total_rows) ? total_rows : static_cast<std::int64_t>(next);
  }
  sizing.probe_evals_per_second =
      seconds > 0 ? per_row * static_cast<double>(shape.rows()) / seconds : std::numeric_limits<double>::infinity();
  sizing.shape = shape_for_rows(
      std::max(min_rows, rows_for_budget(sizing.probe_evals_per_second, budget_seconds, nx, atoms, total_rows)), ny,
      nz);
  return sizing;
}

// ---- inputs ------------------------------------------------------------------------------------

GridSpec bench_grid(std::array<std::int64_t, 3> dims, std::array<double, 3> spacing) {
  for (int a = 0; a < 3; ++a) {
    if (dims[a] < 1 || dims[a] > kMaxAxisPoints)
      throw UsageError("grid dims must be between 1 and " + std::to_string(kMaxAxisPoints) + " per axis");
    if (!(spacing[a] > 0) || !std::isfinite(spacing[a]) || spacing[a] > kMaxSpacing)
      throw UsageError("grid spacing must be positive (at most 10000 Å)");
  }
  GridSpec g;
  g.dims = dims;
  g.origin = {0.0, 0.0, 0.0};
  g.spacing = spacing;
  return g;
}

// ---- checking -------------------------------------------------------------------------------------

// ---- one measurement ------------------------------------------------------------------------------

std::string_view status_name(Status status) {
  switch (status) {
    case Status::Ok:
      return "ok";
    case Status::Fail:
      return "FAIL";
    case Status::Skipped:
      return "skipped";
    case Status::Unsupported:
      return "unsupported";
  }
  return "?";
}

double ceiling_for(const KernelVariant& kernel, const Settings& settings) {
  if (kernel.backend == Backend::Cuda) return settings.rsqrt_per_second;
  // Every exact CPU variant is set against the vector unit's ceiling for cpu-simd's arithmetic,
  // so the column shows how far each design is from what the core can do; an approximate
  // method (no flop count: it does not evaluate every pair) is not.
  if (kernel.flops_per_evaluation == 0) return 0;
  return kernel.serial ? settings.cpu_core_evals_per_second : settings.cpu_all_evals_per_second;
}

Measurement blank_measurement(std::string sweep, const KernelVariant& kernel, const GridSumProblem& problem,
                              const RunOptions& options) {
  Measurement row;
  row.sweep = std::move(sweep);
  row.kernel = std::string(kernel.name);
  row.backend = std::string(backend_name(kernel.backend));
  row.flops_per_evaluation = kernel.flops_per_evaluation;
  row.nx = problem.nx;
  row.ny = problem.ny;
  row.nz = problem.nz;
  row.atoms = problem.atom_count;
  row.block_x = options.shape.block_x;
  row.block_y = options.shape.block_y;
  row.coarsening = options.shape.coarsening;
  row.fma_split = options.shape.fma_split;
  return row;
}

namespace {

void add_note(Measurement& row, const std::string& note) {
  if (note.empty()) return;
  row.note += (row.note.empty() ? "" : "; ") + note;
}

}  // namespace

TimedRuns time_runs(const std::function<RunTiming()>& run_once, const std::function<std::size_t()>& unwritten,
                    const Settings& settings) {
  for (int w = 0; w < settings.warmup; ++w) run_once();
  std::vector<double> kernel_s, wall_s;
  TimedRuns out;
  for (int r = 0; r < settings.repeats; ++r) {
    out.last = run_once();
    kernel_s.push_back(out.last.kernel_seconds);
    wall_s.push_back(out.last.wall_seconds);
    out.unwritten += unwritten();
  }
  out.kernel_seconds = summarize(kernel_s);
  out.wall_seconds_median = summarize(wall_s).median;
  return out;
}

void fill_rates(Measurement& row, const TimedRuns& timed, double evaluations, const KernelVariant& kernel,
                double ceiling_per_second) {
  const Stats& k = timed.kernel_seconds;
  row.kernel_ms = {k.median * 1e3, k.min * 1e3, k.max * 1e3};
  row.wall_ms_median = timed.wall_seconds_median * 1e3;
  row.evaluations = evaluations;
  if (k.median > 0) {
    row.atom_evals_per_s = evaluations / k.median;
    // An approximate method has no flop count per evaluation (it does not evaluate every pair).
    if (kernel.flops_per_evaluation > 0) row.gflops = row.atom_evals_per_s * kernel.flops_per_evaluation / 1e9;
    if (ceiling_per_second > 0) row.ceiling_fraction = row.atom_evals_per_s / ceiling_per_second;
  }
  if (row.wall_ms_median > 0) row.wall_evals_per_s = evaluations / timed.wall_seconds_median;
}

Measurement measure(std::string sweep, const KernelVariant& kernel, const PreparedProblem& problem,
                    const RunOptions& options, const Settings& settings, bool refusal_is_unsupported) {
  if (settings.repeats < 1) throw UsageError("--repeats must be at least 1");
  if (settings.warmup < 0) throw UsageError("--warmup must be 0 or more");
  if (!(settings.budget_seconds > 0)) throw UsageError("--budget must be positive");
  const GridSumProblem full = problem.view(nullptr);
  Measurement row = blank_measurement(std::move(sweep), kernel, full, options);
  row.repeats = settings.repeats;
  row.warmup = settings.warmup;

  std::vector<float> buffer;
  auto sub_problem = [&](WorkShape shape) {
    GridSumProblem p = full;
    p.ny = shape.ny_used;
    p.nz = shape.nz_used;
    p.potential = buffer.data();
    return p;
  };
  auto run_on = [&](WorkShape shape) {
    GridSumProblem p = sub_problem(shape);
    buffer.assign(p.point_count(), std::numeric_limits<float>::quiet_NaN());  // poison
    p.potential = buffer.data();
    return kernel.run(p, options);
  };

  try {
    const Sizing sizing =
        size_by_budget([&](WorkShape s) { return run_on(s).kernel_seconds; }, full.nx, full.ny, full.nz,
                       full.atom_count, settings.budget_seconds, kernel.serial ? 1 : full.ny);
    const WorkShape shape = sizing.shape;
    row.ny_used = shape.ny_used;
    row.nz_used = shape.nz_used;
    if (shape.nz_used < full.nz && shape.ny_used == full.ny)
      add_note(row,
               "time budget: first " + std::to_string(shape.nz_used) + " of " + std::to_string(full.nz) + " planes");
    else if (shape.ny_used < full.ny)
      add_note(row, "time budget: first " + std::to_string(shape.ny_used) + " of " + std::to_string(full.ny) +
                        " rows of one plane");

    const TimedRuns timed = time_runs([&] { return run_on(shape); },
                                      [&] { return count_nonfinite(buffer.data(), buffer.size()); }, settings);
    row.device = timed.last.device;
    const double evaluations =
        static_cast<double>(full.nx) * static_cast<double>(shape.rows()) * static_cast<double>(full.atom_count);
    fill_rates(row, timed, evaluations, kernel, ceiling_for(kernel, settings));
    const std::size_t unwritten = timed.unwritten;
    if (kernel.approximate()) {
      // Judged by its declared bound: relative RMS error at sampled points >= 1.4 Å from atoms;
      // ERR/TOL is that error over the bound.
      const double bound = kernel.bound_for(options.method, full.model);
      const ApproximationError e =
          sampled_approximation_error(sub_problem(shape), settings.check_points, settings.seed);
      row.points_checked = e.points;
      row.max_err_over_tol = e.relative_rms / bound;
      row.status = e.within(bound) && unwritten == 0 ? Status::Ok : Status::Fail;
      if (e.points == 0)  // a grid packed with atoms: nothing the declared bound speaks of, so no verdict of "ok"
        add_note(row, "approximate: not judged: no sampled point is >= 1.4 Å from every atom (its bound, " +
                          number_text(bound) + ", holds there only)");
      else
        add_note(row, "approximate: relative RMS " + number_text(e.relative_rms) + " (bound " + number_text(bound) +
                          ") at " + std::to_string(e.points) + " sampled points >= 1.4 Å from atoms");
    } else {
      const OracleCheck check =
          check_against_oracle(sub_problem(shape), problem.coordinate_extent(), settings.check_points, settings.seed);
      row.points_checked = check.checked;
      row.max_err_over_tol = check.max_err_over_tol;
      row.status = check.ok() && unwritten == 0 ? Status::Ok : Status::Fail;
      if (check.failures)
        add_note(row, std::to_string(check.failures) + " of " + std::to_string(check.checked) +
                          " sampled points outside the oracle tolerance");
    }
    if (unwritten)
      add_note(row, std::to_string(unwritten) + " points not written or not finite over " +
                        std::to_string(settings.repeats) + " timed runs");
  } catch (const Error& e) {
    row.status = refusal_is_unsupported ? Status::Unsupported : Status::Fail;
    add_note(row, e.what());
  }
  return row;
}

// ---- output -----------------------------------------------------------------------------------------

const std::vector<std::string>& csv_columns() {
  static const std::vector<std::string> columns = {
      "sweep", "kernel", "backend", "nx", "ny", "nz_used", "atoms", "block_x", "block_y", "coarsening", "repeats",
      "kernel_ms_median", "kernel_ms_min", "kernel_ms_max", "wall_ms_median", "atom_evals_per_s", "gflops",
      "ceiling_fraction", "max_err_over_tol", "verified", "note",
      // beyond the agreed columns: the whole grid, the flop count, where it ran
      "ny_full", "nz_full", "flops_per_evaluation", "device", "fma_split"};
  return columns;
}

std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

namespace {

/// A CSV number: empty for not measured (NaN), "inf"/"-inf", otherwise %g (6 digits).
std::string csv_number(double value) {
  if (std::isnan(value)) return "";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return number_text(value);
}

}  // namespace

std::string csv_header() {
  std::string out;
  for (const auto& c : csv_columns()) out += (out.empty() ? "" : ",") + c;
  return out;
}

std::string csv_line(const Measurement& r) {
  const std::vector<std::string> fields = {csv_field(r.sweep),
                                           csv_field(r.kernel),
                                           csv_field(r.backend),
                                           std::to_string(r.nx),
                                           std::to_string(r.ny_used),
                                           std::to_string(r.nz_used),
                                           std::to_string(r.atoms),
                                           std::to_string(r.block_x),
                                           std::to_string(r.block_y),
                                           std::to_string(r.coarsening),
                                           std::to_string(r.repeats),
                                           csv_number(r.kernel_ms.median),
                                           csv_number(r.kernel_ms.min),
                                           csv_number(r.kernel_ms.max),
                                           csv_number(r.wall_ms_median),
                                           csv_number(r.atom_evals_per_s),
                                           csv_number(r.gflops),
                                           csv_number(r.ceiling_fraction),
                                           csv_number(r.max_err_over_tol),
                                           std::string(status_name(r.status)),
                                           csv_field(r.note),
                                           std::to_string(r.ny),
                                           std::to_string(r.nz),
                                           std::to_string(r.flops_per_evaluation),
                                           csv_field(r.device),
                                           std::to_string(r.fma_split)};
  std::string out;
  for (std::size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + fields[i];
  return out;
}

namespace {

/// Length of the well-formed UTF-8 sequence at the start of `text` (1 to 4), or 0 when it is
/// not one (a stray continuation byte, an overlong form, a surrogate, beyond U+10FFFF).
std::size_t utf8_sequence_length(std::string_view text) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const auto continuation = [&](std::size_t i) { return i < text.size() && (byte(i) & 0xC0) == 0x80; };
  const unsigned char b0 = byte(0);
  if (b0 < 0x80) return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF) return continuation(1) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    if (!continuation(1) || !continuation(2)) return 0;
    if ((b0 == 0xE0 && byte(1) < 0xA0) || (b0 == 0xED && byte(1) >= 0xA0)) return 0;  // overlong, surrogate
    return 3;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    if (!continuation(1) || !continuation(2) || !continuation(3)) return 0;
    if ((b0 == 0xF0 && byte(1) < 0x90) || (b0 == 0xF4 && byte(1) >= 0x90)) return 0;  // overlong, > U+10FFFF
    return 4;
  }
  return 0;
}

}  // namespace

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    // JSON is UTF-8: a byte that is not part of a well-formed sequence (a file name in another
    // encoding) becomes U+FFFD instead of making the whole document unreadable.
    if (static_cast<unsigned char>(c) >= 0x80) {
      const std::size_t length = utf8_sequence_length(text.substr(i));
      if (length == 0) {
        out += "\\ufffd";
      } else {
        out.append(text, i, length);
        i += length - 1;
      }
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += buffer;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string json_number(double value) {
  if (!std::isfinite(value)) return "null";
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%.9g", value);
  return buffer;
}

namespace {

/// Collects "key": value pairs of one JSON object.
class JsonObject {
 public:
  JsonObject& add(std::string_view key, const std::string& json_value) {
    text_ += (text_.empty() ? "" : ", ") + json_string(key) + ": " + json_value;
    return *this;
  }
  JsonObject& str(std::string_view key, std::string_view value) { return add(key, json_string(value)); }
  JsonObject& num(std::string_view key, double value) { return add(key, json_number(value)); }
  JsonObject& integer(std::string_view key, long long value) { return add(key, std::to_string(value)); }
  std::string text() const { return "{" + text_ + "}"; }

 private:
  std::string text_;
};

std::string measurement_json(const Measurement& r) {
  JsonObject o;
  o.str("sweep", r.sweep).str("kernel", r.kernel).str("backend", r.backend);
  o.integer("nx", r.nx).integer("ny", r.ny_used).integer("nz_used", r.nz_used);
  o.integer("atoms", static_cast<long long>(r.atoms));
  o.integer("block_x", r.block_x).integer("block_y", r.block_y).integer("coarsening", r.coarsening);
  o.integer("fma_split", r.fma_split);
  o.integer("repeats", r.repeats).integer("warmup", r.warmup);
  o.num("kernel_ms_median", r.kernel_ms.median)
      .num("kernel_ms_min", r.kernel_ms.min)
      .num("kernel_ms_max", r.kernel_ms.max);
  o.num("wall_ms_median", r.wall_ms_median).num("atom_evals_per_s", r.atom_evals_per_s).num("gflops", r.gflops);
  o.num("ceiling_fraction", r.ceiling_fraction).num("max_err_over_tol", r.max_err_over_tol);
  o.str("verified", status_name(r.status)).str("note", r.note);
  o.integer("ny_full", r.ny).integer("nz_full", r.nz).integer("flops_per_evaluation", r.flops_per_evaluation);
  o.num("evaluations", r.evaluations).num("wall_evals_per_s", r.wall_evals_per_s);
  o.integer("points_checked", static_cast<long long>(r.points_checked)).str("device", r.device);
  return o.text();
}

std::string speedup_json(const Speedup& s) {
  JsonObject o;
  o.str("label", s.label).integer("nx", s.nx).integer("ny", s.ny).integer("nz", s.nz);
  o.integer("atoms", static_cast<long long>(s.atoms)).str("cpu_kernel", s.cpu_kernel).str("gpu_kernel", s.gpu_kernel);
  o.num("cpu_evals_per_s", s.cpu_evals_per_s).num("gpu_evals_per_s", s.gpu_evals_per_s);
  o.num("kernel_speedup", s.kernel_speedup).num("wall_speedup", s.wall_speedup);
  return o.text();
}

}  // namespace

std::string utc_now_iso() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

std::string git_commit() {
  if (const char* env = std::getenv("ESPGRID_COMMIT"); env && *env) return env;
  const std::string embedded = ESPGRID_GIT_COMMIT;
  return embedded.empty() ? "unknown" : embedded;
}

std::string host_cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon == std::string::npos) break;
      std::string model = line.substr(colon + 1);
      const auto first = model.find_first_not_of(" \t");
      return first == std::string::npos ? "unknown" : model.substr(first);
    }
  }
  return "unknown";
}

Metadata host_metadata() {
  Metadata m;
  m.date_utc = utc_now_iso();
  m.espgrid_version = ESPGRID_VERSION;
  m.git_commit = git_commit();
  m.host_cpu = host_cpu_model();
  m.host_threads = static_cast<int>(std::thread::hardware_concurrency());
  m.cpu_threads = omp_get_max_threads();
  return m;
}

std::string json_document(std::string_view kind, const Metadata& m, const std::vector<Measurement>& rows,
                          const std::vector<Speedup>& speedups) {
  JsonObject ceiling;
  ceiling.num("rsqrt_per_second", m.rsqrt_per_second).num("sm_clock_ghz", m.sm_clock_ghz);
  ceiling.integer("multiprocessors", m.multiprocessors).str("note", m.ceiling_note);
  ceiling.str("cpu_simd_target", m.cpu_simd_target).num("cpu_core_evals_per_second", m.cpu_core_evals_per_second);
  ceiling.num("cpu_all_evals_per_second", m.cpu_all_evals_per_second);
  JsonObject settings;
  settings.integer("repeats", m.settings.repeats).integer("warmup", m.settings.warmup);
  settings.num("budget_seconds", m.settings.budget_seconds);
  settings.integer("check_points", static_cast<long long>(m.settings.check_points));
  settings.integer("seed", static_cast<long long>(m.settings.seed));
  JsonObject meta;
  meta.str("date_utc", m.date_utc).str("espgrid_version", m.espgrid_version).str("git_commit", m.git_commit);
  meta.str("device", m.device).integer("device_index", m.device_index);
  meta.add("cuda_available", m.cuda_available ? "true" : "false").str("cuda_reason", m.cuda_reason);
  meta.add("rsqrt_ceiling", ceiling.text());
  meta.str("host_cpu", m.host_cpu).integer("host_threads", m.host_threads).integer("cpu_threads", m.cpu_threads);
  meta.str("command_line", m.command_line).str("input", m.input);
  meta.add("settings", settings.text());

  std::string out = "{\n  \"format\": \"espgrid-bench/1\",\n  \"kind\": " + json_string(kind) + ",\n";
  out += "  \"metadata\": " + meta.text() + ",\n";
  out += "  \"columns\": [";
  for (std::size_t i = 0; i < csv_columns().size(); ++i) out += (i ? ", " : "") + json_string(csv_columns()[i]);
  out += "],\n  \"rows\": [";
  for (std::size_t i = 0; i < rows.size(); ++i) out += std::string(i ? "," : "") + "\n    " + measurement_json(rows[i]);
  out += rows.empty() ? "],\n" : "\n  ],\n";
  out += "  \"speedups\": [";
  for (std::size_t i = 0; i < speedups.size(); ++i)
    out += std::string(i ? "," : "") + "\n    " + speedup_json(speedups[i]);
  out += speedups.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

void write_text(const std::string& path, const std::string& text) {
  AtomicOutputFile file(path);
  {
    std::ofstream out(file.temporary_path(), std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) throw Error("cannot write " + path);
  }
  file.commit();
}

std::vector<std::string> write_results(const std::string& directory, std::string_view kind, const Metadata& meta,
                                       const std::vector<Measurement>& rows, const std::vector<Speedup>& speedups) {
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec) throw Error("cannot create " + directory + ": " + ec.message());
  const std::string base = (std::filesystem::path(directory) / ("bench-" + std::string(kind))).string();
  std::string csv = csv_header() + "\n";
  for (const Measurement& r : rows) csv += csv_line(r) + "\n";
  write_text(base + ".csv", csv);
  write_text(base + ".json", json_document(kind, meta, rows, speedups));
  return {base + ".csv", base + ".json"};
}

// ---- GPU scaling ----------------------------------------------------------------------------------------

std::vector<int> gpu_sweep_counts(int available) {
  std::vector<int> counts;
  for (int n = 1; n < available; n *= 2) counts.push_back(n);
  if (available >= 1) counts.push_back(available);
  return counts;
}

namespace {

std::string per_device_field(const std::vector<WorkerTiming>& parts, bool planes) {
  std::string out;
  for (const WorkerTiming& p : parts) {
    if (!out.empty()) out += ' ';
    out += std::to_string(p.device);
    out += ':';
    out += planes ? std::to_string(p.planes) : csv_number(p.kernel_seconds * 1e3);
  }
  return out;
}

std::string scaling_json(const GpuScaling& g) {
  JsonObject o;
  o.str("kernel", g.kernel).integer("gpus", g.gpus).str("devices", g.devices);
  o.num("kernel_ms_median", g.kernel_ms).num("wall_ms_median", g.wall_ms);
  o.num("kernel_speedup", g.kernel_speedup).num("wall_speedup", g.wall_speedup);
  o.num("kernel_efficiency", g.kernel_efficiency).num("wall_efficiency", g.wall_efficiency);
  o.str("identical_to_1gpu", g.identical);
  std::string parts;
  for (const WorkerTiming& p : g.per_device) {
    JsonObject d;
    d.integer("device", p.device).str("name", p.device_name).integer("planes", p.planes).integer("chunks", p.chunks);
    d.num("kernel_ms", p.kernel_seconds * 1e3).num("wall_ms", p.wall_seconds * 1e3);
    parts += (parts.empty() ? "" : ", ") + d.text();
  }
  o.add("per_device", "[" + parts + "]");
  return o.text();
}

}  // namespace

std::vector<std::string> write_gpu_scaling(const std::string& directory, const Metadata& meta,
                                           const std::vector<Measurement>& rows,
                                           const std::vector<GpuScaling>& scaling) {
  if (rows.size() != scaling.size()) throw Error("write_gpu_scaling: rows and scaling entries do not pair up");
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec) throw Error("cannot create " + directory + ": " + ec.message());
  const std::string base = (std::filesystem::path(directory) / "bench-gpus").string();
  std::string csv = csv_header() +
                    ",gpus,devices,kernel_speedup,wall_speedup,kernel_efficiency,wall_efficiency,identical_to_1gpu,"
                    "per_device_planes,per_device_kernel_ms\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const GpuScaling& g = scaling[i];
    csv += csv_line(rows[i]) + "," + std::to_string(g.gpus) + "," + csv_field(g.devices) + "," +
           csv_number(g.kernel_speedup) + "," + csv_number(g.wall_speedup) + "," + csv_number(g.kernel_efficiency) +
           "," + csv_number(g.wall_efficiency) + "," + csv_field(g.identical) + "," +
           csv_field(per_device_field(g.per_device, true)) + "," + csv_field(per_device_field(g.per_device, false)) +
           "\n";
  }
  write_text(base + ".csv", csv);
  std::string json = json_document("gpus", meta, rows);
  const std::size_t end = json.rfind("\n}");
  std::string entries;
  for (std::size_t i = 0; i < scaling.size(); ++i)
    entries += std::string(i ? "," : "") + "\n    " + scaling_json(scaling[i]);
  json = json.substr(0, end) + ",\n  \"scaling\": [" + entries + (scaling.empty() ? "]" : "\n  ]") + "\n}\n";
  write_text(base + ".json", json);
  return {base + ".csv", base + ".json"};
}

// ---- end to end -----------------------------------------------------------------------------------------

EndToEnd measure_end_to_end(const EndToEndRequest& request, const std::string& extension, const Settings& settings) {
  EndToEnd e;
  e.format = extension;
  e.repeats = settings.repeats;
  e.warmup = settings.warmup;
  const std::string path = (std::filesystem::path(request.scratch_dir) /
                            ("espgrid-end-to-end-" + std::to_string(::getpid()) + "." + extension))
                               .string();
  std::vector<double> read, prepare, kernel, transfer, write, streamed, wall;
  MapJob job = request.job;
  job.outputs = {path};
  e.streamed = streams_planes(map_format_from_extension(path), job.write);
  // What the oracle check needs from the pipeline's run: the atoms and the grid it placed.
  struct Kept : MapObserver {
    Atoms atoms;
    GridSpec grid;
    void prepared(const PreparedJob& p) override {
      atoms = p.structure.atoms;
      grid = p.grid;
    }
  } kept;
  try {
    for (int run = 0; run < settings.warmup + settings.repeats; ++run) {
      const Stopwatch clock;
      MapResult result = run_map_job(job, kept);
      const double seconds = clock.seconds();
      const TimingReport& t = result.timing;
      e.kernel = std::string(result.kernel.kernel->name);
      e.device = t.device;
      e.nx = kept.grid.dims[0];
      e.ny = kept.grid.dims[1];
      e.nz = kept.grid.dims[2];
      e.atoms = kept.atoms.size();
      std::error_code ec;
      e.file_bytes = std::filesystem::file_size(path, ec);
      if (run >= settings.warmup) {
        read.push_back(t.read_seconds);
        prepare.push_back(t.prepare_seconds);
        kernel.push_back(t.kernel_seconds);
        transfer.push_back(t.transfer_seconds);
        write.push_back(t.write_seconds);
        streamed.push_back(t.streamed_write_seconds);
        wall.push_back(seconds);
      }
      if (run + 1 == settings.warmup + settings.repeats) {
        // Never a time for an empty or wrong map: the last map against the oracle, the file whole.
        const PreparedProblem problem = PreparedProblem::for_physics(kept.atoms, kept.grid, job.physics);
        const OracleCheck check = check_against_oracle(
            problem.view(result.map.values.data()), problem.coordinate_extent(), settings.check_points, settings.seed);
        e.points_checked = check.checked;
        e.max_err_over_tol = check.max_err_over_tol;
        const std::uint64_t smallest = sizeof(float) * result.map.values.size();  // binary formats; text is larger
        e.status = check.ok() && e.file_bytes >= smallest ? Status::Ok : Status::Fail;
        if (!check.ok())
          e.note = std::to_string(check.failures) + " of " + std::to_string(check.checked) +
                   " sampled points outside the oracle tolerance";
        if (e.file_bytes < smallest)
          e.note += (e.note.empty() ? "" : "; ") + std::string("the file holds ") + std::to_string(e.file_bytes) +
                    " bytes, fewer than the map's " + std::to_string(smallest);
      }
      std::filesystem::remove(path, ec);
    }
  } catch (const Error& err) {
    std::error_code ec;
    std::filesystem::remove(path, ec);
    e.status = Status::Fail;
    e.note = err.what();
    return e;
  }
  const auto ms = [](const std::vector<double>& seconds) { return 1e3 * summarize(seconds).median; };
  e.read_ms = ms(read);
  e.prepare_ms = ms(prepare);
  e.kernel_ms = ms(kernel);
  e.transfer_ms = ms(transfer);
  e.write_ms = ms(write);
  e.streamed_ms = ms(streamed);
  e.wall_ms = ms(wall);
  e.wall_over_kernel = e.kernel_ms > 0 ? e.wall_ms / e.kernel_ms : kNotAvailable;
  return e;
}

namespace {

std::string end_to_end_json(const EndToEnd& e) {
  JsonObject o;
  o.str("format", e.format).str("kernel", e.kernel).str("device", e.device);
  o.integer("nx", e.nx).integer("ny", e.ny).integer("nz", e.nz).integer("atoms", static_cast<long long>(e.atoms));
  o.integer("repeats", e.repeats).integer("warmup", e.warmup).add("streamed", e.streamed ? "true" : "false");
  o.integer("file_bytes", static_cast<long long>(e.file_bytes));
  o.num("read_ms", e.read_ms).num("prepare_ms", e.prepare_ms).num("kernel_ms", e.kernel_ms);
  o.num("transfer_ms", e.transfer_ms).num("write_ms", e.write_ms).num("streamed_ms", e.streamed_ms);
  o.num("wall_ms", e.wall_ms).num("wall_over_kernel", e.wall_over_kernel);
  o.num("max_err_over_tol", e.max_err_over_tol).integer("points_checked", static_cast<long long>(e.points_checked));
  o.str("verified", status_name(e.status)).str("note", e.note);
  return o.text();
}

}  // namespace

std::vector<std::string> write_end_to_end(const std::string& directory, const Metadata& meta,
                                          const std::vector<EndToEnd>& rows) {
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec) throw Error("cannot create " + directory + ": " + ec.message());
  const std::string base = (std::filesystem::path(directory) / "bench-end-to-end").string();
  std::string csv =
      "format,kernel,device,nx,ny,nz,atoms,repeats,streamed,file_bytes,read_ms,prepare_ms,kernel_ms,transfer_ms,"
      "write_ms,streamed_ms,wall_ms,wall_over_kernel,max_err_over_tol,verified,note\n";
  for (const EndToEnd& e : rows)
    csv += csv_field(e.format) + "," + csv_field(e.kernel) + "," + csv_field(e.device) + "," + std::to_string(e.nx) +
           "," + std::to_string(e.ny) + "," + std::to_string(e.nz) + "," + std::to_string(e.atoms) + "," +
           std::to_string(e.repeats) + "," + (e.streamed ? "yes" : "no") + "," + std::to_string(e.file_bytes) + "," +
           csv_number(e.read_ms) + "," + csv_number(e.prepare_ms) + "," + csv_number(e.kernel_ms) + "," +
           csv_number(e.transfer_ms) + "," + csv_number(e.write_ms) + "," + csv_number(e.streamed_ms) + "," +
           csv_number(e.wall_ms) + "," + csv_number(e.wall_over_kernel) + "," + csv_number(e.max_err_over_tol) + "," +
           std::string(status_name(e.status)) + "," + csv_field(e.note) + "\n";
  write_text(base + ".csv", csv);
  std::string json = json_document("end-to-end", meta, {});
  const std::size_t end = json.rfind("\n}");
  std::string entries;
  for (std::size_t i = 0; i < rows.size(); ++i)
    entries += std::string(i ? "," : "") + "\n    " + end_to_end_json(rows[i]);
  json = json.substr(0, end) + ",\n  \"end_to_end\": [" + entries + (rows.empty() ? "]" : "\n  ]") + "\n}\n";
  write_text(base + ".json", json);
  return {base + ".csv", base + ".json"};
}

// ---- sweep sets ---------------------------------------------------------------------------------------

const std::vector<BlockShape>& sweep_block_shapes() {
  static const std::vector<BlockShape> shapes = {{64, 1}, {128, 1}, {256, 1}, {512, 1}, {1024, 1}, {32, 2},
                                                 {32, 4}, {32, 8},  {32, 16}, {32, 32}, {16, 4},   {16, 16},
                                                 {64, 2}, {64, 4},  {128, 2}, {128, 4}, {256, 2},  {256, 4}};
  return shapes;
}

const std::vector<int>& sweep_coarsening_factors() {
  static const std::vector<int> factors = {1, 2, 4, 8, 16};
  return factors;
}

const std::vector<std::size_t>& sweep_atom_counts() {
  static const std::vector<std::size_t> counts = {1000, 3000, 10000, 30000, 100000, 300000};
  return counts;
}

const std::vector<std::array<std::int64_t, 3>>& sweep_grid_dims() {
  static const std::vector<std::array<std::int64_t, 3>> dims = {{16, 16, 16},    {32, 32, 32},    {48, 48, 48},
                                                                {64, 64, 64},    {96, 96, 96},    {128, 128, 128},
                                                                {192, 192, 192}, {256, 256, 256}, {512, 512, 256}};
  return dims;
}

const std::vector<SpeedupSize>& sweep_speedup_sizes() {
  static const std::vector<SpeedupSize> sizes = {
      {{64, 64, 64}, 1000}, {{128, 128, 128}, 10000}, {{256, 256, 128}, 30000}, {{256, 256, 256}, 100000}};
  return sizes;
}

}  // namespace espgrid::bench
