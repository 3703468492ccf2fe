// The measuring half of `espgrid bench`: statistics, sizing the work of slow variants by a
// time budget, random inputs, the oracle check of timed outputs, and the result files (one
// Measurement a line of CSV and an object of JSON). The sweeps are in exact_sweeps.h and
// msm_sweeps.h, the command line in src/cli/bench_command.cpp.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/compute/oracle.h"
#include "src/compute/prepared_problem.h"
#include "src/core/atoms.h"
#include "src/core/grid.h"
#include "src/core/json.h"
#include "src/core/random_atoms.h"
#include "src/pipeline/map_pipeline.h"
#include "src/registry/kernel_registry.h"

namespace espgrid::bench {

inline constexpr double kNotAvailable = std::numeric_limits<double>::quiet_NaN();

/// `value` printed with `printf_format` ("%.3f"), or "-" when it is not finite (not measured).
std::string format_or_dash(const char* printf_format, double value);

// ---- statistics ----------------------------------------------------------------------------

struct Stats {
  double median = kNotAvailable;
  double min = kNotAvailable;
  double max = kNotAvailable;
};
/// Median (mean of the two middle values for an even count), min and max; throws Error when
/// `samples` is empty.
Stats summarize(std::vector<double> samples);

// ---- sizing the work by a time budget --------------------------------------------------------

/// The part of the grid a measurement computes: its first `nz_used` z-planes, or, when even
/// one plane is over the budget, the first `ny_used` rows of plane 0 (then nz_used = 1).
/// Either way the points are the first nx·ny_used·nz_used of the map, and the sub-grid is a
/// problem of its own: the same atoms, origin and spacing with smaller dims.
struct WorkShape {
  std::int64_t ny_used = 0;
  std::int64_t nz_used = 0;
  std::int64_t rows() const noexcept { return ny_used * nz_used; }
  friend bool operator==(const WorkShape&, const WorkShape&) = default;
};

/// The largest shape of at most `rows` rows (at least one): whole planes once rows ≥ ny,
/// otherwise the first `rows` rows of plane 0.
WorkShape shape_for_rows(std::int64_t rows, std::int64_t ny, std::int64_t nz);

/// Rows (nx × atoms evaluations each) that take about `budget_seconds` at `evals_per_second`,
/// clamped to [1, total_rows]; total_rows when the rate is infinite or not positive.
std::int64_t rows_for_budget(double evals_per_second, double budget_seconds, std::int64_t nx, std::size_t atoms,
                             std::int64_t total_rows);

struct Sizing {
  WorkShape shape;
  int probe_runs = 0;                 ///< runs the probe made (warm-up included)
  double probe_evals_per_second = 0;  ///< throughput of the last probe
};

/// One run of the kernel on `shape`; returns its kernel seconds.
using ProbeRun = std::function<double(WorkShape)>;

/// Probes the kernel on growing parts of the grid (one row's warm-up first, then from about
/// 10⁶ evaluations or `min_rows` up, ×2 to ×64 a step) until a run takes at least budget/4 or
/// covers the whole grid, then returns the shape that fits `budget_seconds` at the measured
/// rate, never less than `min_rows` rows. Fast kernels get the whole grid; slow ones as many
/// whole planes as fit. Parallel kernels pass a whole plane as `min_rows` (fewer rows would
/// leave the GPU or the CPU threads idle); single-threaded ones 1.
Sizing size_by_budget(const ProbeRun& run, std::int64_t nx, std::int64_t ny, std::int64_t nz, std::size_t atoms,
                      double budget_seconds, std::int64_t min_rows = 1);

// ---- inputs ------------------------------------------------------------------------------------

/// A grid with its origin at (0, 0, 0).
GridSpec bench_grid(std::array<std::int64_t, 3> dims, std::array<double, 3> spacing);

// ---- one measurement -----------------------------------------------------------------------------

struct Settings {
  int repeats = 5;                  ///< timed runs; the statistics are over these
  int warmup = 1;                   ///< untimed runs before them
  double budget_seconds = 0.5;      ///< kernel time one repetition should take, at most about
  std::size_t check_points = 1000;  ///< oracle samples of the last repetition's output
  std::uint64_t seed = 1;           ///< for the oracle's sample points
  double rsqrt_per_second = 0;      ///< the device's measured ceiling; 0 when unknown
  /// The CPU's measured ceiling for cpu-simd's evaluation (cpu::measure_simd_ceiling): one core,
  /// and every thread the CPU kernels use; 0 when unknown. Serial CPU variants are compared with
  /// the first, parallel ones with the second.
  double cpu_core_evals_per_second = 0;
  double cpu_all_evals_per_second = 0;
};

enum class Status { Ok, Fail, Skipped, Unsupported };
/// "ok", "FAIL", "skipped", "unsupported": the `verified` column.
std::string_view status_name(Status status);
/// The ceiling `kernel` is compared with: the GPU's rsqrt rate, or the CPU's for one core
/// (serial variants) or every thread (parallel ones); 0 when not measured.
double ceiling_for(const KernelVariant& kernel, const Settings& settings);

/// One measurement: one line of the printed table, of the CSV file and of the JSON rows. Values not measured are
/// NaN (an empty CSV field, null in JSON).
struct Measurement {
  std::string sweep;  ///< variants, blocks, coarsening, atoms, grid, speedup
  std::string kernel;
  std::string backend;
  int flops_per_evaluation = 0;
  std::int64_t nx = 0, ny = 0, nz = 0;    ///< the whole grid
  std::int64_t ny_used = 0, nz_used = 0;  ///< the part computed (see WorkShape)
  std::size_t atoms = 0;
  int block_x = 0, block_y = 0, coarsening = 0;  ///< requested; 0 = the variant's default
  int fma_split = -1;                            ///< requested FMA-pipe split; -1 = the device's tuned value
  int repeats = 0, warmup = 0;
  Stats kernel_ms;
  double wall_ms_median = kNotAvailable;
  double evaluations = kNotAvailable;       ///< nx · ny_used · nz_used · atoms per run
  double atom_evals_per_s = kNotAvailable;  ///< evaluations / median kernel time
  double wall_evals_per_s = kNotAvailable;  ///< evaluations / median wall time
  double gflops = kNotAvailable;            ///< atom_evals_per_s × flops_per_evaluation / 1e9
  double ceiling_fraction = kNotAvailable;  ///< atom_evals_per_s / rsqrt ceiling (GPU only)
  double max_err_over_tol = kNotAvailable;
  std::size_t points_checked = 0;
  Status status = Status::Skipped;
  std::string device;  ///< where it ran (RunTiming::device)
  std::string note;
};

/// The timed repetitions of one measurement.
struct TimedRuns {
  Stats kernel_seconds;  ///< over the repeats
  double wall_seconds_median = kNotAvailable;
  std::size_t unwritten = 0;  ///< non-finite points summed over every timed output
  RunTiming last;             ///< the last repetition's timing (device, per-worker parts)
};
/// settings.warmup untimed then settings.repeats timed calls of `run_once`, which poisons its
/// output, runs the kernel and returns its timing; `unwritten` counts the non-finite points of
/// the output just computed.
TimedRuns time_runs(const std::function<RunTiming()>& run_once, const std::function<std::size_t()>& unwritten,
                    const Settings& settings);
/// The row's times and rates from `timed`: kernel ms statistics, wall ms, evaluations/s, GFLOPS
/// and the fraction of `ceiling_per_second` (the ceiling of every device or core used; 0: none).
void fill_rates(Measurement& row, const TimedRuns& timed, double evaluations, const KernelVariant& kernel,
                double ceiling_per_second);

/// A row for `kernel` on `problem`'s full grid with nothing measured.
Measurement blank_measurement(std::string sweep, const KernelVariant& kernel, const GridSumProblem& problem,
                              const RunOptions& options);

/// Measures `kernel` on `problem`: sizes the work by the budget (size_by_budget), then runs
/// warmup + repeats times on a NaN-poisoned output, scans every timed output for unwritten
/// (non-finite) points, and checks the last one against the oracle. An espgrid::Error from
/// the kernel gives status Unsupported when `refusal_is_unsupported` (a launch shape the
/// variant refuses) and Fail otherwise, with the message as the note.
Measurement measure(std::string sweep, const KernelVariant& kernel, const PreparedProblem& problem,
                    const RunOptions& options, const Settings& settings, bool refusal_is_unsupported = false);

// ---- output files ---------------------------------------------------------------------------------

/// The CSV columns, in order.
const std::vector<std::string>& csv_columns();
std::string csv_header();
std::string csv_line(const Measurement& row);
/// Quotes a CSV field when it holds a comma, quote or line break.
std::string csv_field(std::string_view text);
/// One JSON object of a result file, written on one line by espgrid's JSON writer
/// (core/json.h): members in the order added, numbers that read back exactly (null when not
/// measured), text always valid UTF-8 (a file name in another encoding too).
class JsonLine {
 public:
  JsonLine& str(std::string_view key, std::string_view value);
  JsonLine& num(std::string_view key, double value);
  JsonLine& integer(std::string_view key, long long value);
  JsonLine& flag(std::string_view key, bool value);
  JsonLine& object(std::string_view key, const JsonLine& value);
  JsonLine& array(std::string_view key, const std::vector<JsonLine>& items);
  std::string text() const { return json_.dump(0); }

