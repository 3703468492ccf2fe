// What a kernel run reports: kernel time, wall time, where it ran, and each device worker's
// share. One type for the CPU kernels, the CUDA driver and the registry (C++17: nvcc reads it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace espgrid {

/// One device worker's share of a CUDA run (one host thread on one device).
struct WorkerTiming {
  int device = 0;
  std::string device_name;
  double kernel_seconds = 0;  ///< sum of its kernels' times, CUDA events
  double wall_seconds = 0;    ///< its thread's whole run: setup, atoms, buffers, copies, kernels
  std::int64_t planes = 0;    ///< z-planes it computed
  int chunks = 0;             ///< plane ranges it took from the queue
};

/// One phase of a method that runs in phases (the MSM entries: binning, anterpolation, ...).
struct PhaseTiming {
  std::string name;
  double seconds = 0;  ///< CUDA events on a GPU, the host clock on the CPU
};

struct ComputeTiming {
  /// Compute only: CUDA events on the GPU (several workers: the busiest one's sum, since they
  /// run concurrently), the host clock on the CPU.
  double kernel_seconds = 0;
  double wall_seconds = 0;               ///< the whole call: device set-up, allocation, copies and kernels
  std::string device;                    ///< where it ran: "CPU, 2 threads" or the GPU's description
  std::vector<WorkerTiming> parts = {};  ///< CUDA: one per device worker
  std::vector<PhaseTiming> phases = {};  ///< methods that run in phases: each phase's time, in order
  std::string method = {};               ///< approximate methods: the method and its parameters, for summaries
};

}  // namespace espgrid
