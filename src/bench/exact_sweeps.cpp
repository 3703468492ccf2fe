// The exact kernels' sweeps of `espgrid bench` (exact_sweeps.h).
#include "src/bench/exact_sweeps.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>

#include "src/compute/cuda_driver.h"
#include "src/core/errors.h"
#include "src/core/grid.h"
#include "src/core/text_format.h"
#include "src/registry/kernel_registry.h"

namespace espgrid::bench {
namespace {

std::string times(double ratio) { return std::isfinite(ratio) ? format_or_dash("%.1f", ratio) + "x" : "-"; }

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

void print_line(const Measurement& r, const std::string& config) {
  std::printf("%-15s %-4s %5d %-16s ", r.kernel.c_str(), r.backend.c_str(), r.flops_per_evaluation, config.c_str());
  if (r.status == Status::Skipped || r.status == Status::Unsupported || r.nz_used == 0) {
    std::printf("%s: %s\n", std::string(status_name(r.status)).c_str(), r.note.c_str());
    std::fflush(stdout);
    return;
  }
  const std::string planes = r.ny_used < r.ny ? std::to_string(r.ny_used) + "/" + std::to_string(r.ny) + " rows"
                                              : std::to_string(r.nz_used) + "/" + std::to_string(r.nz);
  const double spread = r.kernel_ms.median > 0 ? (r.kernel_ms.max - r.kernel_ms.min) / r.kernel_ms.median * 100 : NAN;
  std::printf(
      "%12s %10s %7s %10s %10s %9s %6s %7s %s", planes.c_str(), format_or_dash("%.3f", r.kernel_ms.median).c_str(),
      (format_or_dash("%.1f", spread) + (std::isfinite(spread) ? "%" : "")).c_str(),
      format_or_dash("%.3f", r.wall_ms_median).c_str(), format_or_dash("%.3e", r.atom_evals_per_s).c_str(),
      format_or_dash("%.1f", r.gflops).c_str(),
      (format_or_dash("%.1f", r.ceiling_fraction * 100) + (std::isfinite(r.ceiling_fraction) ? "%" : "")).c_str(),
      format_or_dash("%.3f", r.max_err_over_tol).c_str(), std::string(status_name(r.status)).c_str());
  if (r.status == Status::Fail) std::printf("  (%s)", r.note.c_str());
  std::printf("\n");
  std::fflush(stdout);
}

/// GPU variants that take part in the atoms, grid and speedup sweeps (all but scatter, which is
/// slow by design), plus cpu-parallel when `with_cpu`; only those selected.
std::vector<const KernelVariant*> scaling_variants(const BenchRun& b, bool with_cpu) {
  std::vector<const KernelVariant*> out;
  for (const auto& k : kernel_variants()) {
    const bool wanted =
        k.in_size_sweeps && (k.backend == Backend::Cuda || (with_cpu && &k == &default_kernel(Backend::Cpu)));
    if (wanted && b.is_selected(k)) out.push_back(&k);
  }
  return out;
}

/// Adds one "skipped" line per GPU variant when there is no CUDA device, and drops them from
/// `kernels`. The line carries `problem`'s sizes, or zeros when the sweep has no one problem.
void skip_gpu_variants(BenchRun& b, const std::string& sweep, std::vector<const KernelVariant*>& kernels,
                       const PreparedProblem* problem, std::vector<Measurement>& lines) {
  if (b.have_cuda) return;
  std::vector<const KernelVariant*> kept;
  for (const KernelVariant* k : kernels) {
    if (k->backend != Backend::Cuda) {
      kept.push_back(k);
      continue;
    }
    Measurement line = blank_measurement(sweep, *k, problem ? problem->view(nullptr) : GridSumProblem{}, b.run);
    line.status = Status::Skipped;
    line.note = "no CUDA device: " + b.cuda_reason;
    print_line(line, "(whole sweep)");
    lines.push_back(line);
  }
  kernels = kept;
}

}  // namespace

bool BenchRun::is_selected(const KernelVariant& k) const {
  return std::find(selected.begin(), selected.end(), &k) != selected.end();
}

Measurement BenchRun::measure_one(const std::string& sweep, const KernelVariant& k, const PreparedProblem& problem,
                                  const RunOptions& options, const std::string& config, bool shape_sweep) {
  Measurement line;
  if (k.backend == Backend::Cuda && !have_cuda) {
    line = blank_measurement(sweep, k, problem.view(nullptr), options);
    line.status = Status::Skipped;
    line.note = "no CUDA device: " + cuda_reason;
  } else {
    line = measure(sweep, k, problem, options, settings, shape_sweep);
  }
  if (line.status == Status::Fail) any_fail = true;
  print_line(line, config);
  return line;
}

void BenchRun::save(const std::string& kind, const std::vector<Measurement>& lines,
                    const std::vector<Speedup>& speedups) {
  if (out_dir.empty()) return;
  for (const auto& path : write_results(out_dir, kind, meta, lines, speedups)) std::printf("wrote %s\n", path.c_str());
}

void sweep_variants(BenchRun& b, const PreparedProblem& problem) {
  print_header("variants: every selected kernel on the same input");
  std::vector<Measurement> lines;
  for (const KernelVariant* k : b.selected) lines.push_back(b.measure_one("variants", *k, problem, b.run, "default"));
  b.save("variants", lines);
}

void sweep_blocks(BenchRun& b, const PreparedProblem& problem) {
  std::vector<const KernelVariant*> kernels = scaling_variants(b, false);
  print_header("blocks: CUDA block shapes, 64 to 1024 threads");
  std::vector<Measurement> lines;
  skip_gpu_variants(b, "blocks", kernels, &problem, lines);
  for (const KernelVariant* k : kernels) {
    for (const BlockShape s : sweep_block_shapes()) {
      RunOptions o = b.run;
      o.shape.block_x = s.x;
      o.shape.block_y = s.y;
      lines.push_back(
          b.measure_one("blocks", *k, problem, o, "block " + std::to_string(s.x) + "x" + std::to_string(s.y), true));
    }
  }
  b.save("blocks", lines);
}

void sweep_coarsening(BenchRun& b, const PreparedProblem& problem) {
  std::vector<const KernelVariant*> kernels;
  for (const auto& k : kernel_variants())
    if (k.takes_coarsening() && b.is_selected(k)) kernels.push_back(&k);
  print_header("coarsening: points per thread along x");
  std::vector<Measurement> lines;
  skip_gpu_variants(b, "coarsening", kernels, &problem, lines);
  for (const KernelVariant* k : kernels) {
    for (const int c : sweep_coarsening_factors()) {
      RunOptions o = b.run;
      o.shape.coarsening = c;
      lines.push_back(b.measure_one("coarsening", *k, problem, o, "coarsen " + std::to_string(c), true));
    }
  }
  b.save("coarsening", lines);
}

/// The dual-pipe families: every FMA-pipe split of the 16-point tile, to choose the split for
/// this device and model (kernels/dualpipe.cu's table takes the fastest).
void sweep_split(BenchRun& b, const PreparedProblem& problem) {
  std::vector<const KernelVariant*> kernels;
  for (const auto& k : kernel_variants())
    if (k.backend == Backend::Cuda && k.device.layout.dual_pipe && b.is_selected(k)) kernels.push_back(&k);
  print_header("split: points of each thread's 16 on the FMA pipe instead of the SFU (" + model_name(b.physics.model) +
               " model)");
  std::vector<Measurement> lines;
  skip_gpu_variants(b, "split", kernels, &problem, lines);
  for (const KernelVariant* k : kernels) {
    const Measurement* best = nullptr;
    const std::size_t first = lines.size();
    for (int split = 0; split <= kMaxFmaSplit; ++split) {
      RunOptions o = b.run;
      o.shape.fma_split = split;
      lines.push_back(b.measure_one("split", *k, problem, o, "split " + std::to_string(split) + "/16", true));
    }
    for (std::size_t i = first; i < lines.size(); ++i)
      if (lines[i].status == Status::Ok && (!best || lines[i].atom_evals_per_s > best->atom_evals_per_s))
        best = &lines[i];
    if (best)
      std::printf("fastest split for %s, %s model: %d of 16 points on the FMA pipe (%.1f%% of the rsqrt ceiling)\n",
                  best->kernel.c_str(), model_name(b.physics.model).c_str(), best->fma_split,
                  100 * best->ceiling_fraction);
  }
  b.save(std::string("split-") + model_name(b.physics.model), lines);
}

void sweep_atoms(BenchRun& b, const GridSpec& grid) {
  std::vector<const KernelVariant*> kernels = scaling_variants(b, true);
  print_header("atoms: random atoms on the " + dims_text(grid.dims[0], grid.dims[1], grid.dims[2]) + " grid");
  std::vector<Measurement> lines;
  skip_gpu_variants(b, "atoms", kernels, nullptr, lines);
  for (const std::size_t n : sweep_atom_counts()) {
    const PreparedProblem problem = PreparedProblem::for_physics(random_atoms(n, grid, b.seed + n), grid, b.physics);
    for (const KernelVariant* k : kernels)
      lines.push_back(b.measure_one("atoms", *k, problem, b.run, with_commas(n) + " atoms"));
  }
  b.save("atoms", lines);
}

void sweep_grid(BenchRun& b) {
  std::vector<const KernelVariant*> kernels = scaling_variants(b, true);
  print_header("grid: " + with_commas(kSweepGridAtoms) + " random atoms, growing grids");
  std::vector<Measurement> lines;
  skip_gpu_variants(b, "grid", kernels, nullptr, lines);
  for (const auto& dims : sweep_grid_dims()) {
    const GridSpec grid = bench_grid(dims, b.spacing);
    const PreparedProblem problem = PreparedProblem::for_physics(
        random_atoms(kSweepGridAtoms, grid, b.seed + static_cast<std::uint64_t>(dims[0])), grid, b.physics);
    for (const KernelVariant* k : kernels)
      lines.push_back(b.measure_one("grid", *k, problem, b.run, dims_text(dims[0], dims[1], dims[2])));
  }
  b.save("grid", lines);
}

void sweep_speedup(BenchRun& b) {
  std::vector<const KernelVariant*> kernels = scaling_variants(b, true);
  print_header("speedup: " + std::string(default_kernel(Backend::Cpu).name) + " vs the best GPU variant");
  std::vector<Measurement> lines;
  std::vector<Speedup> speedups;
  skip_gpu_variants(b, "speedup", kernels, nullptr, lines);
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
    const Measurement* cpu = nullptr;
    const Measurement* best = nullptr;
    const std::size_t first = lines.size();
    for (const KernelVariant* k : kernels)
      lines.push_back(
          b.measure_one("speedup", *k, problem, b.run,
                        dims_text(size.dims[0], size.dims[1], size.dims[2]) + " " + short_count(size.atoms)));
    for (std::size_t i = first; i < lines.size(); ++i) {
      const Measurement& r = lines[i];
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
      for (std::size_t i = first; i < lines.size(); ++i)
        if (lines[i].backend == "cuda" && lines[i].status == Status::Ok)
          lines[i].note += std::string(lines[i].note.empty() ? "" : "; ") + "speedup vs " + cpu->kernel + " " +
                           format_or_dash("%.1f", lines[i].atom_evals_per_s / cpu->atom_evals_per_s) + "x";
    }
    speedups.push_back(s);
  }
  std::printf("\n%-32s %-15s %12s %-15s %12s %9s %9s\n", "PROBLEM", "CPU", "EVALS/s", "BEST GPU", "EVALS/s", "SPEEDUP",
              "WITH I/O");
  for (const Speedup& s : speedups)
    std::printf("%-32s %-15s %12s %-15s %12s %9s %9s\n", s.label.c_str(),
                s.cpu_kernel.empty() ? "-" : s.cpu_kernel.c_str(), format_or_dash("%.3e", s.cpu_evals_per_s).c_str(),
                s.gpu_kernel.empty() ? "-" : s.gpu_kernel.c_str(), format_or_dash("%.3e", s.gpu_evals_per_s).c_str(),
                times(s.kernel_speedup).c_str(), times(s.wall_speedup).c_str());
  std::printf(
      "SPEEDUP: ratio of kernel throughputs; WITH I/O: of throughputs by wall time (GPU allocation and\n"
      "copies included).%s\n",
      b.have_cuda ? "" : " No CUDA device here, so no GPU column.");
  b.save("speedup", lines, speedups);
}

