// Device memory counted as it is held (CUDA only): the PB pipeline's ledger, whose peak the
// summary reports, and the buffers that add to it while they live.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>

#include "kernels/cuda_runtime_support.h"

namespace espgrid::cuda::lean {

/// Device bytes held now and at most, over the buffers made through it.
struct Ledger {
  std::size_t now = 0, peak = 0;
  void add(std::size_t bytes) {
    now += bytes;
    peak = std::max(peak, now);
  }
  void remove(std::size_t bytes) { now -= std::min(now, bytes); }
};

/// A DeviceBuffer counted by a ledger while it lives.
template <class T>
class Tracked {
 public:
  Tracked() = default;
  Tracked(Ledger& ledger, std::size_t count, std::string name) : buffer_(count, std::move(name)), ledger_(&ledger) {
    ledger.add(buffer_.bytes());
  }
  ~Tracked() { reset(); }
  Tracked(const Tracked&) = delete;
  Tracked& operator=(const Tracked&) = delete;
  Tracked(Tracked&& o) noexcept : buffer_(std::move(o.buffer_)), ledger_(std::exchange(o.ledger_, nullptr)) {}
  Tracked& operator=(Tracked&& o) noexcept {
    if (this != &o) {
      reset();
      buffer_ = std::move(o.buffer_);
      ledger_ = std::exchange(o.ledger_, nullptr);
    }
    return *this;
  }
  void reset() noexcept {
    if (ledger_) ledger_->remove(buffer_.bytes());
    buffer_.reset();
    ledger_ = nullptr;
  }
  T* get() const noexcept { return buffer_.get(); }
  std::size_t size() const noexcept { return buffer_.size(); }

 private:
  DeviceBuffer<T> buffer_;
  Ledger* ledger_ = nullptr;
};

}  // namespace espgrid::cuda::lean
