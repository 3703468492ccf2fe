// espgrid bench: every registered kernel variant, CPU and GPU, on the same input, plus the
// sweeps (block shapes, coarsening, atoms, grid size, CPU-vs-GPU speedup, GPUs, MSM, end to
// end). The measuring is in src/bench/bench.cpp and the sweeps in src/bench/exact_sweeps.cpp
// and msm_sweeps.cpp; this file parses the options, checks them, prints the header and calls
// the sweeps.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cxxopts.hpp>
#include <filesystem>
#include <iostream>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "src/bench/bench.h"
#include "src/bench/exact_sweeps.h"
#include "src/bench/msm_sweeps.h"
#include "src/cli/commands.h"
#include "src/cli/options.h"
#include "src/compute/cuda_driver.h"
#include "src/compute/prepared_problem.h"
#include "src/compute/simd_kernel.h"
#include "src/core/errors.h"
#include "src/core/grid.h"
#include "src/core/stopwatch.h"
#include "src/core/text_format.h"
#include "src/core/text_parsing.h"
#include "src/core/thread_count.h"
#include "src/core/units.h"
#include "src/maps/map_format_table.h"
#include "src/os/atomic_output_file.h"
#include "src/os/temporary_folder.h"
#include "src/pipeline/map_pipeline.h"
#include "src/registry/kernel_registry.h"
#include "src/structure/structure_reader.h"

