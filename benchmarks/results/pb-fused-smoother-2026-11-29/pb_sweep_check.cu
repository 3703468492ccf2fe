// The fused smoothing pair (kernels/pb/pb_smoother.cuh) against the two half-sweeps it replaces, on a
// random coded operator: the tests' entry (src/pb/pb_pipeline_driver.h check_fused_sweep_pair).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cuda_runtime_support.h"
#include "kernels/pb/pb_smoother.cuh"
#include "src/pb/pb_pipeline_driver.h"
#include "src/pb_numerics/pb_pipeline_math.h"

namespace espgrid::cuda {

namespace {

template <class T>
DeviceBuffer<T> uploaded(const std::vector<T>& host, const char* name) {
  DeviceBuffer<T> d(host.size(), name);
  ESPGRID_CUDA_CHECK(cudaMemcpy(d.get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

}  // namespace

PbSweepCheck check_fused_sweep_pair(int device, const long n[3], int first, long k_offset, unsigned seed) {
  const DeviceGuard guard(device);
  const std::size_t size = static_cast<std::size_t>(n[0] * n[1] * n[2]);
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> value(-1.0, 1.0), conductance(0.05, 80.0);
  // Each face's 9-bit pattern and open bit random (about one face in five closed), the mass bit on
  // everywhere: every diagonal is positive, so every value is finite and a NaN can only be poison.
  std::vector<std::uint32_t> codes(size);
  for (std::uint32_t& c : codes) {
    c = 1u << pb::kMassBit;
    for (int d = 0; d < 3; ++d) {
      const auto bits = static_cast<std::uint32_t>(random());
      const std::uint32_t open = (bits >> 16) % 5 != 0 ? pb::kPatterns : 0u;
      c |= ((bits & (pb::kPatterns - 1)) | open) << (10 * d);
    }
  }
  std::vector<double> table(3 * pb::kPatterns), x(size), b(size);
  for (double& t : table) t = conductance(random);
  for (double& v : x) v = value(random);
  for (double& v : b) v = value(random);
  const DeviceBuffer<std::uint32_t> d_codes = uploaded(codes, "sweep check codes");
  const DeviceBuffer<double> d_table = uploaded(table, "sweep check table"), d_x = uploaded(x, "sweep check x"),
                             d_b = uploaded(b, "sweep check b"), d_halves = uploaded(x, "sweep check x (halves)");
  DeviceBuffer<double> d_fused(size, "sweep check x (fused)");
  ESPGRID_CUDA_CHECK(cudaMemset(d_fused.get(), 0xff, size * sizeof(double)));  // NaN wherever unwritten
  const pb::CodedOperator op = pb::coded_operator(n, d_codes.get(), d_table.get(), 0.37);
  Stream stream;
  const dim3 threads(lean::kSweepX, lean::kSweepY);
  lean::half_sweep_kernel<<<lean::sweep_blocks(n), threads, 0, stream.get()>>>(op, d_halves.get(), d_b.get(), first,
                                                                               k_offset);
  ESPGRID_CUDA_CHECK_LAUNCH();
  lean::half_sweep_kernel<<<lean::sweep_blocks(n), threads, 0, stream.get()>>>(op, d_halves.get(), d_b.get(), 1 - first,
                                                                               k_offset);
  ESPGRID_CUDA_CHECK_LAUNCH();
  lean::symmetric_pair(op, d_x.get(), d_b.get(), d_fused.get(), first, k_offset, stream.get());
  stream.synchronize();
  std::vector<double> halves(size), fused(size);
  ESPGRID_CUDA_CHECK(cudaMemcpy(halves.data(), d_halves.get(), size * sizeof(double), cudaMemcpyDeviceToHost));
  ESPGRID_CUDA_CHECK(cudaMemcpy(fused.data(), d_fused.get(), size * sizeof(double), cudaMemcpyDeviceToHost));
  PbSweepCheck out;
  out.nodes = static_cast<long>(size);
  for (std::size_t i = 0; i < size; ++i) {
    out.differing += std::memcmp(&halves[i], &fused[i], sizeof(double)) != 0;
    out.poisoned += !std::isfinite(fused[i]);
  }
  return out;
}

}  // namespace espgrid::cuda
