#include "src/kernel_registry.h"

#include <omp.h>

#include <array>
#include <chrono>

#include "kernels/dcs_cuda.h"
#include "src/cpu_kernels.h"
#include "src/errors.h"

namespace espgrid {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string cpu_description(int threads) {
  const int n = threads > 0 ? threads : omp_get_max_threads();
  return "CPU, " + std::to_string(n) + (n == 1 ? " thread" : " threads");
}

void check_threads(const RunOptions& o) {
  if (o.threads < 0 || o.threads > kMaxCpuThreads)
    throw UsageError("CPU thread count " + std::to_string(o.threads) + " is out of range: --threads takes 0 (all cores) to " +
                     std::to_string(kMaxCpuThreads));
}

RunTiming run_cpu_naive(const DcsProblem& p, const RunOptions& o) {
  check_threads(o);
  const auto start = Clock::now();
  cpu::naive(p, o.progress);
  const double s = seconds_since(start);
  return {s, s, cpu_description(1)};
}

RunTiming run_cpu_reference(const DcsProblem& p, const RunOptions& o) {
  check_threads(o);
  const auto start = Clock::now();
  cpu::reference(p, o.progress);
  const double s = seconds_since(start);
  return {s, s, cpu_description(1)};
}

RunTiming run_cpu_parallel(const DcsProblem& p, const RunOptions& o) {
  check_threads(o);
  const auto start = Clock::now();
  cpu::parallel(p, o.threads, o.progress);
  const double s = seconds_since(start);
  return {s, s, cpu_description(o.threads)};
}

template <cuda::Variant V>
RunTiming run_cuda(const DcsProblem& p, const RunOptions& o) {
  cuda::DeviceRunOptions d;
  d.device = o.device;
  d.shape = {o.block_x, o.block_y, o.coarsening};
  d.max_slab_bytes = o.max_slab_bytes;
  d.progress = o.progress;
  const bool several = o.devices.size() > 1;
  if (o.devices.size() == 1) d.device = o.devices.front();
  const cuda::DeviceTiming t = several ? cuda::compute_potential_multi(V, p, o.devices, d) : cuda::compute_potential(V, p, d);
  RunTiming out{t.kernel_seconds, t.wall_seconds, t.device_name};
  for (const cuda::WorkerTiming& w : t.workers)
    out.parts.push_back({w.device, w.device_name, w.kernel_seconds, w.wall_seconds, w.planes, w.chunks});
  return out;
}

// Keep the CUDA rows in the order of cuda::Variant. Flop counts: see each kernel's comment.
constexpr std::array kVariants = {
    KernelVariant{"cpu-naive", "one point at a time over all atoms, recomputing dx, dy, dz (1 thread)",
                  Backend::Cpu, 12, &run_cpu_naive, /*serial=*/true},
    KernelVariant{"cpu-reference", "per plane dz², per row dy²+dz², then a sweep along x (1 thread)",
                  Backend::Cpu, 6, &run_cpu_reference, /*serial=*/true},
    KernelVariant{"cpu-parallel", "cpu-reference's arithmetic on all cores (OpenMP), x sweep vectorized",
                  Backend::Cpu, 6, &run_cpu_parallel},
    KernelVariant{"cuda-scatter", "one thread per atom (and plane), atomicAdd into every point of a slab",
                  Backend::Cuda, 7, &run_cuda<cuda::Variant::Scatter>},
    KernelVariant{"cuda-gather", "one thread per grid point, atoms read from global memory",
                  Backend::Cuda, 12, &run_cuda<cuda::Variant::Gather>},
    KernelVariant{"cuda-constant", "one thread per point, atoms in __constant__ chunks, dz² per plane in shared memory",
                  Backend::Cuda, 9, &run_cuda<cuda::Variant::Constant>},
    KernelVariant{"cuda-coarsened", "8 points per thread along x, one block-width apart, padded grid",
                  Backend::Cuda, 6, &run_cuda<cuda::Variant::Coarsened>},
    KernelVariant{"cuda-unrolled", "register tile per thread (8x2 points), atoms in shared-memory tiles, one launch per slab",
                  Backend::Cuda, 5, &run_cuda<cuda::Variant::Unrolled>},
};

}  // namespace

std::span<const KernelVariant> kernel_variants() { return kVariants; }

const KernelVariant& find_kernel(std::string_view name) {
  for (const auto& v : kVariants)
    if (v.name == name) return v;
  std::string names;
  for (const auto& v : kVariants) names += (names.empty() ? "" : ", ") + std::string(v.name);
  throw UsageError("unknown kernel '" + std::string(name) + "' (choose from " + names + ")");
}

bool cuda_available(std::string* reason) { return cuda::usable_device_count(reason) > 0; }

const KernelVariant& default_kernel(Backend backend) {
  return backend == Backend::Cuda ? find_kernel("cuda-unrolled") : find_kernel("cpu-parallel");
}

std::string_view backend_name(Backend backend) { return backend == Backend::Cuda ? "cuda" : "cpu"; }

}  // namespace espgrid