namespace {

/// What the gpus sweep compares the runs on several GPUs with: the one-GPU run's map and times.
struct GpuBaseline {
  std::vector<float> map;
  double kernel_ms = kNotAvailable, wall_ms = kNotAvailable;
};

/// The whole map of `problem` computed by `k` on the devices of `o` (`count` of them), timed into
/// `line` and `g`, checked against the oracle (one GPU, or a kernel that is not deterministic)
/// or bit for bit against `base`'s map; the one-GPU run becomes `base`.
void measure_on_gpus(const BenchRun& b, const KernelVariant& k, const PreparedProblem& problem, const RunOptions& o,
                     int count, GpuBaseline& base, Measurement& line, GpuScaling& g) {
  const GridSumProblem full = problem.view(nullptr);
  std::vector<float> out;
  auto run_once = [&] {
    out.assign(full.point_count(), std::numeric_limits<float>::quiet_NaN());  // poison, outside the timing
    return k.run(problem.view(out.data()), o);
  };
  const TimedRuns timed =  // warm-up: contexts, modules, first touch
      time_runs(
          run_once, [&] { return count_nonfinite(out.data(), out.size()); }, b.settings);
  line.ny_used = full.ny;
  line.nz_used = full.nz;
  // The ceiling of every GPU used: the fraction is per GPU.
  fill_rates(line, timed, static_cast<double>(full.point_count()) * static_cast<double>(full.atom_count), k,
             b.settings.rsqrt_per_second * count);
  line.device = timed.last.device;
  g.per_device = timed.last.parts;
  g.kernel_ms = line.kernel_ms.median;
  g.wall_ms = line.wall_ms_median;
  const auto check_oracle = [&] {
    const OracleCheck check = check_against_oracle(problem.view(out.data()), problem.coordinate_extent(),
                                                   b.settings.check_points, b.settings.seed);
    line.points_checked = check.checked;
    line.max_err_over_tol = check.max_err_over_tol;
    return check.ok();
  };
  bool same = true;
  if (count == 1) {
    same = check_oracle();
    g.identical = "reference";
    base.kernel_ms = g.kernel_ms;
    base.wall_ms = g.wall_ms;
    base.map = out;
  } else if (!k.deterministic() || base.map.empty()) {
    same = check_oracle();
    g.identical = "oracle";
  } else {
    same = std::memcmp(out.data(), base.map.data(), sizeof(float) * out.size()) == 0;
    g.identical = same ? "yes" : "no";
    if (!same) line.note = "differs from the one-GPU map";
  }
  g.kernel_speedup = base.kernel_ms / g.kernel_ms;
  g.wall_speedup = base.wall_ms / g.wall_ms;
  g.kernel_efficiency = g.kernel_speedup / count;
  g.wall_efficiency = g.wall_speedup / count;
  line.status = same && timed.unwritten == 0 ? Status::Ok : Status::Fail;
  std::vector<std::string> notes;
  if (!line.note.empty()) notes.push_back(line.note);
  if (timed.unwritten) notes.push_back(std::to_string(timed.unwritten) + " points not written");
  notes.push_back(std::to_string(count) + " GPUs: speedup " + format_or_dash("%.2f", g.kernel_speedup) + "x kernel, " +
                  format_or_dash("%.2f", g.wall_speedup) + "x wall; efficiency " +
                  format_or_dash("%.1f", 100 * g.kernel_efficiency) + "% kernel, " +
                  format_or_dash("%.1f", 100 * g.wall_efficiency) + "% wall");
  line.note.clear();
  for (const std::string& n : notes) line.note += (line.note.empty() ? "" : "; ") + n;
}

void print_gpus_header(const std::vector<const KernelVariant*>& kernels, const GridSumProblem& full) {
  std::printf("\n== gpus: %s on %s, %s atoms, the whole map per run; target: parallel efficiency >= 90%% ==\n",
              kernels.empty() ? "no CUDA kernel selected" : "the CUDA kernels",
              dims_text(full.nx, full.ny, full.nz).c_str(), with_commas(full.atom_count).c_str());
  std::printf("%-15s %4s %-12s %11s %11s %9s %9s %7s %7s %11s %s\n", "KERNEL", "GPUS", "DEVICES", "KERNEL ms",
              "WALL ms", "SPEEDUP", "WALL SPD", "EFF", "WALL EFF", "IDENTICAL", "CHECK");
  std::fflush(stdout);
}

void print_gpus_line(const Measurement& line, const GpuScaling& g) {
  std::printf("%-15s %4d %-12s %11s %11s %9s %9s %7s %7s %11s %s\n", line.kernel.c_str(), g.gpus, g.devices.c_str(),
              format_or_dash("%.1f", g.kernel_ms).c_str(), format_or_dash("%.1f", g.wall_ms).c_str(),
              times(g.kernel_speedup).c_str(), times(g.wall_speedup).c_str(),
              (format_or_dash("%.1f", 100 * g.kernel_efficiency) + "%").c_str(),
              (format_or_dash("%.1f", 100 * g.wall_efficiency) + "%").c_str(),
              g.identical.empty() ? "-" : g.identical.c_str(), std::string(status_name(line.status)).c_str());
  if (line.status == Status::Fail) std::printf("  (%s)\n", line.note.c_str());
  for (const WorkerTiming& p : g.per_device)
    std::printf("    device %d: %lld planes in %d chunks, kernel %.1f ms, wall %.1f ms\n", p.device,
                static_cast<long long>(p.planes), p.chunks, p.kernel_seconds * 1e3, p.wall_seconds * 1e3);
  std::fflush(stdout);
}

}  // namespace

