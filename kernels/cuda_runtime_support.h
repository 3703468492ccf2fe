// CUDA runtime helpers for the .cu files in kernels/: error checking that throws
// espgrid::Error subclasses, and move-only RAII owners of device memory, pinned host memory,
// streams and events. Includes cuda_runtime.h, so only .cu files include this header; host
// code in src/ sees the plain-C++ src/compute/cuda_driver.h only.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "src/core/errors.h"

namespace espgrid::cuda {

/// A failed CUDA runtime call or kernel launch. what() is for users: the call (or the
/// allocation) and the CUDA error's name and description. The source location is for
/// developers: location(), and appended to what() when ESPGRID_DEBUG=1 (debug_enabled()).
class CudaError : public Error {
 public:
  CudaError(cudaError_t code, const std::string& message, std::string location = {});
  cudaError_t code() const noexcept { return code_; }
  /// what() without the location.
  const std::string& message() const noexcept { return message_; }
  /// "kernels/FILE.cu:LINE" of the failed check, or "" when none was recorded.
  const std::string& location() const noexcept { return location_; }

 private:
  cudaError_t code_;
  std::string message_;
  std::string location_;
};

/// True when ESPGRID_DEBUG=1: CUDA errors then name their source location in what().
bool debug_enabled();

/// Throws CudaError for `code`: "CUDA call 'EXPR' failed: cudaErrorX (text)", with FILE:LINE
/// as its location(). Also clears the runtime's last-error slot so that a non-sticky error
/// does not resurface in the next check.
[[noreturn]] void throw_cuda_error(cudaError_t code, const char* expression, const char* file, int line);

/// After a kernel launch: throws on a launch error (cudaGetLastError); when the environment
/// variable ESPGRID_CUDA_SYNC_CHECK=1 is set, also synchronizes the device so that a fault
/// inside the kernel is reported at its launch site rather than at a later call.
void check_launch(const char* file, int line);

/// True when ESPGRID_CUDA_SYNC_CHECK=1 (read once per process).
bool sync_check_enabled();

/// "3.2 GiB", "512 B": for messages.
std::string format_bytes(std::size_t bytes);

/// Throws CudaError "cannot allocate SIZE for 'NAME' on WHERE: <cuda text> (F free of T)".
[[noreturn]] void throw_allocation_error(cudaError_t code, std::size_t bytes, const std::string& name,
                                         bool pinned_host);

}  // namespace espgrid::cuda

