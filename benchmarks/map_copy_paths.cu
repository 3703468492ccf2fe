// How a PB map comes back from the device (issue 33's capsid: 629³ floats, 949 MiB): one copy
// into pageable memory (what kernels/pb/pb_pipeline.cu does today) against the same buffer page-locked
// with cudaHostRegister (its cost measured: done beside the solve it would be off the critical
// path, its release too), and against chunks through two page-locked staging buffers that host
// threads copy on into the map. The host buffer is faulted in first with huge pages advised, as
// espgrid's map memory is. Every path's bytes are checked against the device's values.
//   nvcc -O2 -std=c++17 -Xcompiler -fopenmp -o map_copy_paths benchmarks/map_copy_paths.cu
//   ./map_copy_paths [floats] [rounds]
#include <cuda_runtime.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>
#include <vector>

namespace {

void check(cudaError_t status, const char* call) {
  if (status == cudaSuccess) return;
  std::fprintf(stderr, "map_copy_paths: %s: %s\n", call, cudaGetErrorString(status));
  std::exit(1);
}

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

__global__ void fill(float* out, std::size_t n, float salt) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = salt + float(i % 1000003);  // exact: integers below 2^24
}

bool same(const float* host, std::size_t n, float salt) {
  for (std::size_t i = 0; i < n; i += 4093)
    if (host[i] != salt + float(i % 1000003)) return false;
  return host[n - 1] == salt + float((n - 1) % 1000003);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 248858189ull;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  const std::size_t bytes = n * sizeof(float);
  check(cudaSetDevice(0), "cudaSetDevice");
  float* device = nullptr;
  check(cudaMalloc(&device, bytes), "cudaMalloc");
  const std::size_t huge = std::size_t(2) << 20;
  const std::size_t rounded = (bytes + huge - 1) / huge * huge;
  auto* host = static_cast<float*>(std::aligned_alloc(huge, rounded));
  madvise(host, rounded, MADV_HUGEPAGE);
  double t = now_ms();
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < n; i += 1024) host[i] = -1.0f;
  std::printf("host buffer %.1f MiB faulted in by %d threads: %.1f ms\n", bytes / 1048576.0, omp_get_max_threads(),
              now_ms() - t);
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");

  std::vector<double> pageable, pinned, staged;
  for (int r = 0; r < rounds; ++r) {
    fill<<<1024, 256, 0, stream>>>(device, n, float(r));
    check(cudaStreamSynchronize(stream), "fill");
    t = now_ms();
    check(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream), "pageable copy");
    check(cudaStreamSynchronize(stream), "pageable sync");
    pageable.push_back(now_ms() - t);
    if (!same(host, n, float(r))) return std::printf("pageable copy: wrong bytes\n"), 1;
  }

  t = now_ms();
  check(cudaHostRegister(host, rounded, cudaHostRegisterDefault), "cudaHostRegister");
  const double register_ms = now_ms() - t;
  for (int r = 0; r < rounds; ++r) {
    fill<<<1024, 256, 0, stream>>>(device, n, float(r + 100));
    check(cudaStreamSynchronize(stream), "fill");
    t = now_ms();
    check(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream), "pinned copy");
    check(cudaStreamSynchronize(stream), "pinned sync");
    pinned.push_back(now_ms() - t);
    if (!same(host, n, float(r + 100))) return std::printf("pinned copy: wrong bytes\n"), 1;
  }
  t = now_ms();
  check(cudaHostUnregister(host), "cudaHostUnregister");
  const double unregister_ms = now_ms() - t;

  // Two staging buffers of `chunk` bytes: chunk i+1 copies while the host's threads move chunk i.
  const std::size_t chunk = std::size_t(64) << 20;
  char* stage[2];
  cudaEvent_t done[2];
  for (int b = 0; b < 2; ++b) {
    check(cudaMallocHost(&stage[b], chunk), "cudaMallocHost");
    check(cudaEventCreateWithFlags(&done[b], cudaEventDisableTiming), "cudaEventCreate");
  }
  const std::size_t chunks = (bytes + chunk - 1) / chunk;
  for (int r = 0; r < rounds; ++r) {
    fill<<<1024, 256, 0, stream>>>(device, n, float(r + 200));
    check(cudaStreamSynchronize(stream), "fill");
    t = now_ms();
    auto issue = [&](std::size_t c) {
      const std::size_t size = std::min(chunk, bytes - c * chunk);
      check(cudaMemcpyAsync(stage[c % 2], reinterpret_cast<char*>(device) + c * chunk, size, cudaMemcpyDeviceToHost,
                            stream),
            "staged copy");
      check(cudaEventRecord(done[c % 2], stream), "cudaEventRecord");
    };
    issue(0);
    for (std::size_t c = 0; c < chunks; ++c) {
      check(cudaEventSynchronize(done[c % 2]), "cudaEventSynchronize");
      if (c + 1 < chunks) issue(c + 1);  // its buffer was moved on in round c - 1
      const std::size_t size = std::min(chunk, bytes - c * chunk);
      char* to = reinterpret_cast<char*>(host) + c * chunk;
      const char* from = stage[c % 2];
      const int parts = 8;
#pragma omp parallel for num_threads(parts) schedule(static)
      for (int p = 0; p < parts; ++p) {
        const std::size_t begin = size * p / parts, end = size * (p + 1) / parts;
        std::memcpy(to + begin, from + begin, end - begin);
      }
    }
    staged.push_back(now_ms() - t);
    if (!same(host, n, float(r + 200))) return std::printf("staged copy: wrong bytes\n"), 1;
  }
  std::printf("pageable copy   median %.1f ms (%s)\n", median(pageable), "one cudaMemcpyAsync");
  std::printf("page-locked     median %.1f ms; cudaHostRegister %.1f ms, cudaHostUnregister %.1f ms\n", median(pinned),
              register_ms, unregister_ms);
  std::printf("staged 2x64 MiB median %.1f ms (8 host threads move each chunk)\n", median(staged));
  for (std::size_t i = 0; i < pageable.size(); ++i)
    std::printf("round %zu: pageable %.1f  pinned %.1f  staged %.1f ms\n", i, pageable[i], pinned[i], staged[i]);
  return 0;
}