void sweep_gpus(BenchRun& b, const PreparedProblem& given) {
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
  print_gpus_header(kernels, full);
  std::vector<Measurement> lines;
  std::vector<GpuScaling> scaling;
  std::vector<int> devices = b.run.devices;
  std::string reason = b.cuda_reason;
  if (b.have_cuda && devices.empty()) devices = cuda::usable_devices(&reason);
  for (const KernelVariant* k : kernels) {
    if (!b.have_cuda || devices.empty()) {
      Measurement line = blank_measurement("gpus", *k, full, b.run);
      line.status = Status::Skipped;
      line.note = "no CUDA device: " + reason;
      std::printf("%-15s skipped: %s\n", line.kernel.c_str(), line.note.c_str());
      lines.push_back(line);
      GpuScaling g;
      g.kernel = line.kernel;
      scaling.push_back(g);
      continue;
    }
    GpuBaseline base;
    for (const int count : gpu_sweep_counts(static_cast<int>(devices.size()))) {
      RunOptions o = b.run;
      o.devices.assign(devices.begin(), devices.begin() + count);
      o.device = o.devices.front();
      Measurement line = blank_measurement("gpus", *k, full, o);
      line.repeats = b.settings.repeats;
      line.warmup = b.settings.warmup;
      GpuScaling g;
      g.kernel = line.kernel;
      g.gpus = count;
      for (const int d : o.devices) g.devices += (g.devices.empty() ? "" : ",") + std::to_string(d);
      try {
        measure_on_gpus(b, *k, problem, o, count, base, line, g);
      } catch (const Error& e) {
        line.status = Status::Fail;
        line.note = e.what();
      }
      if (line.status == Status::Fail) b.any_fail = true;
      print_gpus_line(line, g);
      lines.push_back(line);
      scaling.push_back(g);
    }
  }
  std::printf(
      "KERNEL ms: median of the busiest GPU's kernel time; WALL ms: the whole call end to end (allocation,\n"
      "atom upload, copies back into the host map); SPEEDUP and EFF (= speedup / GPUs) are against one GPU.\n");
  if (!b.out_dir.empty())
    for (const auto& path : write_gpu_scaling(b.out_dir, b.meta, lines, scaling))
      std::printf("wrote %s\n", path.c_str());
}

