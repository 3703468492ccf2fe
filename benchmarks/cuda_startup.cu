// What a CUDA process pays before and after its work, without espgrid (issue 33's process-time
// targets): the driver's initialisation, the primary context, a first allocation of the size a
// 161³ PB solve takes, and its release. Each line: milliseconds since main() was entered. The
// process's exit (the context's teardown by the runtime's exit handler) is what the caller's wall
// time shows beyond the last line; `--quick-exit` ends the process with _exit instead (no exit
// handlers: the kernel alone releases the device). Built and run by scripts/pb-scale-check.sh's
// `process` phase:
//   nvcc -O2 -o cuda_startup benchmarks/cuda_startup.cu -lcuda && ./cuda_startup [--quick-exit]
#include <cuda.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

const auto kStart = std::chrono::steady_clock::now();

void stamp(const char* what) {
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - kStart).count();
  std::printf("%8.1f ms  %s\n", ms, what);
  std::fflush(stdout);
}

void check(cudaError_t status, const char* call) {
  if (status == cudaSuccess) return;
  std::fprintf(stderr, "cuda_startup: %s: %s\n", call, cudaGetErrorString(status));
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick_exit = argc > 1 && std::strcmp(argv[1], "--quick-exit") == 0;
  stamp("main entered");
  if (cuInit(0) != CUDA_SUCCESS) {
    std::fprintf(stderr, "cuda_startup: cuInit failed\n");
    return 1;
  }
  stamp("cuInit (driver initialised)");
  int count = 0;
  check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  stamp("cudaGetDeviceCount (the runtime's start)");
  check(cudaSetDevice(0), "cudaSetDevice");
  check(cudaFree(nullptr), "cudaFree(0)");
  stamp("device 0's primary context made");
  void* buffer = nullptr;
  const std::size_t bytes = std::size_t{212} << 20;  // 212 MiB: the 161³ PB solve's estimate
  check(cudaMalloc(&buffer, bytes), "cudaMalloc");
  check(cudaMemset(buffer, 0x7f, bytes), "cudaMemset");
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  stamp("212 MiB allocated and written");
  check(cudaFree(buffer), "cudaFree");
  stamp("freed");
  if (count > 1) {
    check(cudaSetDevice(1), "cudaSetDevice(1)");
    check(cudaFree(nullptr), "cudaFree(0) on device 1");
    stamp("device 1's primary context made");
  }
  if (quick_exit) {
    stamp("_exit (no exit handlers: the kernel releases the device)");
    _exit(0);
  }
  stamp("main returns (the runtime's exit handler destroys the contexts next)");
  return 0;
}
