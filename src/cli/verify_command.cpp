// espgrid verify: runs kernels on a structure and compares every grid point with the reference
// kernel's map: an exact kernel within the float32 bound of compute/oracle.h at every point, an
// approximate one by the bound it declares (relative RMS error at points >= 1.4 Å from atoms,
// compute/approximation_error.h); or, with --sample N, N sampled points of each exact kernel's
// map with the double oracle. Before the reference is computed it says how long that will take,
// from a timed probe of a few planes.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <random>

#include "src/bench/bench.h"
#include "src/cli/commands.h"
#include "src/cli/options.h"
#include "src/cli/progress.h"
#include "src/compute/approximation_error.h"
#include "src/compute/oracle.h"
#include "src/core/errors.h"
#include "src/core/stopwatch.h"
#include "src/core/text_format.h"
#include "src/core/thread_count.h"
#include "src/pipeline/map_pipeline.h"
#include "src/pipeline/time_estimate.h"

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

/// Runs `kernel` with `base` (CPU kernels on this host only: no devices); on failure prints the
/// kernel's row with the reason and returns false.
bool run_or_report(const KernelVariant& kernel, const PreparedProblem& problem, RunOptions base,
                   std::vector<float>& out, RunTiming& timing) {
  try {
    if (kernel.backend == Backend::Cpu) base.devices.clear();
    out = run_kernel(kernel, problem, base, &timing);
    return true;
  } catch (const Error& e) {
    std::printf("%-16s %s\n", std::string(kernel.name).c_str(), e.what());
    return false;
  }
}

/// "cpu-parallel on 16 threads" for the estimate line.
std::string cpu_description_text(const KernelVariant& kernel, const RunOptions& run) {
  const int threads = kernel.serial ? 1 : threads_to_use(run.threads);
  return std::string(kernel.name) + " on " + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
}

/// --sample: each kernel's map at `samples` points (drawn with `seed`) against the double oracle:
/// an exact kernel within the float32 tolerance, an approximate one within its bound. Exit code.
int verify_sampled(const std::vector<const KernelVariant*>& kernels, const PreparedProblem& problem,
                   const RunOptions& run, std::size_t samples, std::uint64_t seed) {
  std::printf("reference  the double oracle at %s sampled points of each map (seed %lld), plus the first and last\n",
              with_commas(samples).c_str(), static_cast<long long>(seed));
  std::printf("%-16s %10s %12s %10s  %s\n", "KERNEL", "POINTS", "MAX ERR/TOL", "TIME", "RESULT");
  std::fflush(stdout);
  bool all_pass = true;
  for (const KernelVariant* k : kernels) {
    std::vector<float> out;
    RunTiming t;
    if (!run_or_report(*k, problem, run, out, t)) {
      all_pass = false;
      continue;
    }
    const std::size_t unwritten = count_nonfinite(out.data(), out.size());
    if (k->approximate()) {
      // By its declared bound: relative RMS error against the oracle at sampled points away from atoms.
      const ApproximationError e = sampled_approximation_error(problem.view(out.data()), samples, seed);
      const double bound = k->bound_for(run.method, problem.view(nullptr).model);  // --accuracy's, for this model
      const bool pass = e.points > 0 && e.relative_rms <= bound && unwritten == 0;
      all_pass = all_pass && pass;
      std::printf("%-16s %10s %12s %10s  %s (relative RMS %.3e at points >= 1.4 A from atoms, bound %.0e)",
                  std::string(k->name).c_str(), with_commas(e.points).c_str(), "-",
                  seconds_text(t.kernel_seconds).c_str(), pass ? "pass" : "FAIL", e.relative_rms, bound);
      if (unwritten) std::printf(" (%zu points not written or not finite)", unwritten);
      std::printf("\n");
      continue;
    }
    const OracleCheck check =
        check_against_oracle(problem.view(out.data()), problem.coordinate_extent(), samples, seed);
    const bool pass = check.ok() && unwritten == 0;
    all_pass = all_pass && pass;
    std::printf("%-16s %10s %12.3e %10s  %s", std::string(k->name).c_str(), with_commas(check.checked).c_str(),
                check.max_err_over_tol, seconds_text(t.kernel_seconds).c_str(), pass ? "pass" : "FAIL");
    if (unwritten) std::printf(" (%zu points not written or not finite)", unwritten);
    std::printf("\n");
  }
  std::printf(
      "tolerance: float32 rounding of the sum (4 sqrt(N) + 8 ulp of sum|q| f(r)) plus positions rounded to "
      "float32 (compute/oracle.h); ERR/TOL <= 1 passes\n");
  return all_pass ? 0 : 1;
}

