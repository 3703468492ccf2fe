// The device-resident multigrid-preconditioned CG of kernels/pb/pb_multigrid.cu, declared for the
// drivers that run it: pb_multigrid.cu's own (the linear PB solve) and pb_nonlinear.cu's (the
// inexact Newton iteration, which re-solves with a new level-0 diagonal at every step). The
// member functions, and every kernel they launch, are defined in pb_multigrid.cu.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <vector>

#include "kernels/cuda_runtime_support.h"
#include "src/pb/pb_cuda_driver.h"
#include "src/pb_numerics/pb_multigrid_math.h"

namespace espgrid::cuda {

constexpr int kPbBlock = 256;       ///< threads a block of the PB kernels
constexpr int kPbDotBlocks = 1024;  ///< partial sums per dot product (each block strides over the vector)

inline unsigned pb_blocks_for(long size) { return static_cast<unsigned>((size + kPbBlock - 1) / kPbBlock); }

/// Kernel arguments: an operator and its dimensions by value.
struct PbOperatorArgs {
  pb::MgOperator op;
};

/// One level on the device: its operator and the V-cycle's vectors.
struct PbDeviceLevel {
  long n[3] = {0, 0, 0};
  long size = 0;
  DeviceBuffer<double> wx, wy, wz, c, x, b, r;
  DeviceBuffer<int> fine_of[3], coarse_lo[3];
  DeviceBuffer<unsigned char> mid[3];
  bool coarsened[3] = {false, false, false};
  PbOperatorArgs args() const;
};

class PbMultigridSolver {
 public:
  explicit PbMultigridSolver(const PbMgRun& run);

  /// The hierarchy's operators uploaded from the host (every level's arrays given).
  void upload_levels(const PbMgLevel* levels, int count);
  /// Level 0's operator already on the device (moved in); the coarser ones computed there.
  void device_levels(const PbMgLevel* levels, int count, DeviceBuffer<double>&& wx, DeviceBuffer<double>&& wy,
                     DeviceBuffer<double>&& wz, DeviceBuffer<double>&& c);
  /// Recomputes every coarser level's operator from level 0's (after level 0's c has changed).
  void rebuild_coarse_levels();

  cudaStream_t stream() const { return stream_; }
  PbOperatorArgs top() const { return levels_[0].args(); }
  /// Level 0's mass term (the diagonal beyond the conductances), writable.
  double* top_mass() { return levels_[0].c.get(); }
  double* scratch() { return q_.get(); }
  double* rhs_buffer() { return r_.get(); }
  double* solution() { return u_.get(); }
  long size() const { return levels_[0].size; }

  /// ‖r‖₂/‖b‖₂ for r = b − A x on level 0 (uses the scratch vector).
  double relative_residual(const double* x, const double* b);
  /// a·b over level 0's nodes, summed in a fixed order (the same bits every run).
  double dot(const double* a, const double* b);
  /// CG preconditioned by one V-cycle from the current solution() with the residual in
  /// rhs_buffer() (solution 0 and the rhs there, for A u = rhs): the CPU emulation's loop.
  int solve(double tolerance, int max_iterations, double& own_residual);

 private:
  std::size_t shape(PbDeviceLevel& d, const PbMgLevel& h, const PbMgLevel* above, int l);
  void allocate_vectors();
  void half_sweep(std::size_t l, double* x, const double* b, int color);
  void v_cycle(std::size_t l, double* x, const double* b);
  void precondition() { v_cycle(0, z_.get(), r_.get()); }

  PbMgRun run_;
  std::vector<PbDeviceLevel> levels_;
  DeviceBuffer<double> u_, r_, z_, p_, q_, partial_, scalar_;
  // Last: destroyed first, it waits for the stream's work before the buffers above are freed.
  Stream owned_stream_;
  cudaStream_t stream_ = nullptr;
};

/// The nonlinear system by inexact Newton on `solver`'s device (kernels/pb/pb_nonlinear.cu): level 0
/// holds the linear operator (its c is the Boltzmann term's coefficient), `rhs` (device) the linear
/// system's source, `coulomb` (device) φ_Coulomb for the split formulation or null. On return the
/// solution is in solver.solution(); level 0's c holds the last Jacobian's diagonal.
void newton_on_device(PbMultigridSolver& solver, const double* rhs, const double* coulomb, const PbNewtonInput& in,
                      pb::NewtonOutcome& outcome, std::size_t& clipped_nodes);

}  // namespace espgrid::cuda
