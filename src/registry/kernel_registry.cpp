#include "src/registry/kernel_registry.h"

#include <array>
#include <memory>
#include <vector>

#include "src/compute/cpu_kernels.h"
#include "src/compute/simd_kernel.h"
#include "src/core/errors.h"
#include "src/core/stopwatch.h"
#include "src/core/thread_count.h"
#include "src/msm/msm_method.h"
#include "src/physics/physics_options.h"

// A CUDA entry's launch function, or null in a build without CUDA (the entry stays listed and
// its run() reports why it cannot run).
#if ESPGRID_HAVE_CUDA
#define ESPGRID_CUDA_LAUNCH(fn) &cuda::fn
#else
#define ESPGRID_CUDA_LAUNCH(fn) nullptr
#endif
#define ESPGRID_CUDA_PREPARE(fn) ESPGRID_CUDA_LAUNCH(fn)

namespace espgrid {
namespace {

void cpu_naive(const GridSumProblem& p, const RunOptions& o) { cpu::naive(p, o.progress); }
void cpu_reference(const GridSumProblem& p, const RunOptions& o) { cpu::reference(p, o.progress); }
void cpu_parallel(const GridSumProblem& p, const RunOptions& o) { cpu::parallel(p, o.threads, o.progress); }
void cpu_simd(const GridSumProblem& p, const RunOptions& o) { cpu::simd(p, o.threads, o.progress); }

// cpu-simd is the default without a GPU where the build has it (Google Highway).
constexpr std::string_view kSimdNotBuilt =
    ESPGRID_HAVE_HWY ? "" : "this espgrid was built without Google Highway (libhwy-dev not found, or ESPGRID_SIMD=OFF)";
constexpr KernelRole kSimdRole = ESPGRID_HAVE_HWY ? KernelRole::Default : KernelRole::Alternative;
constexpr KernelRole kParallelRole = ESPGRID_HAVE_HWY ? KernelRole::Alternative : KernelRole::Default;

constexpr ModelSet kCoulombOnly = {PairModel::Coulomb};
/// The models multilevel summation splits (msm::split_kernel): f = e^(−κr)/r^p with p = 1 or 2.
constexpr ModelSet kSplitModels = {PairModel::Coulomb, PairModel::Distance, PairModel::Debye};
constexpr ModelSet kEveryModel = ModelSet::every_model();

/// A CPU entry.
constexpr KernelVariant cpu_entry(std::string_view name, std::string_view summary, KernelRole role,
                                  Reproducibility reproducibility, ModelSet models, int flops, bool serial,
                                  KernelVariant::CpuRun run) {
  return KernelVariant{name,   summary, Backend::Cpu, role, Accuracy::Exact, 0.0, reproducibility, models, flops,
                       serial, true,    run,          {}};
}

/// A CUDA entry.
constexpr KernelVariant cuda_entry(std::string_view name, std::string_view summary, KernelRole role,
                                   Reproducibility reproducibility, ModelSet models, int flops, bool in_size_sweeps,
                                   cuda::LaunchFn launch, DeviceLayout layout, cuda::PrepareFn prepare = nullptr) {
  return KernelVariant{name,
                       summary,
                       Backend::Cuda,
                       role,
                       Accuracy::Exact,
                       0.0,
                       reproducibility,
                       models,
                       flops,
                       false,
                       in_size_sweeps,
                       nullptr,
                       cuda::DeviceKernel{launch, layout, prepare}};
}

/// An entry that runs its own pipeline and approximates the sum (the MSM entries): judged by the
/// bound it declares for its parameters, never by the float32 tolerance of the exact entries.
KernelVariant approximate_entry(std::string_view name, std::string_view summary, Backend backend, ModelSet models,
                                KernelVariant::MethodRun run, KernelVariant::BoundFn bound) {
  KernelVariant entry{
      name,
      summary,
      backend,
      KernelRole::Alternative,  // never a default: --backend auto stays exact
      Accuracy::Approximate,
      bound(MethodParameters{}, PairModel::Coulomb),  // the default preset's bound (every model's preset holds it)
      Reproducibility::Deterministic,
      models,
      0,  // no flop count: it does not evaluate every atom-point pair
      false,
      false,  // timed by its own sweep (bench --sweep msm), not the exact kernels' size sweeps
      nullptr,
      {}};
  entry.method_run = run;
  entry.bound = bound;
  return entry;
}

DeviceLayout layout(int bx, int by) {
  DeviceLayout l;
  l.block_x = bx;
  l.block_y = by;
  return l;
}

// The table. Flop counts: see each kernel's comment (kernels/*.cu, src/compute/cpu_kernels.cpp).
const std::vector<KernelVariant>& table() {
  static const std::vector<KernelVariant> entries = [] {
    DeviceLayout scatter = layout(128, 1);
    scatter.accumulates = true;
    scatter.thread_per_atom = true;
    // 1024 threads a block: 48% of the rsqrt ceiling on an H200 against 5% at 32x4, the former
    // default (bench --sweep blocks, 2026-11-21): fewer, wider blocks keep the warps of an SM on
    // nearby atoms, so the small constant cache serves them.
    DeviceLayout constant = layout(1024, 1);
    constant.uses_constant_memory = true;
    DeviceLayout coarsened = layout(16, 8);
    coarsened.coarsening = 8;
    coarsened.coarsens = true;
    coarsened.pads_to_tiles = true;
    DeviceLayout unrolled = coarsened;
    unrolled.register_tile = true;
    DeviceLayout dualpipe = coarsened;  // 16 x 8 threads of 8 x 2 points
    dualpipe.coarsens = false;
    dualpipe.dual_pipe = true;
    dualpipe.double_positions = true;
    std::vector<KernelVariant> table_entries{
        cpu_entry("cpu-naive", "one point at a time over all atoms, recomputing dx, dy, dz (1 thread)",
                  KernelRole::Alternative, Reproducibility::MatchesReference, kEveryModel, 12, true, &cpu_naive),
        cpu_entry("cpu-reference", "per plane dz², per row dy²+dz², then a sweep along x (1 thread)",
                  KernelRole::Reference, Reproducibility::MatchesReference, kEveryModel, 6, true, &cpu_reference),
        cpu_entry("cpu-parallel", "cpu-reference's arithmetic on all cores (OpenMP), x sweep vectorized", kParallelRole,
                  Reproducibility::MatchesReference, kEveryModel, 6, false, &cpu_parallel),
        // 10: FMA r², the rsqrt estimate, the Newton step (3 MUL, 1 FNMADD), FMA accumulate.
        cpu_entry("cpu-simd",
                  "register tiles of 4 vectors x 2 rows, rsqrt estimate + Newton, tile-relative positions, "
                  "blocked sums; SSE4/AVX2/AVX-512 picked at run time (Highway)",
                  kSimdRole, Reproducibility::Deterministic, kEveryModel, 10, false, &cpu_simd),
        cuda_entry("cuda-scatter", "one thread per atom (and plane), atomicAdd into every point of a slab",
                   KernelRole::Alternative, Reproducibility::Varies, kCoulombOnly, 7, false,
                   ESPGRID_CUDA_LAUNCH(launch_scatter), scatter),
        cuda_entry("cuda-gather", "one thread per grid point, atoms read from global memory", KernelRole::Alternative,
                   Reproducibility::Deterministic, kCoulombOnly, 12, true, ESPGRID_CUDA_LAUNCH(launch_gather),
                   layout(32, 4)),
        cuda_entry("cuda-constant",
                   "one thread per point, atoms in __constant__ chunks, dz² per plane in shared memory",
                   KernelRole::Alternative, Reproducibility::Deterministic, kCoulombOnly, 9, true,
                   ESPGRID_CUDA_LAUNCH(launch_constant), constant),
        cuda_entry("cuda-coarsened", "8 points per thread along x, one block-width apart, padded grid",
                   KernelRole::Alternative, Reproducibility::Deterministic, kCoulombOnly, 6, true,
                   ESPGRID_CUDA_LAUNCH(launch_coarsened), coarsened),
        cuda_entry("cuda-unrolled",
                   "register tile per thread (8x2 points), atoms in shared-memory tiles, one launch per slab",
                   KernelRole::Alternative, Reproducibility::Deterministic, kEveryModel, 5, true,
                   ESPGRID_CUDA_LAUNCH(launch_unrolled), unrolled),
        // Flops as cuda-unrolled's SFU path counts them (FFMA r², MUFU, FFMA): the points on the
        // FMA pipe do the same useful work with ~9 more instructions, not counted as flops.
        cuda_entry("cuda-dualpipe",
                   "unrolled's 8x2 tile with rsqrt split between the SFU and the FMA pipe, tile-relative "
                   "positions, blocked sums",
                   KernelRole::Default, Reproducibility::Deterministic, kEveryModel, 5, true,
                   ESPGRID_CUDA_LAUNCH(launch_dualpipe), dualpipe, ESPGRID_CUDA_PREPARE(prepare_dualpipe)),
        // Multilevel summation (src/compute/msm_*.h, kernels/msm.cu): the built-in models, whose
        // kernels it knows how to soften (msm_math.h); an added model is refused.
        approximate_entry("cpu-msm",
                          "multilevel summation in double: binned short range, nested grids, interpolation "
                          "(approximate)",
                          Backend::Cpu, kSplitModels, &run_cpu_msm, &msm_bound),
        approximate_entry("cuda-msm",
                          "multilevel summation, every phase on the GPU: binned short range, grid levels, "
                          "interpolation (approximate)",
                          Backend::Cuda, kSplitModels, &run_cuda_msm, &msm_bound),
    };
    for (KernelVariant& entry : table_entries)
      if (entry.name == "cpu-simd") entry.not_built = kSimdNotBuilt;
    return table_entries;
  }();
  return entries;
}

std::string cpu_description(int threads) {
  const int n = threads_to_use(threads);
  return "CPU, " + std::to_string(n) + (n == 1 ? " thread" : " threads");
}

}  // namespace

bool KernelVariant::available(std::string* why) const {
  if (!not_built.empty()) {
    if (why) *why = std::string(not_built);
    return false;
  }
  return backend == Backend::Cpu || cuda_available(why);
}

RunTiming KernelVariant::run(const GridSumProblem& problem, const RunOptions& options) const {
  if (!not_built.empty()) throw Error(std::string(name) + " cannot run: " + std::string(not_built));
  if (!supports(problem.model))
    throw UsageError(std::string(name) + " does not compute the " + model_name(problem.model) +
                     " model; use one of: " + variants_supporting(problem.model));
  if (backend == Backend::Cpu && (options.threads < 0 || options.threads > kMaxCpuThreads))
    throw UsageError("CPU thread count " + std::to_string(options.threads) +
                     " is out of range: --threads takes 0 (all cores) to " + std::to_string(kMaxCpuThreads));
  if (options.sum_on_device && (method_run || backend != Backend::Cuda))
    throw Error("internal error: " + std::string(name) + " cannot add its maps to sums on the device");
  if (method_run) {
    if (backend == Backend::Cuda && options.devices.size() > 1)
      throw UsageError(std::string(name) + " runs on one GPU; give --device N instead of --devices (" +
                       std::to_string(options.devices.size()) + " listed)");
    RunTiming t = method_run(problem, options);
    if (backend == Backend::Cpu) t.device = cpu_description(options.threads);
    return t;
  }
  if (backend == Backend::Cpu) {
    const Stopwatch clock;
    RunOptions with_planes = options;
    if (options.planes_done) {
      // The CPU kernels finish planes in order and report the count done: turn that into ranges.
      auto reported = std::make_shared<std::int64_t>(0);
      with_planes.progress = [options, reported](std::size_t done, std::size_t total) {
        const auto now = static_cast<std::int64_t>(done);
        if (now > *reported) options.planes_done(*reported, now - *reported);
        *reported = now;
        if (options.progress) options.progress(done, total);
      };
    }
    cpu_run(problem, with_planes);
    const double s = clock.seconds();
    return {s, s, cpu_description(serial ? 1 : options.threads)};
  }
  cuda::DeviceRunOptions d;
  d.device = options.devices.size() == 1 ? options.devices.front() : options.device;
  d.shape = options.shape;
  d.max_slab_bytes = options.max_slab_bytes;
  d.progress = options.progress;
  d.planes_done = options.planes_done;
  d.workspace = options.workspace.get();
  d.sum_frames = options.sum_on_device;
  d.sum_squares = options.sum_squares;
  if (options.devices.size() > 1) {
    if (options.sum_on_device) throw Error("internal error: frame sums on the device need one device");
    return cuda::compute_potential_multi(name, device, problem, options.devices, d);
  }
  return cuda::compute_potential(name, device, problem, d);
}

std::span<const KernelVariant> kernel_variants() { return table(); }

const KernelVariant& find_kernel(std::string_view name) {
  for (const auto& v : table())
    if (v.name == name) return v;
  std::string names;
  for (const auto& v : table()) names += (names.empty() ? "" : ", ") + std::string(v.name);
  throw UsageError("unknown kernel '" + std::string(name) + "' (choose from " + names + ")");
}

const KernelVariant& default_kernel(Backend backend) {
  for (const auto& v : table())
    if (v.backend == backend && v.role == KernelRole::Default) return v;
  throw Error("internal error: no default kernel for the " + std::string(backend_name(backend)) + " backend");
}

const KernelVariant& approximate_kernel(Backend backend, PairModel model) {
  for (const auto& v : table())
    if (v.backend == backend && v.approximate() && v.supports(model)) return v;
  throw UsageError("no approximate " + std::string(backend_name(backend)) + " kernel computes the " +
                   model_name(model) + " model; leave out --accuracy and --msm-* for an exact kernel");
}

const KernelVariant& reference_kernel() {
  for (const auto& v : table())
    if (v.role == KernelRole::Reference) return v;
  throw Error("internal error: no reference kernel");
}

const KernelVariant& fast_reference_kernel() {
  for (const auto& k : table())
    if (k.backend == Backend::Cpu && !k.serial && k.reproducibility == Reproducibility::MatchesReference) return k;
  return reference_kernel();
}

bool cuda_available(std::string* reason) { return cuda::usable_device_count(reason) > 0; }

std::string_view backend_name(Backend backend) { return backend == Backend::Cuda ? "cuda" : "cpu"; }

std::string variants_supporting(PairModel model) {
  std::string names;
  for (const auto& v : table())
    if (v.supports(model)) names += (names.empty() ? "" : ", ") + std::string(v.name);
  return names;
}

}  // namespace espgrid
