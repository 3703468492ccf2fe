// The CUDA side of the Poisson–Boltzmann solver, as plain C++ (no CUDA headers): src/pb/ calls
// it; a build without CUDA links kernels/pb_cuda_unavailable.cpp instead of kernels/pb_multigrid.cu.
//
// The solver is espgrid's multigrid-preconditioned conjugate gradients (src/pb/pb_multigrid.h
// describes the algorithm; src/pb/pb_multigrid_math.h holds the per-node arithmetic both the
// CUDA kernels and the CPU emulation call). The host builds the level hierarchy; this uploads it,
// iterates on the device in double precision, and copies the solution back.
#pragma once

#include <string>

namespace espgrid::cuda {

/// One level of the multigrid hierarchy in host memory (see pb::MgLevel).
struct PbMgLevel {
  long n[3] = {0, 0, 0};  ///< nodes per axis, faces included
  const double* wx = nullptr;  ///< face conductances and mass term, n[0]·n[1]·n[2] each
  const double* wy = nullptr;
  const double* wz = nullptr;
  const double* c = nullptr;
  bool coarsened[3] = {false, false, false};  ///< whether this level halves the axis of the level above
  const int* fine_of[3] = {nullptr, nullptr, nullptr};            ///< n[d] entries (coarsened axes)
  const int* coarse_lo[3] = {nullptr, nullptr, nullptr};          ///< the level above's n[d] entries
  const unsigned char* mid[3] = {nullptr, nullptr, nullptr};      ///< the level above's n[d] entries
};

struct PbMgRun {
  int smoothing = 2;         ///< red-black sweeps before and after the coarse correction
  int coarsest_sweeps = 50;  ///< symmetric sweeps on the coarsest level
  double tolerance = 1e-6;   ///< relative residual ‖r‖₂/‖b‖₂ to stop at
  int max_iterations = 200;
  int device = 0;
};

struct PbMgResult {
  int iterations = 0;
  double own_residual = 0;     ///< the CG recursion's ‖r‖₂/‖b‖₂ at the end (what decided to stop)
  double upload_seconds = 0;   ///< device set-up, allocation and copies in
  double solve_seconds = 0;    ///< the iterations (CUDA events)
  double download_seconds = 0;
  std::string device;          ///< the GPU's description
};

/// Solves A u = rhs (u = 0 on the faces) on `run.device`. `levels[0]` is the system's operator;
/// `rhs` and `u` hold levels[0]'s n[0]·n[1]·n[2] values (u is written). Throws CudaError / Error.
PbMgResult solve_pb_multigrid(const PbMgLevel* levels, int level_count, const double* rhs, double* u,
                              const PbMgRun& run);

}  // namespace espgrid::cuda
