// What a kernel variant is: an entry of the one table (src/registry/kernel_registry.h) with its
// backend, role, the models it computes, its launch layout and its run function, and the
// options a run takes. Rows are built by the kernel families (src/compute/, src/msm/) and
// listed by the registry.
#pragma once

#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/compute/compute_timing.h"
#include "src/compute/cuda_driver.h"
#include "src/compute/grid_sum_problem.h"
#include "src/compute/launch_plan.h"
#include "src/compute/method_parameters.h"

namespace espgrid {

enum class Backend { Cpu, Cuda };

/// Most CPU threads a kernel may be asked for. libgomp crashed (SIGSEGV) when a parallel
/// region asked for 65,536 threads; the CPU kernels refuse more than this with a UsageError.
inline constexpr int kMaxCpuThreads = 1024;

struct RunOptions {
  int threads = 0;  ///< CPU threads; 0 = OpenMP's default; at most kMaxCpuThreads
  int device = 0;   ///< CUDA device ordinal
  /// CUDA devices; empty = {device}. With more than one entry the z-planes are shared out
  /// through a work queue, one host thread per entry (cuda::compute_potential_multi); an
  /// ordinal may repeat (several workers on one GPU). The CPU kernels ignore it.
  std::vector<int> devices;
  LaunchShape shape;               ///< CUDA launch shape override; zeros = the variant's default
  std::size_t max_slab_bytes = 0;  ///< CUDA: cap on device memory for the map (both slab buffers); 0 = auto
  ProgressFn progress;             ///< optional, called from the calling thread
  PlanesDoneFn planes_done;        ///< optional: each range of planes once it is in the output
  MethodParameters method;         ///< approximate entries: accuracy preset or explicit parameters
  /// CUDA, one device: buffers kept between runs (a compute session's frames); null: per run.
  std::shared_ptr<cuda::DeviceWorkspace> workspace;
  /// Exact CUDA rows on one device with a workspace (trajectory frames): add the map to the
  /// workspace's exact frame sums on the device (compute/frame_sums.h; with Σp² when
  /// `sum_squares`) instead of writing the problem's output; cuda::take_frame_sums fetches them.
  /// The other rows refuse it.
  bool sum_on_device = false;
  bool sum_squares = false;
};

using RunTiming = ComputeTiming;

/// What a variant is for. default_kernel(backend) and reference_kernel() read it.
enum class KernelRole {
  Reference,    ///< what `verify` compares every other kernel with
  Default,      ///< the backend's default (the fastest exact variant)
  Alternative,  ///< any other
};

/// Whether a variant computes the exact sum (to float32 rounding) or approximates it.
enum class Accuracy { Exact, Approximate };

/// How repeatable a variant's map is.
enum class Reproducibility {
  MatchesReference,  ///< bit for bit what the reference kernel writes
  Deterministic,     ///< the same bits on every run, for any slab or device split
  Varies,            ///< the order of the additions varies (atomics): equal within rounding
};

/// A set of pair models, one bit per PairModel.
class ModelSet {
 public:
  constexpr ModelSet(std::initializer_list<PairModel> models) {
    for (PairModel m : models) bits_ |= 1u << static_cast<unsigned>(m);
  }
  /// Every model in PairModels: the entries whose kernels are templated on the evaluator.
  static constexpr ModelSet every_model() {
    ModelSet all{};
    all.bits_ = (1u << kPairModelCount) - 1u;
    return all;
  }
  constexpr bool contains(PairModel m) const { return (bits_ >> static_cast<unsigned>(m)) & 1u; }

 private:
  unsigned bits_ = 0;
};

struct KernelVariant {
  using CpuRun = void (*)(const GridSumProblem& problem, const RunOptions& options);
  /// An entry that runs its own pipeline (the MSM entries: grids, then slabs of planes) instead of
  /// a per-plane kernel: it fills problem.potential, reports planes and returns its timing.
  using MethodRun = RunTiming (*)(const GridSumProblem& problem, const RunOptions& options);
  /// Approximate entries: the error bound a run with these method parameters declares (UsageError
  /// for parameters it cannot use).
  using BoundFn = double (*)(const MethodParameters& method, PairModel model);

  std::string_view name;
  std::string_view summary;
  Backend backend;
  KernelRole role;
  Accuracy accuracy;
  /// Approximate variants: the bound `verify`, `bench` and the tests judge them by (relative
  /// RMS error against the exact sum at points >= 1.4 Å from every atom) with their default
  /// parameters; bound_for() gives it for other parameters. 0 for exact variants, which are
  /// judged by the oracle's float32 tolerance (compute/oracle.h).
  double error_bound;
  Reproducibility reproducibility;
  ModelSet models;  ///< the pair models it computes
  /// Floating-point operations per atom evaluation by the DCS papers' convention (a fused
  /// multiply-add counts 2, any other operation 1), counted from the variant's inner loop for
  /// the Coulomb model; work amortized over many points (dy²+dz² per row, say) is left out.
  int flops_per_evaluation;
  /// Runs on one CPU thread: benchmarks may time it on part of a plane, and `verify --kernel
  /// all` leaves it out (as slow as the reference). Parallel variants are always timed on
  /// whole planes, so the measurement fills the machine.
  bool serial;
  /// Takes part in the benchmark's atom, grid and speedup sweeps (scatter does not: its
  /// atomics are slow by design and would dominate the sweeps' time).
  bool in_size_sweeps;
  CpuRun cpu_run;                  ///< CPU entries: the kernel
  cuda::DeviceKernel device;       ///< CUDA entries: the launch function and layout
  MethodRun method_run = nullptr;  ///< entries with their own pipeline (either backend); null otherwise
  BoundFn bound = nullptr;         ///< approximate entries
  /// Why this build lacks the entry's code (cpu-simd without Google Highway); empty when built.
  std::string_view not_built = {};

  bool supports(PairModel model) const { return models.contains(model); }
  bool approximate() const { return accuracy == Accuracy::Approximate; }
  /// True for the entries the per-plane CUDA driver runs (cuda::compute_potential and _multi,
  /// RunOptions::devices, shape and slab options): the CUDA entries without a pipeline of their own.
  bool uses_plane_driver() const { return backend == Backend::Cuda && method_run == nullptr; }
  /// The bound a run of `model` with `method` declares: 0 for exact entries.
  double bound_for(const MethodParameters& method, PairModel model = PairModel::Coulomb) const {
    return approximate() && bound ? bound(method, model) : 0.0;
  }
  bool takes_launch_shape() const { return uses_plane_driver(); }
  bool takes_coarsening() const { return uses_plane_driver() && device.layout.coarsens; }
  bool deterministic() const { return reproducibility != Reproducibility::Varies; }
  /// Whether the entry can run here: built into this espgrid and, for CUDA entries, a usable GPU
  /// present. Otherwise `why` says why not. `espgrid kernels`, `espgrid.kernels()` and run()
  /// all ask this, so they agree.
  bool available(std::string* why = nullptr) const;

  /// Fills problem.potential (every point written). Throws UsageError for a model the variant
  /// lacks (naming the variants that have it) or bad options, espgrid::Error on failure.
  RunTiming run(const GridSumProblem& problem, const RunOptions& options) const;
};

}  // namespace espgrid
