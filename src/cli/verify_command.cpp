// espgrid verify: runs kernels on a structure and compares every grid point with the reference
// kernel's map: an exact kernel within the float32 bound of compute/oracle.h at every point, an
// approximate one by the bound it declares (relative RMS error at points >= 1.4 Å from atoms,
// compute/approximation_error.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>

#include "src/cli/commands.h"
#include "src/cli/options.h"
#include "src/cli/progress.h"
#include "src/compute/approximation_error.h"
#include "src/compute/oracle.h"
#include "src/core/errors.h"
#include "src/core/text_format.h"

namespace espgrid::cli {
namespace {

std::vector<float> run_kernel(const KernelVariant& kernel, const PreparedProblem& problem, RunOptions options,
                              RunTiming* timing = nullptr) {
  std::vector<float> out(problem.point_count(), std::numeric_limits<float>::quiet_NaN());  // unwritten stay NaN
  ProgressBar bar(std::string(kernel.name));
  options.progress = [&bar](std::size_t done, std::size_t total) { bar.update(done, total); };
  const RunTiming t = kernel.run(problem.view(out.data()), options);
  if (timing) *timing = t;
  return out;
}

}  // namespace

int run_verify(int argc, char** argv) {
  cxxopts::Options options("espgrid verify",
                           "Run kernels on a structure and compare every grid point with the reference kernel.\n");
  options.custom_help("INPUT [--kernel NAME[,NAME...]|all] [options]");
  options.positional_help("");
  add_structure_options(options, "structure file (.pqr or .xyz)");
  add_grid_options(options);
  add_physics_options(options);
  add_compute_options(options, "kernel variants to check: all (default), or NAME[,NAME...]");
  options.add_options()("h,help", "show this help");
  const auto args = parse_args(options, argc, argv);
  if (args.count("help")) {
    std::cout << options.help({"Input", "Grid", "Physics", "Compute", ""})
              << "\nA kernel passes when |kernel - reference| <= 2 (4 sqrt(N) + 8) ulp x sum_i |q_i| f(r_i) at every\n"
                 "point: the float32 rounding both sums may carry for N atoms. An approximate kernel (cpu-msm,\n"
                 "cuda-msm) passes when its relative RMS error at the points >= 1.4 A from every atom is within\n"
                 "the bound it declares (--accuracy chooses it). Exit code 1 if any fails.\n";
    return 0;
  }
  if (!args.count("input")) throw UsageError("no input file given");
  const std::string input = args["input"].as<std::string>();
  const std::optional<StructureFormat> format = format_option(args);
  const PhysicsOptions physics = physics_options(args);
  const GridRequest grid_req = grid_request(args);
  ComputeOptions compute = compute_options(args);
  const std::string which = compute.kernel.empty() ? "all" : compute.kernel;

  std::vector<const KernelVariant*> kernels;
  std::string reason;
  const bool have_cuda = cuda_available(&reason);
  if (which == "all") {
    for (const auto& k : kernel_variants())
      if (k.role != KernelRole::Reference && !k.serial && (k.backend == Backend::Cpu || have_cuda) &&
          k.supports(physics.model))
        kernels.push_back(&k);
    if (!have_cuda) std::printf("note: skipping the CUDA kernels: %s\n", reason.c_str());
  } else {
    for (const auto& name : split_commas(which)) kernels.push_back(&find_kernel(name));
  }
  if (const std::optional<GridSpec> grid = explicit_grid(grid_req)) check_grid_fits(*grid);
  const Structure structure = load_structure(input, format);
  for (const auto& notice : structure.notices) std::fprintf(stderr, "espgrid: note: %s\n", notice.c_str());
  const Atoms& atoms = structure.atoms;
  const GridSpec grid = make_grid(grid_req, atoms);
  check_grid_fits(grid);
  std::printf("input      %s: %s atoms; grid %s\n", input.c_str(), with_commas(atoms.size()).c_str(),
              describe(grid).c_str());
  const PreparedProblem problem = PreparedProblem::for_physics(atoms, grid, physics);
  const std::size_t n = grid.point_count();

  const KernelVariant& values_kernel = fast_reference_kernel();
  std::printf(
      "reference  %s%s\n", std::string(reference_kernel().name).c_str(),
      &values_kernel == &reference_kernel()
          ? ""
          : (" (its values computed by " + std::string(values_kernel.name) + ", bit for bit the same)").c_str());
  std::fflush(stdout);
  RunOptions cpu_run = compute.run;
  cpu_run.devices.clear();
  const std::vector<float> reference = run_kernel(values_kernel, problem, cpu_run);
  // Σ|q|·f(r) per point: the same sum with |q|, which sets the float rounding scale.
  const std::vector<float> magnitude = run_kernel(values_kernel, problem.with_absolute_charges(), cpu_run);
  const double bound_factor =
      kernel_difference_bound(1.0, atoms.size(), physics.model, pair_parameters(physics));

  std::printf("%-16s %12s %12s %14s %10s  %s\n", "KERNEL", "MAX |ERR|", "MAX ERR/MAG", "MAX REL (>1%)", "TIME",
              "RESULT");
  bool all_pass = true;
  const double big = 0.01 * std::max(std::fabs(*std::max_element(reference.begin(), reference.end())),
                                     std::fabs(*std::min_element(reference.begin(), reference.end())));
  for (const KernelVariant* k : kernels) {
    std::vector<float> out;
    RunTiming t;
    try {
      RunOptions run = compute.run;
      if (k->backend == Backend::Cpu) run.devices.clear();
      out = run_kernel(*k, problem, run, &t);
    } catch (const Error& e) {
      std::printf("%-16s %s\n", std::string(k->name).c_str(), e.what());
      all_pass = false;
      continue;
    }
    if (k->approximate()) {
      // Judged by its declared bound; the reference's float32 rounding (~1e-7 relative) is far below it.
      const double bound = k->bound_for(compute.run.method);
      const ApproximationError e = approximation_error(problem.view(nullptr), out.data(), reference.data());
      const bool pass = e.within(bound);
      all_pass = all_pass && pass;
      std::printf(
          "%-16s %12.3e %12s %14s %10s  %s (approximate: relative RMS %.3e <= bound %.1e at %zu points >= "
          "%.1f Å from atoms; max |err| there %.3e)",
          std::string(k->name).c_str(), e.max_abs_anywhere, "-", "-", seconds_text(t.kernel_seconds).c_str(),
          pass ? "pass" : "FAIL", e.relative_rms, bound, e.points, kAwayFromAtoms, e.max_abs);
      if (e.nonfinite) std::printf(" (%zu points not written or not finite)", e.nonfinite);
      if (e.points == 0) std::printf(" (no point of the grid is that far from every atom: nothing to judge)");
      std::printf("\n");
      continue;
    }
    double max_abs = 0, max_scaled = 0, max_rel = 0;
    bool pass = true;
    std::size_t unwritten = 0;
    for (std::size_t p = 0; p < n; ++p) {
      if (!std::isfinite(out[p])) {
        ++unwritten;
        pass = false;
        continue;
      }
      const double err = std::fabs(static_cast<double>(out[p]) - reference[p]);
      max_abs = std::max(max_abs, err);
      max_scaled = std::max(max_scaled, err / magnitude[p]);
      if (std::fabs(reference[p]) > big) max_rel = std::max(max_rel, err / std::fabs(reference[p]));
      if (err > bound_factor * magnitude[p]) pass = false;
    }
    all_pass = all_pass && pass;
    std::printf("%-16s %12.3e %12.3e %14.3e %10s  %s", std::string(k->name).c_str(), max_abs, max_scaled, max_rel,
                seconds_text(t.kernel_seconds).c_str(), pass ? "pass" : "FAIL");
    if (unwritten) std::printf(" (%zu points not written or not finite)", unwritten);
    std::printf("\n");
  }
  std::printf("bound: |err| <= %.3e x sum|q| f(r) (%s at every point)\n", bound_factor,
              unit_name(physics.unit).c_str());
  return all_pass ? 0 : 1;
}

}  // namespace espgrid::cli
