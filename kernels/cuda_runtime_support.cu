#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kernels/cuda_runtime_support.h"
#include "src/core/process_exit.h"

namespace espgrid::cuda {

namespace {

std::string describe_status(cudaError_t code) {
  return std::string(cudaGetErrorName(code)) + " (" + cudaGetErrorString(code) + ")";
}

/// "kernels/dcs_kernels.cu" rather than the absolute path the build passed in __FILE__.
const char* short_file(const char* file) {
  const char* p = std::strstr(file, "kernels/");
  return p ? p : file;
}

/// "kernels/FILE.cu:LINE".
std::string location_of(const char* file, int line) {
  return std::string(short_file(file)) + ":" + std::to_string(line);
}

}  // namespace

CudaError::CudaError(cudaError_t code, const std::string& message, std::string location)
    : Error(debug_enabled() && !location.empty() ? message + " [at " + location + "]" : message),
      code_(code),
      message_(message),
      location_(std::move(location)) {}

DevicePool*& current_device_pool() noexcept {
  thread_local DevicePool* pool = nullptr;
  return pool;
}

namespace {

/// A request's size class: above 1 MiB rounded up to an eighth of its power of two, so buffers
/// whose size varies a little from frame to frame (neighbour lists, sort scratch) reuse one block
/// instead of adding one a frame (≤ 12.5 % more memory for them).
std::size_t pool_size_class(std::size_t bytes) {
  constexpr std::size_t kExact = std::size_t{1} << 20;
  if (bytes <= kExact) return bytes;
  std::size_t power = kExact;
  while (power * 2 <= bytes) power *= 2;
  const std::size_t step = power / 8;
  return (bytes + step - 1) / step * step;
}

}  // namespace

cudaError_t DevicePool::allocate(void** p, std::size_t bytes) {
  bytes = pool_size_class(bytes);
  const std::lock_guard<std::mutex> lock(mutex_);
  int device = 0;
  if (const cudaError_t status = cudaGetDevice(&device); status != cudaSuccess) return status;
  if (device != device_) {  // kept blocks of another device are of no use here
    release_all();
    device_ = device;
  }
  if (const auto kept = free_.find(bytes); kept != free_.end()) {
    *p = kept->second;
    free_.erase(kept);
  } else {
    if (const cudaError_t status = cudaMalloc(p, bytes); status != cudaSuccess) {
      // Out of memory with blocks kept for other sizes: free those and try once more.
      if (free_.empty()) return status;
      cudaGetLastError();
      release_all();
      device_ = device;
      if (const cudaError_t again = cudaMalloc(p, bytes); again != cudaSuccess) return again;
    }
    ++allocated_;
  }
  out_[*p] = bytes;
  return cudaSuccess;
}

bool DevicePool::keep(void* p) noexcept {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto it = out_.find(p);
  if (it == out_.end()) return false;
  free_.emplace(it->second, p);
  out_.erase(it);
  return true;
}

void DevicePool::release_all() noexcept {
  if (free_.empty()) return;
  int current = -1;
  cudaGetDevice(&current);
  if (device_ >= 0 && device_ != current) cudaSetDevice(device_);
  for (const auto& [bytes, p] : free_) cudaFree(p);  // errors ignored: we are cleaning up
  free_.clear();
  if (current >= 0 && device_ != current) cudaSetDevice(current);
}

DevicePool::~DevicePool() { release_all(); }

bool debug_enabled() {
  const char* value = std::getenv("ESPGRID_DEBUG");  // read at each error: errors are rare
  return value != nullptr && std::strcmp(value, "1") == 0;
}

void throw_cuda_error(cudaError_t code, const char* expression, const char* file, int line) {
  cudaGetLastError();  // reset a non-sticky error so later, unrelated checks do not see it
  throw CudaError(code, std::string("CUDA call '") + expression + "' failed: " + describe_status(code),
                  location_of(file, line));
}

bool sync_check_enabled() {
  static const bool enabled = [] {
    const char* value = std::getenv("ESPGRID_CUDA_SYNC_CHECK");
    return value != nullptr && std::strcmp(value, "1") == 0;
  }();
  return enabled;
}

void check_launch(const char* file, int line) {
  cudaError_t code = cudaGetLastError();
  if (code != cudaSuccess)
    throw CudaError(code, "CUDA kernel launch failed: " + describe_status(code), location_of(file, line));
  if (sync_check_enabled()) {
    code = cudaDeviceSynchronize();
    if (code != cudaSuccess) {
      cudaGetLastError();
      throw CudaError(
          code, "CUDA kernel failed: " + describe_status(code) + " (found at its launch: ESPGRID_CUDA_SYNC_CHECK=1)",
          location_of(file, line));
    }
  }
}

std::string format_bytes(std::size_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 5) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  if (unit == 0)
    std::snprintf(text, sizeof text, "%zu B", bytes);
  else
    std::snprintf(text, sizeof text, "%.1f %s", value, kUnits[unit]);
  return text;
}

void throw_allocation_error(cudaError_t code, std::size_t bytes, const std::string& name, bool pinned_host) {
  cudaGetLastError();  // an allocation failure is not sticky; clear it
  int device = -1;
  const bool have_device = cudaGetDevice(&device) == cudaSuccess;
  std::string where = pinned_host ? std::string("pinned host memory")
                                  : "device " + (have_device ? std::to_string(device) : std::string("?"));
  std::string message =
      "cannot allocate " + format_bytes(bytes) + " for '" + name + "' on " + where + ": " + cudaGetErrorString(code);
  if (!pinned_host) {
    std::size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess)
      message += " (" + format_bytes(free_bytes) + " free of " + format_bytes(total_bytes) + ")";
    else
      cudaGetLastError();
  }
  throw CudaError(code, message);
}

DeviceGuard::DeviceGuard(int device) {
  int count = 0;
  ESPGRID_CUDA_CHECK(cudaGetDeviceCount(&count));
  if (device < 0 || device >= count)
    throw Error("CUDA device " + std::to_string(device) + " does not exist (this machine has " + std::to_string(count) +
                (count == 1 ? " device" : " devices") + ")");
  ESPGRID_CUDA_CHECK(cudaGetDevice(&previous_));
  ESPGRID_CUDA_CHECK(cudaSetDevice(device));
  note_gpu_context_made();
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0) cudaSetDevice(previous_);  // never throws
}

}  // namespace espgrid::cuda