#define ESPGRID_CUDA_CHECK(expr)                                                          \
  do {                                                                                    \
    const cudaError_t espgrid_cuda_status_ = (expr);                                      \
    if (espgrid_cuda_status_ != cudaSuccess)                                              \
      ::espgrid::cuda::throw_cuda_error(espgrid_cuda_status_, #expr, __FILE__, __LINE__); \
  } while (0)

#define ESPGRID_CUDA_CHECK_LAUNCH() ::espgrid::cuda::check_launch(__FILE__, __LINE__)

namespace espgrid::cuda {

namespace detail {
template <class T>
std::size_t checked_bytes(std::size_t count, const std::string& name) {
  if (count > std::numeric_limits<std::size_t>::max() / sizeof(T))
    throw Error("cannot allocate " + std::to_string(count) + " elements for '" + name + "': size overflows");
  return count * sizeof(T);
}
}  // namespace detail

/// Device memory that is kept instead of freed and handed out again for a request of the same
/// size: what a PB solve allocates for one trajectory frame serves the next (PbDeviceWorkspace).
/// DeviceMemory uses the pool made current on the calling thread by a DevicePoolScope; every
/// buffer a pooled call frees before the scope ends returns here.
class DevicePool {
 public:
  DevicePool() = default;
  ~DevicePool();  ///< frees the blocks it holds
  DevicePool(const DevicePool&) = delete;
  DevicePool& operator=(const DevicePool&) = delete;
  /// A kept block of exactly `bytes` on the current device, or a new one (cudaMalloc).
  cudaError_t allocate(void** p, std::size_t bytes);
  /// Keeps `p` when this pool handed it out (true); false otherwise (the caller frees it).
  bool keep(void* p) noexcept;
  std::size_t blocks_allocated() const noexcept { return allocated_; }

 private:
  void release_all() noexcept;
  std::mutex mutex_;
  int device_ = -1;
  std::multimap<std::size_t, void*> free_;      ///< kept blocks by size
  std::unordered_map<void*, std::size_t> out_;  ///< blocks handed out, and their sizes
  std::size_t allocated_ = 0;                   ///< cudaMalloc calls made, for tests and reports
};

/// The pool DeviceMemory uses on this thread (null: cudaMalloc and cudaFree).
DevicePool*& current_device_pool() noexcept;

/// Makes `pool` (may be null) the calling thread's for the scope. Declare it before the buffers
/// it should serve, so that they return to it before it is unset.
class DevicePoolScope {
 public:
  explicit DevicePoolScope(DevicePool* pool) noexcept : previous_(current_device_pool()) {
    current_device_pool() = pool;
  }
  ~DevicePoolScope() { current_device_pool() = previous_; }
  DevicePoolScope(const DevicePoolScope&) = delete;
  DevicePoolScope& operator=(const DevicePoolScope&) = delete;

 private:
  DevicePool* previous_;
};

/// Where a buffer lives: device memory (cudaMalloc, or the thread's DevicePool) or page-locked
/// host memory (cudaMallocHost, for asynchronous copies).
struct DeviceMemory {
  static constexpr bool pinned_host = false;
  static cudaError_t allocate(void** p, std::size_t bytes) {
    if (DevicePool* pool = current_device_pool()) return pool->allocate(p, bytes);
    return cudaMalloc(p, bytes);
  }
  static void release(void* p) noexcept {
    if (DevicePool* pool = current_device_pool(); pool && pool->keep(p)) return;
    cudaFree(p);
  }
};
struct PinnedHostMemory {
  static constexpr bool pinned_host = true;
  static cudaError_t allocate(void** p, std::size_t bytes) { return cudaMallocHost(p, bytes); }
  static void release(void* p) noexcept { cudaFreeHost(p); }
};

/// `count` elements of T in `Memory`, with a name for error messages. Move-only; the
/// destructor frees it and never throws (a free's error is deliberately ignored). A zero
/// count allocates nothing (get() is null).
template <class T, class Memory>
class CudaBuffer {
 public:
  CudaBuffer() = default;
  CudaBuffer(std::size_t count, std::string name) : name_(std::move(name)) {
    const std::size_t bytes = detail::checked_bytes<T>(count, name_);
    if (bytes == 0) return;
    void* p = nullptr;
    const cudaError_t status = Memory::allocate(&p, bytes);
    if (status != cudaSuccess) throw_allocation_error(status, bytes, name_, Memory::pinned_host);
    ptr_ = static_cast<T*>(p);
    count_ = count;
  }
  ~CudaBuffer() { reset(); }
  CudaBuffer(const CudaBuffer&) = delete;
  CudaBuffer& operator=(const CudaBuffer&) = delete;
  CudaBuffer(CudaBuffer&& other) noexcept
      : ptr_(std::exchange(other.ptr_, nullptr)),
        count_(std::exchange(other.count_, 0)),
        name_(std::move(other.name_)) {}
  CudaBuffer& operator=(CudaBuffer&& other) noexcept {
    if (this != &other) {
      reset();
      ptr_ = std::exchange(other.ptr_, nullptr);
      count_ = std::exchange(other.count_, 0);
      name_ = std::move(other.name_);
    }
    return *this;
  }

  void reset() noexcept {
    if (ptr_) Memory::release(ptr_);
    ptr_ = nullptr;
    count_ = 0;
  }
  T* get() const noexcept { return ptr_; }
  std::size_t size() const noexcept { return count_; }
  std::size_t bytes() const noexcept { return count_ * sizeof(T); }
  const std::string& name() const noexcept { return name_; }

 private:
  T* ptr_ = nullptr;
  std::size_t count_ = 0;
  std::string name_;
};

/// Device memory on the current device.
template <class T>
using DeviceBuffer = CudaBuffer<T, DeviceMemory>;
/// Page-locked host memory for asynchronous copies.
template <class T>
using PinnedBuffer = CudaBuffer<T, PinnedHostMemory>;

/// A non-blocking stream. The destructor waits for the stream's work before destroying it,
/// so buffers destroyed afterwards are never freed under a running copy or kernel (declare
/// streams after the buffers they use).
class Stream {
 public:
  Stream() { ESPGRID_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~Stream() { reset(); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  Stream(Stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  Stream& operator=(Stream&& other) noexcept {
    if (this != &other) {
      reset();
      stream_ = std::exchange(other.stream_, nullptr);
    }
    return *this;
  }
  void reset() noexcept {
    if (stream_) {
      cudaStreamSynchronize(stream_);  // errors ignored: we are unwinding or done
      cudaStreamDestroy(stream_);
    }
    stream_ = nullptr;
  }
  cudaStream_t get() const noexcept { return stream_; }
  void synchronize() const { ESPGRID_CUDA_CHECK(cudaStreamSynchronize(stream_)); }
  /// Work queued on this stream after the call waits for `event`.
  void wait(cudaEvent_t event) const { ESPGRID_CUDA_CHECK(cudaStreamWaitEvent(stream_, event, 0)); }

 private:
  cudaStream_t stream_ = nullptr;
};

/// `count` elements of T in device memory allocated and freed in `stream`'s order (cudaMallocAsync,
/// cudaFreeAsync): cudaFree waits for every kernel on the device, so a thread whose work shares the
/// device with another's (PB's boundary beside the solve's preparation) would wait for that work.
/// Declare it after its stream (the free is queued on it). Where the device has no memory pools
/// (cudaDevAttrMemoryPoolsSupported), or with `ordered` false, it is cudaMalloc and cudaFree.
template <class T>
class StreamBuffer {
 public:
  StreamBuffer(std::size_t count, std::string name, cudaStream_t stream, bool ordered = true) : stream_(stream) {
    const std::size_t bytes = detail::checked_bytes<T>(count, name);
    if (bytes == 0) return;
    ordered_ = ordered && pools_supported();
    void* p = nullptr;
    const cudaError_t status = ordered_ ? cudaMallocAsync(&p, bytes, stream) : cudaMalloc(&p, bytes);
    if (status != cudaSuccess) throw_allocation_error(status, bytes, name, false);
    ptr_ = static_cast<T*>(p);
    count_ = count;
  }
  ~StreamBuffer() {
    if (!ptr_) return;
    if (ordered_)
      cudaFreeAsync(ptr_, stream_);  // errors ignored, as CudaBuffer's
    else
      cudaFree(ptr_);
  }
  StreamBuffer(const StreamBuffer&) = delete;
  StreamBuffer& operator=(const StreamBuffer&) = delete;
  T* get() const noexcept { return ptr_; }
  std::size_t size() const noexcept { return count_; }
  std::size_t bytes() const noexcept { return count_ * sizeof(T); }

 private:
  static bool pools_supported() {
    int device = 0, supported = 0;
    return cudaGetDevice(&device) == cudaSuccess &&
           cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device) == cudaSuccess && supported;
  }
  cudaStream_t stream_ = nullptr;
  T* ptr_ = nullptr;
  std::size_t count_ = 0;
  bool ordered_ = false;
};

/// A CUDA event; timing-capable unless created with cudaEventDisableTiming.
class Event {
 public:
  explicit Event(unsigned flags = cudaEventDefault) { ESPGRID_CUDA_CHECK(cudaEventCreateWithFlags(&event_, flags)); }
  ~Event() { reset(); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  Event& operator=(Event&& other) noexcept {
    if (this != &other) {
      reset();
      event_ = std::exchange(other.event_, nullptr);
    }
    return *this;
  }
  void reset() noexcept {
    if (event_) cudaEventDestroy(event_);
    event_ = nullptr;
  }
  cudaEvent_t get() const noexcept { return event_; }
  void record(cudaStream_t stream) const { ESPGRID_CUDA_CHECK(cudaEventRecord(event_, stream)); }
  void synchronize() const { ESPGRID_CUDA_CHECK(cudaEventSynchronize(event_)); }
  /// Milliseconds from `start` to `stop`; both must have completed.
  static float elapsed_ms(const Event& start, const Event& stop) {
    float ms = 0;
    ESPGRID_CUDA_CHECK(cudaEventElapsedTime(&ms, start.event_, stop.event_));
    return ms;
  }

 private:
  cudaEvent_t event_ = nullptr;
};

/// Makes `device` current for the scope and restores the previous current device after.
/// Throws a clear Error for an ordinal that does not exist.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

}  // namespace espgrid::cuda