/// The end-to-end measurement: the structure file through `espgrid map`'s path to a map file of
/// each format, every stage timed; wall / kernel is the figure to watch (1 = nothing but the kernel).
void sweep_end_to_end(BenchRun& b, const EndToEndRequest& request, const std::vector<std::string>& formats) {
  const KernelSelection choice = select_kernel(request.job.compute, request.job.physics.model);
  std::printf("\n== end-to-end: %s -> map file, %s (%s), through espgrid map's path ==\n",
              request.job.input.path.c_str(), std::string(choice.kernel->name).c_str(), choice.why.c_str());
  std::printf("%-6s %-8s %10s %9s %9s %10s %10s %10s %11s %10s %11s %s\n", "FORMAT", "STREAMED", "FILE", "READ ms",
              "PREP ms", "KERNEL ms", "TRANSF ms", "WRITE ms", "STREAMED ms", "WALL ms", "WALL/KERNEL", "CHECK");
  std::fflush(stdout);
  std::vector<EndToEnd> lines;
  for (const std::string& format : formats) {
    const EndToEnd e = measure_end_to_end(request, format, b.settings);
    if (e.status == Status::Fail) b.any_fail = true;
    std::printf("%-6s %-8s %10s %9s %9s %10s %10s %10s %11s %10s %11s %s", e.format.c_str(), e.streamed ? "yes" : "no",
                human_bytes(static_cast<double>(e.file_bytes)).c_str(), format_or_dash("%.1f", e.read_ms).c_str(),
                format_or_dash("%.1f", e.prepare_ms).c_str(), format_or_dash("%.1f", e.kernel_ms).c_str(),
                format_or_dash("%.1f", e.transfer_ms).c_str(), format_or_dash("%.1f", e.write_ms).c_str(),
                format_or_dash("%.1f", e.streamed_ms).c_str(), format_or_dash("%.1f", e.wall_ms).c_str(),
                format_or_dash("%.2f", e.wall_over_kernel).c_str(), std::string(status_name(e.status)).c_str());
    if (!e.note.empty()) std::printf("  (%s)", e.note.c_str());
    std::printf("\n");
    std::fflush(stdout);
    lines.push_back(e);
  }
  if (!lines.empty() && lines.front().nx > 0)
    std::printf("map        %s x %s x %s points, %s atoms, on %s; median of %d runs after %d warm-up\n",
                with_commas(static_cast<std::uint64_t>(lines.front().nx)).c_str(),
                with_commas(static_cast<std::uint64_t>(lines.front().ny)).c_str(),
                with_commas(static_cast<std::uint64_t>(lines.front().nz)).c_str(),
                with_commas(lines.front().atoms).c_str(), lines.front().device.c_str(), b.settings.repeats,
                b.settings.warmup);
  std::printf(
      "WRITE: after the computation; STREAMED: written while the kernel ran (not in the wall's critical path);\n"
      "WALL: from opening the structure file to the map file in place (in one process: the first run's CUDA\n"
      "context is in its TRANSF); WALL/KERNEL = 1 when nothing around the kernel costs anything.\n");
  if (!b.out_dir.empty())
    for (const auto& path : write_end_to_end(b.out_dir, b.meta, lines)) std::printf("wrote %s\n", path.c_str());
}

}  // namespace espgrid::bench