namespace espgrid::cli {
namespace {

using namespace espgrid::bench;

std::string shell_word(const std::string& s) {
  if (!s.empty() && s.find_first_of(" \t\n'\"\\$`*?;&|<>(){}[]!#~") == std::string::npos) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

const char* kSweepNames[] = {"blocks", "coarsening", "split", "atoms", "grid", "speedup"};

/// --out must be a folder this run can write (or create), tried before minutes of measuring: a
/// file given as --out, or an unwritable place, once failed only at the end. Nothing is created
/// here; write_results creates the folder when it writes.
void check_out_folder(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path existing = fs::absolute(dir, ec).lexically_normal();
  while (!fs::exists(fs::status(existing, ec)) && existing.has_parent_path() && existing != existing.parent_path())
    existing = existing.parent_path();  // the folder that exists, where the new ones would be made
  const fs::file_status status = fs::status(existing, ec);
  if (!fs::is_directory(status))
    throw UsageError("--out " + dir + ": " + existing.string() +
                     " is not a folder (bench writes bench-KIND.csv and bench-KIND.json into a folder)");
  check_output_path((existing / "bench-variants.csv").string());
}

/// The grids and atom counts every requested sweep will make, checked against memory and
/// ESPGRID_MAX_GRID_POINTS before anything runs (a sweep once ignored the limit).
void check_sweeps_fit(const std::vector<std::string>& sweeps, const std::array<double, 3>& spacing, bool custom_input) {
  for (const std::string& sweep : sweeps) {
    std::vector<std::pair<std::array<std::int64_t, 3>, std::size_t>> sizes;  // grid dims, atoms
    if (sweep == "atoms")
      for (const std::size_t n : sweep_atom_counts()) check_atoms_fit(n);
    if (sweep == "grid")
      for (const auto& dims : sweep_grid_dims()) sizes.push_back({dims, kSweepGridAtoms});
    if (sweep == "speedup")
      for (const SpeedupSize& size : sweep_speedup_sizes()) sizes.push_back({size.dims, size.atoms});
    if (sweep == "gpus" && !custom_input) sizes.push_back({kGpuSweepDims, kGpuSweepAtoms});
    for (const auto& [dims, atoms] : sizes) {
      try {
        check_grid_fits(bench_grid(dims, spacing));
        check_atoms_fit(atoms);
      } catch (const UsageError& e) {
        throw UsageError("--sweep " + sweep + ": " + e.what());
      }
    }
  }
}

/// Bench's input: a structure file (its bounding box plus --padding at the bench spacing) or
/// --atoms random atoms on a --dims grid.
struct BenchInput {
  GridSpec grid;
  Atoms atoms;
  std::string text;  ///< for the header and the result files
};

BenchInput bench_input(const cxxopts::ParseResult& args, const MapJob& job, const BenchRun& b) {
  BenchInput in;
  GridSpec& grid = in.grid;
  Atoms& atoms = in.atoms;
  std::string& input_text = in.text;
  if (args.count("input")) {
    if (args.count("dims") || args.count("atoms"))
      throw UsageError(
          "--dims and --atoms set the random input; with a structure file the grid is its bounding box "
          "plus --padding");
    const std::string path = args["input"].as<std::string>();
    GridRequest request;
    request.spacing = b.spacing;
    request.padding = number_option("padding", args["padding"].as<std::string>());
    check_grid_request(request);
    Structure structure = load_structure(path, job.input.format);
    for (const auto& notice : structure.notices) std::fprintf(stderr, "espgrid: note: %s\n", notice.c_str());
    atoms = std::move(structure.atoms);
    grid = make_grid(request, atoms);
    input_text = path + " (" + with_commas(atoms.size()) + " atoms)";
  } else {
    const long long count = whole_option("atoms", args["atoms"].as<std::string>());
    if (count < 1 || count > 100'000'000) throw UsageError("--atoms must be 1 to 100,000,000");
    check_atoms_fit(static_cast<std::size_t>(count));
    grid = bench_grid(dims_option("dims", args["dims"].as<std::string>()), b.spacing);
    check_grid_fits(grid);
    atoms = random_atoms(static_cast<std::size_t>(count), grid, b.seed);
    input_text = with_commas(static_cast<std::uint64_t>(count)) + " random atoms (seed " + std::to_string(b.seed) + ")";
  }

  check_grid_fits(grid);  // the GPU variants may compute the whole map at once
  return in;
}

/// The run's metadata and the ceilings it is measured against: the GPU's rsqrt rate when a CUDA
/// entry is selected, the CPU's evaluation rate for cpu-simd when a CPU entry is.
void measure_ceilings(BenchRun& b, const std::string& input_text, int argc, char** argv) {
  b.meta = host_metadata();
  b.meta.settings = b.settings;
  b.meta.device_index = b.run.device;
  b.meta.cuda_available = b.have_cuda;
  b.meta.cuda_reason = b.have_cuda ? "" : b.cuda_reason;
  b.meta.cpu_threads = threads_to_use(b.run.threads);
  b.meta.input = input_text;
  b.meta.command_line = "espgrid";
  for (int i = 0; i < argc; ++i) b.meta.command_line += " " + shell_word(argv[i]);
  const bool wants_gpu = std::any_of(b.selected.begin(), b.selected.end(),
                                     [](const KernelVariant* k) { return k->backend == Backend::Cuda; });
  if (b.have_cuda) {
    b.meta.device = cuda::describe_device(b.run.device);
    if (wants_gpu) {
      try {
        const cuda::RsqrtCeiling c = cuda::measure_rsqrt_ceiling(b.run.device);
        b.meta.rsqrt_per_second = c.rsqrt_per_second;
        b.meta.sm_clock_ghz = c.sm_clock_ghz;
        b.meta.multiprocessors = c.multiprocessors;
        b.settings.rsqrt_per_second = c.rsqrt_per_second;
        b.meta.settings = b.settings;
      } catch (const Error& e) {
        b.meta.ceiling_note = std::string("measurement failed: ") + e.what();
      }
    } else {
      b.meta.ceiling_note = "not measured: no CUDA variant selected";
    }
  } else {
    b.meta.device = "none (" + b.cuda_reason + ")";
    b.meta.ceiling_note = "n/a: no CUDA device";
  }
  // The CPU's ceiling for cpu-simd's evaluation, on one core and on the threads the CPU kernels use.
  const bool wants_cpu = std::any_of(b.selected.begin(), b.selected.end(),
                                     [](const KernelVariant* k) { return k->backend == Backend::Cpu; });
  if (wants_cpu) {
    try {
      const cpu::SimdCeiling c = cpu::measure_simd_ceiling(b.run.threads);
      b.meta.cpu_simd_target = c.target;
      b.meta.cpu_core_evals_per_second = b.settings.cpu_core_evals_per_second = c.per_core_evaluations_per_second;
      b.meta.cpu_all_evals_per_second = b.settings.cpu_all_evals_per_second = c.all_cores_evaluations_per_second;
      b.meta.settings = b.settings;
    } catch (const Error& e) {
      b.meta.cpu_simd_target = std::string("not measured: ") + e.what();
    }
  }
}

/// The header of the report: input, host, GPU, the ceilings, how timing and checks work.
void print_bench_header(const BenchRun& b, const std::string& input_text, const GridSpec& grid) {
  std::printf("espgrid bench %s (commit %s), %s UTC\n", b.meta.espgrid_version.c_str(), b.meta.git_commit.c_str(),
              b.meta.date_utc.c_str());
  std::printf("input      %s; grid %s, spacing %g,%g,%g Å\n", input_text.c_str(), describe(grid).c_str(),
              grid.spacing[0], grid.spacing[1], grid.spacing[2]);
  std::printf("host       %s, %d hardware threads; CPU kernels use %d\n", b.meta.host_cpu.c_str(), b.meta.host_threads,
              b.meta.cpu_threads);
  std::printf("gpu        %s\n", b.have_cuda ? (b.meta.device + ", device " + std::to_string(b.run.device)).c_str()
                                             : ("none: GPU variants skipped (" + b.cuda_reason + ")").c_str());
  if (std::isfinite(b.meta.rsqrt_per_second))
    std::printf(
        "ceiling    %.4g rsqrt/s measured (%d SMs at %.3f GHz: %.1f per SM per clock); one rsqrt per atom "
        "evaluation\n",
        b.meta.rsqrt_per_second, b.meta.multiprocessors, b.meta.sm_clock_ghz,
        b.meta.rsqrt_per_second / (b.meta.multiprocessors * b.meta.sm_clock_ghz * 1e9));
  else
    std::printf("ceiling    %s\n", b.meta.ceiling_note.c_str());
  if (std::isfinite(b.meta.cpu_core_evals_per_second))
    std::printf(
        "cpu ceil.  %.4g evaluations/s on one core, %.4g on %d threads (%s: FMA r², rsqrt estimate, Newton, "
        "FMA, from registers); %%CEIL of the CPU kernels is against these\n",
        b.meta.cpu_core_evals_per_second, b.meta.cpu_all_evals_per_second, b.meta.cpu_threads,
        b.meta.cpu_simd_target.c_str());
  std::printf(
      "timing     median of %d runs after %d warm-up; budget %g s per run: slower variants compute only the\n"
      "           first z-planes that fit (PLANES used/total; at least one plane, or a plane's first rows when\n"
      "           one plane is over budget), and throughput counts the work actually done\n",
      b.settings.repeats, b.settings.warmup, b.settings.budget_seconds);
  std::printf(
      "check      last timed output vs the double oracle at %zu sampled points, every timed output scanned\n"
      "           for unwritten (NaN-poisoned) points; ERR/TOL = max |err| / float_tolerance, ok when <= 1\n",
      b.settings.check_points);
  std::printf(
      "columns    EVALS/s = grid points x atoms / median kernel time; GFLOPS = EVALS/s x FL/EV (FMA = 2);\n"
      "           %%CEIL = EVALS/s / rsqrt ceiling; SPREAD = (max - min) / median; WALL includes transfers\n");
  std::fflush(stdout);
}

/// --repeats, --warmup, --budget, --check-points and --seed (fresh unless given), checked.
void read_settings(const cxxopts::ParseResult& args, BenchRun& b) {
  b.settings.repeats = static_cast<int>(whole_option("repeats", args["repeats"].as<std::string>()));
  b.settings.warmup = static_cast<int>(whole_option("warmup", args["warmup"].as<std::string>()));
  b.settings.budget_seconds = number_option("budget", args["budget"].as<std::string>());
  const long long check_points = whole_option("check-points", args["check-points"].as<std::string>());
  // Fresh inputs each run unless --seed asks to repeat one; the seed is printed and recorded.
  const long long seed = args.count("seed") ? whole_option("seed", args["seed"].as<std::string>())
                                            : static_cast<long long>(std::random_device{}() >> 1);
  if (b.settings.repeats < 1 || b.settings.repeats > 1000) throw UsageError("--repeats must be 1 to 1000");
  if (b.settings.warmup < 0 || b.settings.warmup > 1000) throw UsageError("--warmup must be 0 to 1000");
  if (!(b.settings.budget_seconds > 0) || b.settings.budget_seconds > 600)
    throw UsageError("--budget must be a positive number of seconds (at most 600)");
  if (check_points < 1) throw UsageError("--check-points must be at least 1");
  if (seed < 0) throw UsageError("--seed must be 0 or more");
  b.settings.check_points = static_cast<std::size_t>(check_points);
  b.seed = static_cast<std::uint64_t>(seed);
  b.settings.seed = b.seed;
}

/// --sweep's list: "all" expanded, the long ones (not in "all") taken as named, unknown ones refused.
std::vector<std::string> parse_sweeps(const std::string& text) {
  std::vector<std::string> sweeps;
  for (const std::string& name : split_commas(text)) {
    if (name == "none") continue;
    if (name == "gpus" || name == "msm" || name == "msm-accuracy" || name == "end-to-end") {  // not in "all": minutes
      sweeps.push_back(name);
      continue;
    }
    if (name == "all") {
      for (const char* s : kSweepNames) sweeps.emplace_back(s);
      continue;
    }
    if (std::find(std::begin(kSweepNames), std::end(kSweepNames), name) == std::end(kSweepNames))
      throw UsageError("--sweep: unknown sweep '" + name +
                       "' (none, all, blocks, coarsening, split, atoms, grid, speedup, gpus, msm, msm-accuracy, "
                       "end-to-end)");
    sweeps.push_back(name);
  }
  return sweeps;
}

/// The entries to measure: --kernel's list (or all), on --backend's side; whether CUDA is usable
/// (--require-cuda and --backend cuda make its absence an error).
void select_kernels(const cxxopts::ParseResult& args, const ComputeOptions& compute, BenchRun& b) {
  const std::string backend = args["backend"].as<std::string>();
  const BackendChoice backend_choice = compute.backend;
  b.have_cuda = cuda_available(&b.cuda_reason);
  if (!b.have_cuda && (backend_choice == BackendChoice::Cuda || args.count("require-cuda")))
    throw Error((backend_choice == BackendChoice::Cuda ? "--backend cuda: " : "--require-cuda: ") + b.cuda_reason);
  const std::string which = compute.kernel.empty() ? "all" : compute.kernel;
  std::vector<const KernelVariant*> named;
  if (which != "all")
    for (const std::string& name : split_commas(which)) named.push_back(&find_kernel(name));
  b.kernels_named = which != "all";
  b.custom_input = args.count("input") || args.count("dims") || args.count("atoms");
  for (const auto& k : kernel_variants()) {
    if (backend_choice != BackendChoice::Auto && backend != backend_name(k.backend)) continue;
    if (which != "all" && std::find(named.begin(), named.end(), &k) == named.end()) continue;
    b.selected.push_back(&k);
  }
  if (b.selected.empty()) throw UsageError("no kernel left: --kernel " + which + " with --backend " + backend);
}

/// The options of the map job bench takes: its input file and format, physics, compute and
/// write options; bench's own input (random atoms, grid, spacing) is in bench_options.
const JobOptionSet kBenchJobOptions{
    {OptionGroup::Input, OptionGroup::Physics, OptionGroup::Compute, OptionGroup::Output},
    without_pdb_input_options({"output"}),
    /*input_required=*/false};

/// `espgrid bench`'s options: the map job's (kBenchJobOptions) and its own.
cxxopts::Options bench_options() {
  cxxopts::Options options("espgrid bench",
                           "Measure every kernel variant (CPU and CUDA) on the same input, and optionally sweep\n"
                           "block shapes, coarsening, atom count, grid size and CPU-vs-GPU speedup.\n");
  options.custom_help("[INPUT.pqr|INPUT.xyz] [options]");
  options.positional_help("");
  // clang-format off
  add_job_options(options, kBenchJobOptions, "structure file; without one, random atoms on a --dims grid",
                  "all (default), or NAME[,NAME...] (see `espgrid kernels`)");
  options.add_options("Input")
      ("atoms", "random atoms (charges uniform in [-1,1] e, in a box around the grid)",
       cxxopts::value<std::string>()->default_value("100000"))
      ("dims", "grid of the random input NX,NY,NZ", cxxopts::value<std::string>()->default_value("256,256,128"))
      ("spacing", "grid spacing in Å: H or HX,HY,HZ", cxxopts::value<std::string>()->default_value("0.5"))
      ("padding", "with a structure file: space around its bounding box, Å", cxxopts::value<std::string>()->default_value("10"))
      ("seed", "seed of the random atoms and of the checked points (default: a fresh one, printed)",
       cxxopts::value<std::string>());
  // clang-format on
  options.add_options("Compute")("require-cuda",
                                 "fail at once when no CUDA device is usable (instead of skipping the GPU variants)");
  // clang-format off
  options.add_options("Measurement")
      ("repeats", "timed runs per measurement", cxxopts::value<std::string>()->default_value("5"))
      ("warmup", "untimed runs before them", cxxopts::value<std::string>()->default_value("1"))
      ("budget", "kernel seconds one repetition may take; slower variants compute fewer z-planes",
       cxxopts::value<std::string>()->default_value("0.5"))
      ("check-points", "points of the last timed output checked against the double oracle",
       cxxopts::value<std::string>()->default_value("1000"))
      ("sweep", "none, all, or a comma list of blocks, coarsening, atoms, grid, speedup; and gpus (not in all: "
                "1, 2, 4, ... GPUs on a 512x512x512 map of 100,000 atoms); msm (not in all: multilevel summation "
                "vs the exact kernel on lattices of the input molecule, default data/achbp.pqr, up to 1.6 M "
                "atoms on a GPU); msm-accuracy (not in all: the error table behind --accuracy); end-to-end (not in "
                "all: a structure file to map files through espgrid map's path)",
       cxxopts::value<std::string>()->default_value("none"))
      ("formats", "end-to-end: the map formats to write, a comma list of " + map_format_words(),
       cxxopts::value<std::string>()->default_value(map_format_words(true, ",")))
      ("scratch", "end-to-end: folder for the map files (removed after each run; they may be GBs)",
       cxxopts::value<std::string>())
      ("sweep-only", "run the sweeps only, not the table of every variant")
      ("out", "write bench-KIND.csv and bench-KIND.json into this folder", cxxopts::value<std::string>());
  // clang-format on
  options.add_options()("h,help", "show this help");
  return options;
}

/// --sweep end-to-end's request: the map job with bench's grid (--spacing, --padding), one kernel,
/// the formats (--formats: words of the format table) and the scratch folder.
EndToEndRequest end_to_end_request(const cxxopts::ParseResult& args, const MapJob& job,
                                   std::vector<std::string>& formats) {
  if (!args.count("input"))
    throw UsageError("--sweep end-to-end needs a structure file: espgrid bench FILE.pqr --sweep end-to-end");
  for (const std::string& f : split_commas(args["formats"].as<std::string>())) {
    if (!find_map_format_word(f)) throw UsageError("--formats takes " + map_format_words() + ", got '" + f + "'");
    formats.push_back(f);
  }
  EndToEndRequest e2e;
  e2e.job = job;
  e2e.job.grid.spacing = triple_option("spacing", args["spacing"].as<std::string>(), true);
  e2e.job.grid.padding = number_option("padding", args["padding"].as<std::string>());
  check_grid_request(e2e.job.grid);
  if (job.compute.kernel.find(',') != std::string::npos || job.compute.kernel == "all")
    throw UsageError("--sweep end-to-end runs one kernel: name it with --kernel NAME, or leave the default");
  // $TMPDIR, /tmp when unset or empty; a missing one is named (not a raw filesystem_error)
  e2e.scratch_dir = args.count("scratch") ? args["scratch"].as<std::string>()
                                          : temporary_directory("--sweep end-to-end's scratch maps");
  return e2e;
}

/// What the MSM sweeps take of the run.
MsmSweepContext msm_context(const BenchRun& b, const cxxopts::ParseResult& args, BackendChoice backend) {
  MsmSweepContext context;
  context.run = b.run;
  context.settings = b.settings;
  context.physics = b.physics;
  context.spacing = b.spacing;
  context.use_gpu = b.have_cuda && backend != BackendChoice::Cpu;
  if (args.count("input")) context.base_structure = args["input"].as<std::string>();
  context.out_dir = b.out_dir;
  context.meta = b.meta;
  return context;
}

/// Runs `body` and prints how long it took; returns what it returns.
template <class Body>
auto timed(const std::string& name, const Body& body) {
  const Stopwatch clock;
  const auto finish = [&] {
    std::printf("(%s: %.1f s)\n", name.c_str(), clock.seconds());
    std::fflush(stdout);
  };
  if constexpr (std::is_void_v<decltype(body())>) {
    body();
    finish();
  } else {
    const auto result = body();
    finish();
    return result;
  }
}

}  // namespace

int run_bench(int argc, char** argv) {
  cxxopts::Options options = bench_options();
  const auto args = parse_args(options, argc, argv);
  if (args.count("help")) {
    std::cout << options.help({"Input", "Physics", "Compute", "Measurement", "Output", ""})
              << "\nEach measurement probes the kernel on growing parts of the grid, then times it on as many whole\n"
                 "z-planes as fit --budget seconds (at least one plane, or a plane's first rows when one plane is\n"
                 "over budget). Throughput counts the work actually done. The last timed output is checked\n"
                 "against the double-precision oracle; any failure makes the exit code 1.\n"
                 "\nExamples:\n  espgrid bench\n  espgrid bench --sweep all --out benchmarks/results\n"
                 "  espgrid bench --sweep gpus --sweep-only --devices all --out benchmarks/results\n"
                 "  espgrid bench data/actin_dimer.pqr --kernel cuda-unrolled,cpu-parallel\n";
    return 0;
  }

  BenchRun b;
  read_settings(args, b);
  const MapJob job = job_from_args(args, kBenchJobOptions, JobUse::Values);  // checked as for map
  const ComputeOptions& compute = job.compute;
  b.run = compute.run;
  b.physics = job.physics;
  b.spacing = triple_option("spacing", args["spacing"].as<std::string>(), true);
  if (args.count("out")) {
    b.out_dir = args["out"].as<std::string>();
    check_out_folder(b.out_dir);
  }

  const std::vector<std::string> sweeps = parse_sweeps(args["sweep"].as<std::string>());
  const bool sweep_only = args.count("sweep-only") > 0;
  if (sweep_only && sweeps.empty()) throw UsageError("--sweep-only needs --sweep");
  check_sweeps_fit(sweeps, b.spacing, args.count("input") || args.count("dims") || args.count("atoms"));
  EndToEndRequest e2e;
  std::vector<std::string> e2e_formats;
  if (std::find(sweeps.begin(), sweeps.end(), "end-to-end") != sweeps.end())
    e2e = end_to_end_request(args, job, e2e_formats);

  select_kernels(args, compute, b);
  const BenchInput input = bench_input(args, job, b);
  const GridSpec& grid = input.grid;
  measure_ceilings(b, input.text, argc, argv);
  const PreparedProblem problem = PreparedProblem::for_physics(input.atoms, grid, b.physics);
  print_bench_header(b, input.text, grid);
  const Stopwatch total;
  if (!sweep_only) timed("variants", [&] { sweep_variants(b, problem); });
  for (const std::string& s : sweeps) {
    if (s == "blocks") timed(s, [&] { sweep_blocks(b, problem); });
    if (s == "coarsening") timed(s, [&] { sweep_coarsening(b, problem); });
    if (s == "split") timed(s, [&] { sweep_split(b, problem); });
    if (s == "atoms") timed(s, [&] { sweep_atoms(b, grid); });
    if (s == "grid") timed(s, [&] { sweep_grid(b); });
    if (s == "speedup") timed(s, [&] { sweep_speedup(b); });
    if (s == "gpus") timed(s, [&] { sweep_gpus(b, problem); });
    if (s == "msm" || s == "msm-accuracy") {
      const MsmSweepContext context = msm_context(b, args, compute.backend);
      const bool ok = s == "msm" ? timed(s, [&] { return sweep_msm(context); })
                                 : timed(s, [&] { return sweep_msm_accuracy(context); });
      b.any_fail = b.any_fail || !ok;
    }
    if (s == "end-to-end") timed(s, [&] { sweep_end_to_end(b, e2e, e2e_formats); });
  }
  std::printf("\ntotal %.1f s. %s\n", total.seconds(),
              b.any_fail ? "Some measurements FAILED verification (exit code 1)." : "Every measured output verified.");
  return b.any_fail ? 1 : 0;
}

}  // namespace espgrid::cli