 private:
  Json json_ = Json::object();
};
/// Writes `text` to `path` through a temporary file renamed into place (AtomicOutputFile):
/// a result file is whole or absent. Throws Error naming `path` on failure.
void write_text(const std::string& path, const std::string& text);

/// CPU vs GPU at one problem size (the speedup sweep).
struct Speedup {
  std::string label;
  std::int64_t nx = 0, ny = 0, nz = 0;
  std::size_t atoms = 0;
  std::string cpu_kernel, gpu_kernel;
  double cpu_evals_per_s = kNotAvailable, gpu_evals_per_s = kNotAvailable;
  double kernel_speedup = kNotAvailable;  ///< ratio of kernel throughputs
  double wall_speedup = kNotAvailable;    ///< ratio of throughputs by wall time (GPU with transfers)
};

/// What the JSON says about the run besides its rows.
struct Metadata {
  std::string date_utc;
  std::string espgrid_version;
  std::string git_commit;
  std::string device;  ///< the GPU's description, or "none: why"
  int device_index = 0;
  bool cuda_available = false;
  std::string cuda_reason;  ///< why not, when not
  double rsqrt_per_second = kNotAvailable;
  double sm_clock_ghz = kNotAvailable;
  int multiprocessors = 0;
  std::string ceiling_note;                          ///< why the ceiling is n/a, when it is
  std::string cpu_simd_target;                       ///< the vector unit cpu-simd runs on here
  double cpu_core_evals_per_second = kNotAvailable;  ///< the CPU ceiling (Settings has the same)
  double cpu_all_evals_per_second = kNotAvailable;
  std::string host_cpu;
  int host_threads = 0;  ///< hardware threads
  int cpu_threads = 0;   ///< threads the CPU kernels used
  std::string command_line;
  std::string input;  ///< "random atoms (seed 1)" or the structure file
  Settings settings;
};

/// Fills date, version, commit, host CPU and thread counts.
Metadata host_metadata();
/// ESPGRID_COMMIT from the environment, else the commit CMake saw at configure time, else "unknown".
std::string git_commit();
/// "model name" of /proc/cpuinfo, or "unknown".
std::string host_cpu_model();

std::string json_document(std::string_view kind, const Metadata& meta, const std::vector<Measurement>& rows,
                          const std::vector<Speedup>& speedups = {});
/// Writes bench-KIND.csv and bench-KIND.json into `directory` (created if missing), each
/// complete or not at all; returns the two paths.
std::vector<std::string> write_results(const std::string& directory, std::string_view kind, const Metadata& meta,
                                       const std::vector<Measurement>& rows, const std::vector<Speedup>& speedups = {});

// ---- GPU scaling (espgrid bench --sweep gpus) ------------------------------------------------------

/// One GPU count of the scaling sweep: the whole map per run, against the one-GPU run.
struct GpuScaling {
  std::string kernel;
  int gpus = 0;
  std::string devices;                       ///< "0,1,2,3"
  double kernel_ms = kNotAvailable;          ///< median; several GPUs: the busiest device's kernel sum
  double wall_ms = kNotAvailable;            ///< median of the whole call, end to end (copies included)
  double kernel_speedup = kNotAvailable;     ///< one-GPU kernel time / this one
  double wall_speedup = kNotAvailable;       ///< one-GPU wall time / this one
  double kernel_efficiency = kNotAvailable;  ///< kernel_speedup / gpus
  double wall_efficiency = kNotAvailable;    ///< wall_speedup / gpus
  std::string identical;                 ///< "reference" (one GPU), "yes"/"no" (bit-for-bit vs it), "oracle" (atomics)
  std::vector<WorkerTiming> per_device;  ///< the last timed run's workers
};

/// Writes bench-gpus.csv (the rows' columns, then gpus, devices, speedups, efficiencies,
/// identical_to_1gpu, per-device planes and kernel ms) and bench-gpus.json (the usual
/// document plus a "scaling" array) into `directory`; `rows` and `scaling` pair up one to one.
std::vector<std::string> write_gpu_scaling(const std::string& directory, const Metadata& meta,
                                           const std::vector<Measurement>& rows,
                                           const std::vector<GpuScaling>& scaling);

/// Map and atom count of the gpus sweep when no input is given: a one-GPU run takes seconds.
inline constexpr std::array<std::int64_t, 3> kGpuSweepDims = {512, 512, 512};
inline constexpr std::size_t kGpuSweepAtoms = 100000;
/// 1, 2, 4, ... GPUs up to `available`, and `available` itself.
std::vector<int> gpu_sweep_counts(int available);

// ---- end to end (espgrid bench --sweep end-to-end) -------------------------------------------------

/// What the end-to-end measurement runs: `espgrid map INPUT -o FILE` with these options, through
/// the library facade, as the CLI does (streaming formats written while the kernel runs).
struct EndToEndRequest {
  MapJob job;               ///< the structure file, grid, physics, compute and write options (no outputs)
  std::string scratch_dir;  ///< where the map files go (each removed after its run)
};

/// One output format timed end to end, a structure file in and a map file out: the median of
/// every stage over the timed runs, and wall / kernel, which is 1 when nothing around the
/// kernel costs anything (the figure this measurement tracks, as %CEIL tracks the kernel).
struct EndToEnd {
  std::string format;  ///< the output's extension: "mrc", "dx", "vti"
  std::string kernel;
  std::string device;
  std::int64_t nx = 0, ny = 0, nz = 0;
  std::size_t atoms = 0;
  int repeats = 0, warmup = 0;
  bool streamed = false;  ///< written plane by plane while the kernel ran
  std::uint64_t file_bytes = 0;
  double read_ms = kNotAvailable;      ///< reading the structure file
  double prepare_ms = kNotAvailable;   ///< float32 problem and the poisoned map
  double kernel_ms = kNotAvailable;    ///< the kernel (CUDA events on a GPU)
  double transfer_ms = kNotAvailable;  ///< device set-up and copies: compute wall − kernel
  double write_ms = kNotAvailable;     ///< writing after the computation (all of it, unless streamed)
  double streamed_ms = kNotAvailable;  ///< writing during the computation (streamed formats)
  double wall_ms = kNotAvailable;      ///< from opening the structure to the file in place
  double wall_over_kernel = kNotAvailable;
  double max_err_over_tol = kNotAvailable;  ///< the last map at sampled points vs the oracle
  std::size_t points_checked = 0;
  Status status = Status::Skipped;
  std::string note;
};

/// Runs settings.warmup untimed and settings.repeats timed end-to-end maps writing
/// `extension` ("mrc", "dx", "vti"), checks the last map against the double oracle at
/// settings.check_points points and the file's size, and removes the files. Errors become
/// status Fail with the message as the note.
EndToEnd measure_end_to_end(const EndToEndRequest& request, const std::string& extension, const Settings& settings);

/// Writes bench-end-to-end.csv and bench-end-to-end.json into `directory`; returns the paths.
std::vector<std::string> write_end_to_end(const std::string& directory, const Metadata& meta,
                                          const std::vector<EndToEnd>& rows);

// ---- the sweeps' fixed sets ------------------------------------------------------------------------

struct BlockShape {
  int x, y;
};
/// 64 to 1024 threads, rows and tiles.
const std::vector<BlockShape>& sweep_block_shapes();
const std::vector<int>& sweep_coarsening_factors();
const std::vector<std::size_t>& sweep_atom_counts();
const std::vector<std::array<std::int64_t, 3>>& sweep_grid_dims();
inline constexpr std::size_t kSweepGridAtoms = 4096;

struct SpeedupSize {
  std::array<std::int64_t, 3> dims;
  std::size_t atoms;
};
const std::vector<SpeedupSize>& sweep_speedup_sizes();

}  // namespace espgrid::bench
