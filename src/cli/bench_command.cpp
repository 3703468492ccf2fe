// espgrid bench: every registered kernel variant, CPU and GPU, on the same input, plus the
// sweeps (block shapes, coarsening, atoms, grid size, CPU-vs-GPU speedup). The measuring is
// in src/bench/bench.cpp; this file parses options, runs the sweeps and prints the tables.
#include <omp.h>

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

// ---- printing ------------------------------------------------------------------------------

std::string fmt(const char* format, double value) {
  if (!std::isfinite(value)) return "-";
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

std::string times(double ratio) { return std::isfinite(ratio) ? fmt("%.1f", ratio) + "x" : "-"; }

std::string dims_text(std::int64_t nx, std::int64_t ny, std::int64_t nz) {
  return std::to_string(nx) + "x" + std::to_string(ny) + "x" + std::to_string(nz);
}

std::string short_count(std::size_t n) {
  if (n >= 1000 && n % 1000 == 0) return std::to_string(n / 1000) + "k";
  return std::to_string(n);
}

void print_header(const std::string& title) {
  std::printf("\n== %s ==\n", title.c_str());
  std::printf("%-15s %-4s %5s %-16s %12s %10s %7s %10s %10s %9s %6s %7s %s\n", "KERNEL", "BKND", "FL/EV", "CONFIG",
              "PLANES", "MEDIAN ms", "SPREAD", "WALL ms", "EVALS/s", "GFLOPS", "%CEIL", "ERR/TOL", "CHECK");
  std::fflush(stdout);
}

void print_row(const Row& r, const std::string& config) {
  std::printf("%-15s %-4s %5d %-16s ", r.kernel.c_str(), r.backend.c_str(), r.flops_per_evaluation, config.c_str());
  if (r.status == Status::Skipped || r.status == Status::Unsupported || r.nz_used == 0) {
    std::printf("%s: %s\n", std::string(status_name(r.status)).c_str(), r.note.c_str());
    std::fflush(stdout);
    return;
  }
  const std::string planes = r.ny_used < r.ny ? std::to_string(r.ny_used) + "/" + std::to_string(r.ny) + " rows"
                                              : std::to_string(r.nz_used) + "/" + std::to_string(r.nz);
  const double spread = r.kernel_ms.median > 0 ? (r.kernel_ms.max - r.kernel_ms.min) / r.kernel_ms.median * 100 : NAN;
  std::printf("%12s %10s %7s %10s %10s %9s %6s %7s %s", planes.c_str(), fmt("%.3f", r.kernel_ms.median).c_str(),
              (fmt("%.1f", spread) + (std::isfinite(spread) ? "%" : "")).c_str(), fmt("%.3f", r.wall_ms_median).c_str(),
              fmt("%.3e", r.atom_evals_per_s).c_str(), fmt("%.1f", r.gflops).c_str(),
              (fmt("%.1f", r.ceiling_fraction * 100) + (std::isfinite(r.ceiling_fraction) ? "%" : "")).c_str(),
              fmt("%.3f", r.max_err_over_tol).c_str(), std::string(status_name(r.status)).c_str());
  if (r.status == Status::Fail) std::printf("  (%s)", r.note.c_str());
  std::printf("\n");
  std::fflush(stdout);
}

// ---- the run ---------------------------------------------------------------------------------

struct Bench {
  Settings settings;
  RunOptions run;
  bool have_cuda = false;
  std::string cuda_reason;
  std::vector<const KernelVariant*> selected;  ///< --kernel ∩ --backend, in registry order
  Metadata meta;
  std::string out_dir;
  std::array<double, 3> spacing{};
  PhysicsOptions physics;  ///< --model and the unit of every map (kT/e at 298.15 K, vacuum by default)
  std::uint64_t seed = 1;
  bool any_fail = false;
  bool kernels_named = false;  ///< --kernel named the variants (the gpus sweep then runs each CUDA one)
  bool custom_input = false;   ///< an input file, --dims or --atoms (the gpus sweep then uses it)

  bool is_selected(const KernelVariant& k) const {
    return std::find(selected.begin(), selected.end(), &k) != selected.end();
  }

  Row measure_one(const std::string& sweep, const KernelVariant& k, const PreparedProblem& problem,
                  const RunOptions& options, const std::string& config, bool shape_sweep = false) {
    Row row;
    if (k.backend == Backend::Cuda && !have_cuda) {
      row = blank_row(sweep, k, problem.view(nullptr), options);
      row.status = Status::Skipped;
      row.note = "no CUDA device: " + cuda_reason;
    } else {
      row = measure(sweep, k, problem, options, settings, shape_sweep);
    }
    if (row.status == Status::Fail) any_fail = true;
    print_row(row, config);
    return row;
  }

  void save(const std::string& kind, const std::vector<Row>& rows, const std::vector<Speedup>& speedups = {}) {
    if (out_dir.empty()) return;
    for (const auto& path : write_results(out_dir, kind, meta, rows, speedups)) std::printf("wrote %s\n", path.c_str());
  }
};

/// GPU variants that take part in the atoms, grid and speedup sweeps (all but scatter, which is
/// slow by design), plus cpu-parallel when `with_cpu`; only those selected.
std::vector<const KernelVariant*> scaling_variants(const Bench& b, bool with_cpu) {
  std::vector<const KernelVariant*> out;
  for (const auto& k : kernel_variants()) {
    const bool wanted =
        k.in_size_sweeps && (k.backend == Backend::Cuda || (with_cpu && &k == &default_kernel(Backend::Cpu)));
    if (wanted && b.is_selected(k)) out.push_back(&k);
  }
  return out;
}

/// Adds one "skipped" row per GPU variant when there is no CUDA device, and drops them from
/// `kernels`. The row carries `problem`'s sizes, or zeros when the sweep has no one problem.
void skip_gpu_variants(Bench& b, const std::string& sweep, std::vector<const KernelVariant*>& kernels,
                       const PreparedProblem* problem, std::vector<Row>& rows) {
  if (b.have_cuda) return;
  std::vector<const KernelVariant*> kept;
  for (const KernelVariant* k : kernels) {
    if (k->backend != Backend::Cuda) {
      kept.push_back(k);
      continue;
    }
    Row row = blank_row(sweep, *k, problem ? problem->view(nullptr) : GridSumProblem{}, b.run);
    row.status = Status::Skipped;
    row.note = "no CUDA device: " + b.cuda_reason;
    print_row(row, "(whole sweep)");
    rows.push_back(row);
  }
  kernels = kept;
}

void sweep_variants(Bench& b, const PreparedProblem& problem) {
  print_header("variants: every selected kernel on the same input");
  std::vector<Row> rows;
  for (const KernelVariant* k : b.selected) rows.push_back(b.measure_one("variants", *k, problem, b.run, "default"));
  b.save("variants", rows);
}

void sweep_blocks(Bench& b, const PreparedProblem& problem) {
  std::vector<const KernelVariant*> kernels = scaling_variants(b, false);
  print_header("blocks: CUDA block shapes, 64 to 1024 threads");
  std::vector<Row> rows;
  skip_gpu_variants(b, "blocks", kernels, &problem, rows);
  for (const KernelVariant* k : kernels) {
    for (const BlockShape s : sweep_block_shapes()) {
      RunOptions o = b.run;
      o.shape.block_x = s.x;
      o.shape.block_y = s.y;
      rows.push_back(
          b.measure_one("blocks", *k, problem, o, "block " + std::to_string(s.x) + "x" + std::to_string(s.y), true));
    }
  }
  b.save("blocks", rows);
}

void sweep_coarsening(Bench& b, const PreparedProblem& problem) {
  std::vector<const KernelVariant*> kernels;
  for (const auto& k : kernel_variants())
    if (k.takes_coarsening() && b.is_selected(k)) kernels.push_back(&k);
  print_header("coarsening: points per thread along x");
  std::vector<Row> rows;
  skip_gpu_variants(b, "coarsening", kernels, &problem, rows);
  for (const KernelVariant* k : kernels) {
    for (const int c : sweep_coarsening_factors()) {
      RunOptions o = b.run;
      o.shape.coarsening = c;
      rows.push_back(b.measure_one("coarsening", *k, problem, o, "coarsen " + std::to_string(c), true));
    }
  }
  b.save("coarsening", rows);
}

/// The dual-pipe families: every FMA-pipe split of the 16-point tile, to choose the split for
/// this device and model (kernels/dualpipe.cu's table takes the fastest).
void sweep_split(Bench& b, const PreparedProblem& problem) {
  std::vector<const KernelVariant*> kernels;
  for (const auto& k : kernel_variants())
    if (k.backend == Backend::Cuda && k.device.layout.dual_pipe && b.is_selected(k)) kernels.push_back(&k);
  print_header("split: points of each thread's 16 on the FMA pipe instead of the SFU (" + model_name(b.physics.model) +
               " model)");
  std::vector<Row> rows;
  skip_gpu_variants(b, "split", kernels, &problem, rows);
  for (const KernelVariant* k : kernels) {
    const Row* best = nullptr;
    const std::size_t first = rows.size();
    for (int split = 0; split <= kMaxFmaSplit; ++split) {
      RunOptions o = b.run;
      o.shape.fma_split = split;
      rows.push_back(b.measure_one("split", *k, problem, o, "split " + std::to_string(split) + "/16", true));
    }
    for (std::size_t i = first; i < rows.size(); ++i)
      if (rows[i].status == Status::Ok && (!best || rows[i].atom_evals_per_s > best->atom_evals_per_s)) best = &rows[i];
    if (best)
      std::printf("fastest split for %s, %s model: %d of 16 points on the FMA pipe (%.1f%% of the rsqrt ceiling)\n",
                  best->kernel.c_str(), model_name(b.physics.model).c_str(), best->fma_split,
                  100 * best->ceiling_fraction);
  }
  b.save(std::string("split-") + model_name(b.physics.model), rows);
}

void sweep_atoms(Bench& b, const GridSpec& grid) {
  std::vector<const KernelVariant*> kernels = scaling_variants(b, true);
  print_header("atoms: random atoms on the " + dims_text(grid.dims[0], grid.dims[1], grid.dims[2]) + " grid");
  std::vector<Row> rows;
  skip_gpu_variants(b, "atoms", kernels, nullptr, rows);
  for (const std::size_t n : sweep_atom_counts()) {
    const PreparedProblem problem = PreparedProblem::for_physics(random_atoms(n, grid, b.seed + n), grid, b.physics);
    for (const KernelVariant* k : kernels)
      rows.push_back(b.measure_one("atoms", *k, problem, b.run, with_commas(n) + " atoms"));
  }
  b.save("atoms", rows);
}

void sweep_grid(Bench& b) {
  std::vector<const KernelVariant*> kernels = scaling_variants(b, true);
  print_header("grid: " + with_commas(kSweepGridAtoms) + " random atoms, growing grids");
  std::vector<Row> rows;
  skip_gpu_variants(b, "grid", kernels, nullptr, rows);
  for (const auto& dims : sweep_grid_dims()) {
    const GridSpec grid = bench_grid(dims, b.spacing);
    const PreparedProblem problem = PreparedProblem::for_physics(
        random_atoms(kSweepGridAtoms, grid, b.seed + static_cast<std::uint64_t>(dims[0])), grid, b.physics);
    for (const KernelVariant* k : kernels)
      rows.push_back(b.measure_one("grid", *k, problem, b.run, dims_text(dims[0], dims[1], dims[2])));
  }
  b.save("grid", rows);
}

void sweep_speedup(Bench& b) {
  std::vector<const KernelVariant*> kernels = scaling_variants(b, true);
  print_header("speedup: " + std::string(default_kernel(Backend::Cpu).name) + " vs the best GPU variant");
  std::vector<Row> rows;
  std::vector<Speedup> speedups;
  skip_gpu_variants(b, "speedup", kernels, nullptr, rows);
  for (const SpeedupSize& size : sweep_speedup_sizes()) {
    const GridSpec grid = bench_grid(size.dims, b.spacing);
    const PreparedProblem problem =
        PreparedProblem::for_physics(random_atoms(size.atoms, grid, b.seed + size.atoms), grid, b.physics);
    Speedup s;
    s.label = dims_text(size.dims[0], size.dims[1], size.dims[2]) + ", " + with_commas(size.atoms) + " atoms";
    s.nx = size.dims[0];
    s.ny = size.dims[1];
    s.nz = size.dims[2];
    s.atoms = size.atoms;
    const Row* cpu = nullptr;
    const Row* best = nullptr;
    const std::size_t first = rows.size();
    for (const KernelVariant* k : kernels)
      rows.push_back(
          b.measure_one("speedup", *k, problem, b.run,
                        dims_text(size.dims[0], size.dims[1], size.dims[2]) + " " + short_count(size.atoms)));
    for (std::size_t i = first; i < rows.size(); ++i) {
      const Row& r = rows[i];
      if (r.status != Status::Ok) continue;
      if (r.kernel == default_kernel(Backend::Cpu).name) cpu = &r;
      if (r.backend == "cuda" && (!best || r.atom_evals_per_s > best->atom_evals_per_s)) best = &r;
    }
    if (cpu) {
      s.cpu_kernel = cpu->kernel;
      s.cpu_evals_per_s = cpu->atom_evals_per_s;
    }
    if (best) {
      s.gpu_kernel = best->kernel;
      s.gpu_evals_per_s = best->atom_evals_per_s;
    }
    if (cpu && best) {
      s.kernel_speedup = best->atom_evals_per_s / cpu->atom_evals_per_s;
      s.wall_speedup = best->wall_evals_per_s / cpu->wall_evals_per_s;
      for (std::size_t i = first; i < rows.size(); ++i)
        if (rows[i].backend == "cuda" && rows[i].status == Status::Ok)
          rows[i].note += std::string(rows[i].note.empty() ? "" : "; ") + "speedup vs " + cpu->kernel + " " +
                          fmt("%.1f", rows[i].atom_evals_per_s / cpu->atom_evals_per_s) + "x";
    }
    speedups.push_back(s);
  }
  std::printf("\n%-32s %-15s %12s %-15s %12s %9s %9s\n", "PROBLEM", "CPU", "EVALS/s", "BEST GPU", "EVALS/s", "SPEEDUP",
              "WITH I/O");
  for (const Speedup& s : speedups)
    std::printf("%-32s %-15s %12s %-15s %12s %9s %9s\n", s.label.c_str(),
                s.cpu_kernel.empty() ? "-" : s.cpu_kernel.c_str(), fmt("%.3e", s.cpu_evals_per_s).c_str(),
                s.gpu_kernel.empty() ? "-" : s.gpu_kernel.c_str(), fmt("%.3e", s.gpu_evals_per_s).c_str(),
                times(s.kernel_speedup).c_str(), times(s.wall_speedup).c_str());
  std::printf(
      "SPEEDUP: ratio of kernel throughputs; WITH I/O: of throughputs by wall time (GPU allocation and\n"
      "copies included).%s\n",
      b.have_cuda ? "" : " No CUDA device here, so no GPU column.");
  b.save("speedup", rows, speedups);
}

/// The gpus sweep: the whole map on 1, 2, 4, ... of the devices (--devices, default all
/// usable ones), each run end to end through the registry (the multi-GPU work queue for more
/// than one); time, speedup and parallel efficiency against one GPU, by kernel time and by
/// wall time; every multi-GPU map compared bit for bit with the one-GPU map.
void sweep_gpus(Bench& b, const PreparedProblem& given) {
  std::optional<PreparedProblem> own;
  if (!b.custom_input) {
    const GridSpec grid = bench_grid(kGpuSweepDims, b.spacing);
    check_grid_fits(grid);
    own.emplace(PreparedProblem::for_physics(random_atoms(kGpuSweepAtoms, grid, b.seed), grid, b.physics));
  }
  const PreparedProblem& problem = own ? *own : given;
  const GridSumProblem full = problem.view(nullptr);
  std::vector<const KernelVariant*> kernels;
  for (const KernelVariant* k : b.selected)
    if (k->uses_plane_driver() && (b.kernels_named || k->role == KernelRole::Default)) kernels.push_back(k);
  std::printf("\n== gpus: %s on %s, %s atoms, the whole map per run; target: parallel efficiency >= 90%% ==\n",
              kernels.empty() ? "no CUDA kernel selected" : "the CUDA kernels",
              dims_text(full.nx, full.ny, full.nz).c_str(), with_commas(full.atom_count).c_str());
  std::printf("%-15s %4s %-12s %11s %11s %9s %9s %7s %7s %11s %s\n", "KERNEL", "GPUS", "DEVICES", "KERNEL ms",
              "WALL ms", "SPEEDUP", "WALL SPD", "EFF", "WALL EFF", "IDENTICAL", "CHECK");
  std::fflush(stdout);
  std::vector<Row> rows;
  std::vector<GpuScaling> scaling;
  std::vector<int> devices = b.run.devices;
  std::string reason = b.cuda_reason;
  if (b.have_cuda && devices.empty()) devices = cuda::usable_devices(&reason);
  for (const KernelVariant* k : kernels) {
    if (!b.have_cuda || devices.empty()) {
      Row row = blank_row("gpus", *k, full, b.run);
      row.status = Status::Skipped;
      row.note = "no CUDA device: " + reason;
      std::printf("%-15s skipped: %s\n", row.kernel.c_str(), row.note.c_str());
      rows.push_back(row);
      GpuScaling g;
      g.kernel = row.kernel;
      scaling.push_back(g);
      continue;
    }
    std::vector<float> reference;
    double base_kernel = kNotAvailable, base_wall = kNotAvailable;
    for (const int count : gpu_sweep_counts(static_cast<int>(devices.size()))) {
      RunOptions o = b.run;
      o.devices.assign(devices.begin(), devices.begin() + count);
      o.device = o.devices.front();
      std::string list;
      for (const int d : o.devices) list += (list.empty() ? "" : ",") + std::to_string(d);
      Row row = blank_row("gpus", *k, full, o);
      row.repeats = b.settings.repeats;
      row.warmup = b.settings.warmup;
      GpuScaling g;
      g.kernel = row.kernel;
      g.gpus = count;
      g.devices = list;
      std::vector<float> out;
      try {
        auto run_once = [&] {
          out.assign(full.point_count(), std::numeric_limits<float>::quiet_NaN());  // poison, outside the timing
          return k->run(problem.view(out.data()), o);
        };
        const TimedRuns timed =  // warm-up: contexts, modules, first touch
            time_runs(
                run_once, [&] { return count_nonfinite(out.data(), out.size()); }, b.settings);
        const std::size_t unwritten = timed.unwritten;
        const RunTiming& last = timed.last;
        row.ny_used = full.ny;
        row.nz_used = full.nz;
        // The ceiling of every GPU used: the fraction is per GPU.
        fill_rates(row, timed, static_cast<double>(full.point_count()) * static_cast<double>(full.atom_count), *k,
                   b.settings.rsqrt_per_second * count);
        row.device = last.device;
        g.per_device = last.parts;
        g.kernel_ms = row.kernel_ms.median;
        g.wall_ms = row.wall_ms_median;
        bool same = true;
        const auto check_oracle = [&] {
          const OracleCheck check = check_against_oracle(problem.view(out.data()), problem.coordinate_extent(),
                                                         b.settings.check_points, b.settings.seed);
          row.points_checked = check.checked;
          row.max_err_over_tol = check.max_err_over_tol;
          return check.ok();
        };
        if (count == 1) {
          same = check_oracle();
          g.identical = "reference";
          base_kernel = g.kernel_ms;
          base_wall = g.wall_ms;
          reference = out;
        } else if (!k->deterministic() || reference.empty()) {
          same = check_oracle();
          g.identical = "oracle";
        } else {
          same = std::memcmp(out.data(), reference.data(), sizeof(float) * out.size()) == 0;
          g.identical = same ? "yes" : "no";
          if (!same) row.note = "differs from the one-GPU map";
        }
        g.kernel_speedup = base_kernel / g.kernel_ms;
        g.wall_speedup = base_wall / g.wall_ms;
        g.kernel_efficiency = g.kernel_speedup / count;
        g.wall_efficiency = g.wall_speedup / count;
        row.status = same && unwritten == 0 ? Status::Ok : Status::Fail;
        std::vector<std::string> notes;
        if (!row.note.empty()) notes.push_back(row.note);
        if (unwritten) notes.push_back(std::to_string(unwritten) + " points not written");
        notes.push_back(std::to_string(count) + " GPUs: speedup " + fmt("%.2f", g.kernel_speedup) + "x kernel, " +
                        fmt("%.2f", g.wall_speedup) + "x wall; efficiency " + fmt("%.1f", 100 * g.kernel_efficiency) +
                        "% kernel, " + fmt("%.1f", 100 * g.wall_efficiency) + "% wall");
        row.note.clear();
        for (const std::string& n : notes) {
          if (!row.note.empty()) row.note += "; ";
          row.note += n;
        }
      } catch (const Error& e) {
        row.status = Status::Fail;
        row.note = e.what();
      }
      if (row.status == Status::Fail) b.any_fail = true;
      std::printf("%-15s %4d %-12s %11s %11s %9s %9s %7s %7s %11s %s\n", row.kernel.c_str(), count, list.c_str(),
                  fmt("%.1f", g.kernel_ms).c_str(), fmt("%.1f", g.wall_ms).c_str(), times(g.kernel_speedup).c_str(),
                  times(g.wall_speedup).c_str(), (fmt("%.1f", 100 * g.kernel_efficiency) + "%").c_str(),
                  (fmt("%.1f", 100 * g.wall_efficiency) + "%").c_str(), g.identical.empty() ? "-" : g.identical.c_str(),
                  std::string(status_name(row.status)).c_str());
      if (row.status == Status::Fail) std::printf("  (%s)\n", row.note.c_str());
      for (const WorkerTiming& p : g.per_device)
        std::printf("    device %d: %lld planes in %d chunks, kernel %.1f ms, wall %.1f ms\n", p.device,
                    static_cast<long long>(p.planes), p.chunks, p.kernel_seconds * 1e3, p.wall_seconds * 1e3);
      std::fflush(stdout);
      rows.push_back(row);
      scaling.push_back(g);
    }
  }
  std::printf(
      "KERNEL ms: median of the busiest GPU's kernel time; WALL ms: the whole call end to end (allocation,\n"
      "atom upload, copies back into the host map); SPEEDUP and EFF (= speedup / GPUs) are against one GPU.\n");
  if (!b.out_dir.empty())
    for (const auto& path : write_gpu_scaling(b.out_dir, b.meta, rows, scaling))
      std::printf("wrote %s\n", path.c_str());
}

/// The end-to-end measurement: the structure file through `espgrid map`'s path to a map file of
/// each format, every stage timed; wall / kernel is the figure to watch (1 = nothing but the kernel).
void sweep_end_to_end(Bench& b, const EndToEndRequest& request, const std::vector<std::string>& formats) {
  const KernelSelection choice = select_kernel(request.job.compute, request.job.physics.model);
  std::printf("\n== end-to-end: %s -> map file, %s (%s), through espgrid map's path ==\n",
              request.job.input.path.c_str(), std::string(choice.kernel->name).c_str(), choice.why.c_str());
  std::printf("%-6s %-8s %10s %9s %9s %10s %10s %10s %11s %10s %11s %s\n", "FORMAT", "STREAMED", "FILE", "READ ms",
              "PREP ms", "KERNEL ms", "TRANSF ms", "WRITE ms", "STREAMED ms", "WALL ms", "WALL/KERNEL", "CHECK");
  std::fflush(stdout);
  std::vector<EndToEnd> rows;
  for (const std::string& format : formats) {
    const EndToEnd e = measure_end_to_end(request, format, b.settings);
    if (e.status == Status::Fail) b.any_fail = true;
    std::printf("%-6s %-8s %10s %9s %9s %10s %10s %10s %11s %10s %11s %s", e.format.c_str(), e.streamed ? "yes" : "no",
                human_bytes(static_cast<double>(e.file_bytes)).c_str(), fmt("%.1f", e.read_ms).c_str(),
                fmt("%.1f", e.prepare_ms).c_str(), fmt("%.1f", e.kernel_ms).c_str(), fmt("%.1f", e.transfer_ms).c_str(),
                fmt("%.1f", e.write_ms).c_str(), fmt("%.1f", e.streamed_ms).c_str(), fmt("%.1f", e.wall_ms).c_str(),
                fmt("%.2f", e.wall_over_kernel).c_str(), std::string(status_name(e.status)).c_str());
    if (!e.note.empty()) std::printf("  (%s)", e.note.c_str());
    std::printf("\n");
    std::fflush(stdout);
    rows.push_back(e);
  }
  if (!rows.empty() && rows.front().nx > 0)
    std::printf("map        %s x %s x %s points, %s atoms, on %s; median of %d runs after %d warm-up\n",
                with_commas(static_cast<std::uint64_t>(rows.front().nx)).c_str(),
                with_commas(static_cast<std::uint64_t>(rows.front().ny)).c_str(),
                with_commas(static_cast<std::uint64_t>(rows.front().nz)).c_str(),
                with_commas(rows.front().atoms).c_str(), rows.front().device.c_str(), b.settings.repeats,
                b.settings.warmup);
  std::printf(
      "WRITE: after the computation; STREAMED: written while the kernel ran (not in the wall's critical path);\n"
      "WALL: from opening the structure file to the map file in place (in one process: the first run's CUDA\n"
      "context is in its TRANSF); WALL/KERNEL = 1 when nothing around the kernel costs anything.\n");
  if (!b.out_dir.empty())
    for (const auto& path : write_end_to_end(b.out_dir, b.meta, rows)) std::printf("wrote %s\n", path.c_str());
}

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

BenchInput bench_input(const cxxopts::ParseResult& args, const MapJob& job, const Bench& b) {
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
/// row is selected, the CPU's evaluation rate for cpu-simd when a CPU row is.
void measure_ceilings(Bench& b, const std::string& input_text, int argc, char** argv) {
  b.meta = host_metadata();
  b.meta.settings = b.settings;
  b.meta.device_index = b.run.device;
  b.meta.cuda_available = b.have_cuda;
  b.meta.cuda_reason = b.have_cuda ? "" : b.cuda_reason;
  b.meta.cpu_threads = b.run.threads > 0 ? b.run.threads : omp_get_max_threads();
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
void print_bench_header(const Bench& b, const std::string& input_text, const GridSpec& grid) {
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
        "FMA, from registers); %%CEIL of CPU rows is against these\n",
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
void read_settings(const cxxopts::ParseResult& args, Bench& b) {
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

/// The rows to measure: --kernel's list (or all), on --backend's side; whether CUDA is usable
/// (--require-cuda and --backend cuda make its absence an error).
void select_kernels(const cxxopts::ParseResult& args, const ComputeOptions& compute, Bench& b) {
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
    {"forcefield", "ph", "keep-pqr", "output"},
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

  Bench b;
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
  const bool end_to_end = std::find(sweeps.begin(), sweeps.end(), "end-to-end") != sweeps.end();
  EndToEndRequest e2e;
  std::vector<std::string> e2e_formats;
  if (end_to_end) {
    if (!args.count("input"))
      throw UsageError("--sweep end-to-end needs a structure file: espgrid bench FILE.pqr --sweep end-to-end");
    for (const std::string& f : split_commas(args["formats"].as<std::string>())) {
      if (!find_map_format_word(f)) throw UsageError("--formats takes " + map_format_words() + ", got '" + f + "'");
      e2e_formats.push_back(f);
    }
    e2e.job = job;
    e2e.job.grid.spacing = triple_option("spacing", args["spacing"].as<std::string>(), true);
    e2e.job.grid.padding = number_option("padding", args["padding"].as<std::string>());
    check_grid_request(e2e.job.grid);
    if (job.compute.kernel.find(',') != std::string::npos || job.compute.kernel == "all")
      throw UsageError("--sweep end-to-end runs one kernel: name it with --kernel NAME, or leave the default");
    // $TMPDIR, /tmp when unset or empty; a missing one is named (not a raw filesystem_error)
    e2e.scratch_dir = args.count("scratch") ? args["scratch"].as<std::string>()
                                            : temporary_directory("--sweep end-to-end's scratch maps");
  }

  select_kernels(args, compute, b);
  const BenchInput input = bench_input(args, job, b);
  const GridSpec& grid = input.grid;
  measure_ceilings(b, input.text, argc, argv);
  const PreparedProblem problem = PreparedProblem::for_physics(input.atoms, grid, b.physics);
  print_bench_header(b, input.text, grid);
  const Stopwatch total;
  auto timed = [&](const std::string& name, const auto& body) {
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
  };
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
      MsmSweepContext context;
      context.run = b.run;
      context.settings = b.settings;
      context.physics = b.physics;
      context.spacing = b.spacing;
      context.use_gpu = b.have_cuda && compute.backend != BackendChoice::Cpu;
      if (args.count("input")) context.base_structure = args["input"].as<std::string>();
      context.out_dir = b.out_dir;
      context.meta = b.meta;
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
