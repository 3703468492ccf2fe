// The one table of kernel variants. The CLI's --kernel, `espgrid kernels`, `espgrid verify`,
// the tests and the benchmarks all iterate it: a new variant is one kernel plus one row.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/dcs_problem.h"

namespace espgrid {

enum class Backend { Cpu, Cuda };

/// Most CPU threads a kernel may be asked for. libgomp crashed (SIGSEGV) when a parallel
/// region asked for 65,536 threads; the CPU kernels refuse more than this with a UsageError.
inline constexpr int kMaxCpuThreads = 1024;

struct RunOptions {
  int threads = 0;   ///< CPU threads; 0 = OpenMP's default; at most kMaxCpuThreads
  int device = 0;    ///< CUDA device ordinal
  /// CUDA devices; empty = {device}. With more than one entry the z-planes are shared out
  /// through a work queue, one host thread per entry (cuda::compute_potential_multi); an
  /// ordinal may repeat (several workers on one GPU). The CPU kernels ignore it.
  std::vector<int> devices;
  int block_x = 0;   ///< CUDA block shape override; 0 = the variant's default
  int block_y = 0;
  int coarsening = 0;  ///< CUDA: points per thread along x override; 0 = default
  std::size_t max_slab_bytes = 0;  ///< CUDA: cap on device memory for the map (both slab buffers); 0 = auto
  ProgressFn progress;             ///< optional, called from the calling thread
};

/// One device worker's share of a CUDA run.
struct DevicePart {
  int device = 0;
  std::string name;
  double kernel_seconds = 0;
  double wall_seconds = 0;
  std::int64_t planes = 0;  ///< z-planes it computed
  int chunks = 0;           ///< plane ranges it took from the queue
};

struct RunTiming {
  double kernel_seconds = 0;  ///< compute only (CUDA events on the GPU; several GPUs: the busiest one's)
  double wall_seconds = 0;    ///< the whole call, including device allocation and copies
  std::string device;         ///< where it ran: "CPU, 2 threads" or the GPU's name
  std::vector<DevicePart> parts = {};  ///< CUDA: one per device worker
};

struct KernelVariant {
  std::string_view name;
  std::string_view summary;
  Backend backend;
  /// Floating-point operations per atom evaluation by the DCS papers' convention (a fused
  /// multiply-add counts 2, any other operation 1), counted from the variant's inner loop;
  /// work amortized over many points (dy²+dz² per row, say) is left out.
  int flops_per_evaluation;
  /// Fills problem.potential (every point written); throws espgrid::Error on failure.
  RunTiming (*run)(const DcsProblem& problem, const RunOptions& options);
  /// Runs on one CPU thread: benchmarks may time it on part of a plane. Parallel variants
  /// are always timed on whole planes, so the measurement fills the machine.
  bool serial = false;
};

std::span<const KernelVariant> kernel_variants();
/// The named variant; UsageError listing the valid names when there is none.
const KernelVariant& find_kernel(std::string_view name);
/// True when CUDA variants can run here; otherwise `reason` says why not.
bool cuda_available(std::string* reason = nullptr);
/// Default kernel: the fastest GPU variant when CUDA is usable, else cpu-parallel.
const KernelVariant& default_kernel(Backend backend);
std::string_view backend_name(Backend backend);

}  // namespace espgrid
