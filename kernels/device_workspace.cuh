// What a DeviceWorkspace (src/compute/cuda_driver.h) keeps between calls, and the storage types
// the device drivers (device_driver.cu, msm.cu) share: each call either owns its storage or
// borrows the workspace's, grown to the largest call so far.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "kernels/device_common.cuh"
#include "src/compute/cuda_driver.h"

namespace espgrid::cuda {

/// Grows `buffer` to hold at least `count` elements (its contents are not kept).
template <class Buffer>
void ensure_capacity(Buffer& buffer, std::size_t count, const char* name) {
  if (buffer.size() >= count) return;
  buffer.reset();  // free first: the old and the new need not fit together
  buffer = Buffer(count, name);
}

/// Where the atoms live on the current device, and their pinned staging: owned by one call, by
/// the workers on one device (SharedAtoms), or kept between calls (DeviceWorkspace).
struct AtomStorage {
  DeviceBuffer<float4> xyzq;
  DeviceBuffer<AtomDouble> xyz64;
  PinnedBuffer<float4> staging;
  PinnedBuffer<AtomDouble> staging64;
};

/// A worker's two slab buffers and their pinned staging: owned by one call, or kept between
/// calls (DeviceWorkspace).
struct SlabStorage {
  std::array<DeviceBuffer<float>, 2> device;
  std::array<PinnedBuffer<float>, 2> staging;
  std::size_t device_bytes() const noexcept { return device[0].bytes() + device[1].bytes(); }
};

/// Exact sums of the maps of many runs, kept on the device (DeviceRunOptions::sum_frames): the
/// limbs of src/compute/frame_sums.h, and the first point whose value could not be added.
struct FrameSumStorage {
  DeviceBuffer<std::uint64_t> limbs;           ///< limb-major: 2 (Σp) or 5 (and Σp²) limbs a point
  DeviceBuffer<unsigned long long> first_bad;  ///< the lowest such point of the last run; all ones: none
  std::int64_t points = 0;
  bool squares = false;
  std::uint64_t frames = 0;  ///< maps added since the last take_frame_sums
};

/// The workspace's buffers: the atoms, one worker's slabs, cuda-msm's contracted planes, and the
/// frame sums of a trajectory average.
struct DeviceWorkspace::Buffers {
  std::mutex mutex;  ///< one call at a time
  int device = -1;   ///< where the buffers are; -1: none yet
  AtomStorage atoms;
  SlabStorage slabs;
  std::array<DeviceBuffer<float>, 2> contracted;  ///< cuda-msm
  FrameSumStorage sums;
  void release() noexcept {
    sums = FrameSumStorage{};
    contracted = {};
    slabs = SlabStorage{};
    atoms = AtomStorage{};
  }
};

/// `workspace`'s buffers, locked for one call on `device` (released first if they were on another
/// device), or null without a workspace: then the call uses storage of its own.
inline DeviceWorkspace::Buffers* claim(DeviceWorkspace* workspace, int device, std::unique_lock<std::mutex>& lock) {
  if (!workspace) return nullptr;
  DeviceWorkspace::Buffers& kept = workspace->buffers();
  lock = std::unique_lock<std::mutex>(kept.mutex);
  if (kept.device != device) {
    kept.release();
    kept.device = device;
  }
  return &kept;
}

}  // namespace espgrid::cuda