/// Every point of each kernel's map against the reference kernel's, computed on every core:
/// within the float32 bound of both sums (an approximate kernel: its declared bound). Exit code.
int verify_every_point(const std::vector<const KernelVariant*>& kernels, const PreparedProblem& problem,
                       const RunOptions& run, std::size_t atom_count, const PhysicsOptions& physics) {
  const std::size_t n = problem.point_count();
  const double evaluations = static_cast<double>(n) * static_cast<double>(atom_count);
  const KernelVariant& values_kernel = fast_reference_kernel();
  std::printf(
      "reference  %s%s\n", std::string(reference_kernel().name).c_str(),
      &values_kernel == &reference_kernel()
          ? ""
          : (" (its values computed by " + std::string(values_kernel.name) + ", bit for bit the same)").c_str());
  std::fflush(stdout);
  RunOptions cpu_run = run;
  cpu_run.devices.clear();
  // Twice the map's work (values, and magnitudes for the bound), at the rate of a timed probe.
  const double rate = probe_rate(values_kernel, problem, cpu_run);
  const double estimate = 2 * evaluations / rate;
  std::printf("estimate   %s atom-evaluations twice (values and magnitudes) at %s/s measured on %s: about %s%s\n",
              short_scientific(evaluations).c_str(), short_scientific(rate).c_str(),
              cpu_description_text(values_kernel, cpu_run).c_str(), seconds_text(estimate).c_str(),
              estimate > 60 ? "; --sample N checks N points against the double oracle instead" : "");
  std::fflush(stdout);
  const std::vector<float> reference = run_kernel(values_kernel, problem, cpu_run);
  // Σ|q|·f(r) per point: the same sum with |q|, which sets the float rounding scale.
  const std::vector<float> magnitude = run_kernel(values_kernel, problem.with_absolute_charges(), cpu_run);
  const double bound_factor = kernel_difference_bound(1.0, atom_count, physics.model, pair_parameters(physics));

  std::printf("%-16s %12s %12s %14s %10s  %s\n", "KERNEL", "MAX |ERR|", "MAX ERR/MAG", "MAX REL (>1%)", "TIME",
              "RESULT");
  bool all_pass = true;
  const double big = 0.01 * std::max(std::fabs(*std::max_element(reference.begin(), reference.end())),
                                     std::fabs(*std::min_element(reference.begin(), reference.end())));
  for (const KernelVariant* k : kernels) {
    std::vector<float> out;
    RunTiming t;
    if (!run_or_report(*k, problem, run, out, t)) {
      all_pass = false;
      continue;
    }
    if (k->approximate()) {
      // Judged by its declared bound; the reference's float32 rounding (~1e-7 relative) is far below it.
      const double bound = k->bound_for(run.method, problem.view(nullptr).model);
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

}  // namespace

int run_verify(int argc, char** argv) {
  cxxopts::Options options("espgrid verify",
                           "Run kernels on a structure and compare every grid point with the reference kernel.\n");
  options.custom_help("INPUT [--kernel NAME[,NAME...]|all] [options]");
  options.positional_help("");
  const JobOptionSet job_options_taken{
      {OptionGroup::Input, OptionGroup::Grid, OptionGroup::Physics, OptionGroup::Compute}};
  add_job_options(options, job_options_taken, "structure file (.pqr, .xyz; .pdb or .cif: charges from pdb2pqr)",
                  "kernel variants to check: all (default), or NAME[,NAME...]");
  // clang-format off
  options.add_options("Check")
      ("sample", "check N sampled points of each kernel's map against the double oracle instead of every point "
                 "against the reference map (seconds instead of the reference's minutes on large structures)",
       cxxopts::value<std::string>())
      ("seed", "seed of the sampled points (default: a fresh one, printed)", cxxopts::value<std::string>());
  // clang-format on
  options.add_options()("h,help", "show this help");
  const auto args = parse_args(options, argc, argv);
  if (args.count("help")) {
    std::cout << options.help({"Input", "Grid", "Physics", "Compute", "Check", ""})
              << "\nA kernel passes when |kernel - reference| <= 2 (4 sqrt(N) + 8) ulp x sum_i |q_i| f(r_i) at every\n"
                 "point: the float32 rounding both sums may carry for N atoms. An approximate kernel (cpu-msm,\n"
                 "cuda-msm) passes when its relative RMS error at the points >= 1.4 A from every atom is within\n"
                 "the bound it declares (--accuracy chooses it). With --sample, an exact kernel passes when\n"
                 "|kernel - oracle| is within the float32 tolerance of compute/oracle.h at every sampled point (and\n"
                 "no point of the map is NaN or infinite). Exit code 1 if any fails. The reference map is computed\n"
                 "on every core (cpu-parallel: bit for bit cpu-reference); its time is estimated from a probe first.\n";
    return 0;
  }
  MapJob job = job_from_args(args, job_options_taken, JobUse::Values);
  if (job.physics.is_pb())
    throw UsageError(
        "verify compares the pair-model kernels with the double-precision reference sum; --model pb is a field "
        "solve that no kernel computes, so verify has nothing to check it against (PB maps are checked against "
        "APBS 3.4.1: docs/pb.md)");
  // --kernel is verify's list; the pipeline checks everything else the job says.
  const std::string which = job.compute.kernel.empty() ? "all" : job.compute.kernel;
  job.compute.kernel.clear();
  const PhysicsOptions& physics = job.physics;
  ComputeOptions& compute = job.compute;

  std::vector<const KernelVariant*> kernels;
  std::string reason;
  const bool have_cuda = cuda_available(&reason);
  if (which == "all") {
    for (const auto& k : kernel_variants())
      if (k.role != KernelRole::Reference && !k.serial && k.available() && k.supports(physics.model))
        kernels.push_back(&k);
    if (!have_cuda) std::printf("note: skipping the CUDA kernels: %s\n", reason.c_str());
  } else {
    for (const auto& name : split_commas(which)) kernels.push_back(&find_kernel(name));
  }
  struct Notes : MapObserver {
    void notice(const std::string& text) override { std::fprintf(stderr, "espgrid: note: %s\n", text.c_str()); }
  } notes;
  const PreparedJob prepared = prepare_job(job, notes, /*check_outputs=*/false);
  const Atoms& atoms = prepared.structure.atoms;
  const GridSpec& grid = prepared.grid;
  std::printf("input      %s: %s atoms; grid %s\n", job.input.path.c_str(), with_commas(atoms.size()).c_str(),
              describe(grid).c_str());
  const PreparedProblem problem = PreparedProblem::for_physics(atoms, grid, physics);

  if (args.count("sample")) {
    const long long samples = whole_option("sample", args["sample"].as<std::string>());
    if (samples < 1) throw UsageError("--sample must be at least 1");
    const long long seed = args.count("seed") ? whole_option("seed", args["seed"].as<std::string>())
                                              : static_cast<long long>(std::random_device{}() >> 1);
    if (seed < 0) throw UsageError("--seed must be 0 or more");
    return verify_sampled(kernels, problem, compute.run, static_cast<std::size_t>(samples),
                          static_cast<std::uint64_t>(seed));
  }
  return verify_every_point(kernels, problem, compute.run, atoms.size(), physics);
}

}  // namespace espgrid::cli
