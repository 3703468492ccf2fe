// measure_rsqrt_ceiling: the device's rsqrtf throughput, the ceiling for every DCS kernel
// (each evaluation is one MUFU.RSQ; the SFU issues 16 of them per clock per SM on Hopper,
// one eighth of the FP32 rate).
//
// Each thread runs kChains independent chains v ← rsqrtf(v), unrolled, so the SFU always has
// independent work; the grid fills every SM to full occupancy kWaves times over. The chains
// converge to 1, so no input is ever zero, denormal or infinite, and each thread stores the
// sum of its chains so that nothing is dead code. One warm-up launch, then kRuns timed with
// CUDA events; the median is reported.
#include <algorithm>
#include <vector>

#include "kernels/cuda_runtime_support.h"
#include "src/compute/cuda_driver.h"

namespace espgrid::cuda {
namespace {

constexpr int kChains = 8;
constexpr int kThreads = 256;
constexpr int kIterations = 2048;  // per chain
constexpr int kWaves = 4;
constexpr int kRuns = 7;

__global__ void __launch_bounds__(kThreads) rsqrt_chains_kernel(float* __restrict__ out, int iterations) {
  const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
  float v[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c)
    v[c] = 1.0f + 0.001f * static_cast<float>(tid & 1023u) + 0.37f * static_cast<float>(c);
#pragma unroll 4
  for (int it = 0; it < iterations; ++it) {
#pragma unroll
    for (int c = 0; c < kChains; ++c) v[c] = rsqrtf(v[c]);
  }
  float sum = 0.0f;
#pragma unroll
  for (int c = 0; c < kChains; ++c) sum += v[c];
  out[tid] = sum;
}

int attribute(cudaDeviceAttr a, int device) {
  int value = 0;
  ESPGRID_CUDA_CHECK(cudaDeviceGetAttribute(&value, a, device));
  return value;
}

}  // namespace

RsqrtCeiling measure_rsqrt_ceiling(int device) {
  DeviceGuard guard(device);
  RsqrtCeiling result;
  result.multiprocessors = attribute(cudaDevAttrMultiProcessorCount, device);
  result.sm_clock_ghz = attribute(cudaDevAttrClockRate, device) / 1.0e6;  // kHz → GHz
  const int threads_per_sm = attribute(cudaDevAttrMaxThreadsPerMultiProcessor, device);
  const int blocks = result.multiprocessors * std::max(1, threads_per_sm / kThreads) * kWaves;
  const std::size_t threads = static_cast<std::size_t>(blocks) * kThreads;

  DeviceBuffer<float> out(threads, "rsqrt benchmark output");
  Stream stream;
  Event start, stop;
  std::vector<double> seconds;
  for (int run = 0; run <= kRuns; ++run) {  // run 0 is the warm-up
    start.record(stream.get());
    rsqrt_chains_kernel<<<blocks, kThreads, 0, stream.get()>>>(out.get(), kIterations);
    ESPGRID_CUDA_CHECK_LAUNCH();
    stop.record(stream.get());
    stop.synchronize();
    if (run > 0) seconds.push_back(Event::elapsed_ms(start, stop) / 1000.0);
  }
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds[seconds.size() / 2];
  const double evaluations = static_cast<double>(threads) * kIterations * kChains;
  result.rsqrt_per_second = median > 0 ? evaluations / median : 0.0;
  return result;
}

}  // namespace espgrid::cuda
