#include "src/bench/bench.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
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
#include "src/core/thread_count.h"
#include "src/maps/map_stream.h"
#include "src/os/atomic_output_file.h"

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

// ---- GPU scaling ----------------------------------------------------------------------------------------

std::vector<int> gpu_sweep_counts(int available) {
  std::vector<int> counts;
  for (int n = 1; n < available; n *= 2) counts.push_back(n);
  if (available >= 1) counts.push_back(available);
  return counts;
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
