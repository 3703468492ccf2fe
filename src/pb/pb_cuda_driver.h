// What src/pb/ needs from the GPU, declared here in plain C++ (no CUDA headers) and implemented
// by kernels/pb/pb_multigrid.cu and kernels/pb/pb_surface.cu (kernels/ includes src/pb/, never the
// reverse: the pattern of src/compute/cuda_driver.h). A build without CUDA links
// kernels/pb/pb_cuda_unavailable.cpp instead.
//
// The solver is espgrid's multigrid-preconditioned conjugate gradients (src/pb/pb_multigrid.h
// describes the algorithm; src/pb_numerics/pb_multigrid_math.h holds the per-node arithmetic both the
// CUDA kernels and the CPU emulation call). The host builds the level hierarchy; this uploads it,
// iterates on the device in double precision, and copies the solution back.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>

#include "src/pb_numerics/pb_newton.h"
#include "src/pb_numerics/pb_nonlinear_math.h"
#include "src/pb_numerics/pb_system_math.h"
#include "src/pb_surface/pb_surface_driver.h"

namespace espgrid::cuda {

/// How much of a level one device holds when the grid is split over devices in z-slabs
/// (kernels/pb/pb_lean_solver.cuh); the other solvers use Whole.
enum class PbMgSpan {
  Whole,     ///< the whole level (one device, or a coarse level every slab repeats)
  Slab,      ///< its planes and a halo plane at each cut (exchanged with the neighbour)
  Gathered,  ///< the whole level; the slab computes its planes (own_begin .. own_end) and gathers the rest
};

/// One level of the multigrid hierarchy in host memory (see pb::MgLevel).
struct PbMgLevel {
  long n[3] = {0, 0, 0};       ///< nodes per axis, faces included
  const double* wx = nullptr;  ///< face conductances and mass term, n[0]·n[1]·n[2] each
  const double* wy = nullptr;
  const double* wz = nullptr;
  const double* c = nullptr;
  bool coarsened[3] = {false, false, false};                  ///< whether this level halves the axis of the level above
  const int* fine_of[3] = {nullptr, nullptr, nullptr};        ///< n[d] entries (coarsened axes)
  const int* coarse_lo[3] = {nullptr, nullptr, nullptr};      ///< the level above's n[d] entries
  const unsigned char* mid[3] = {nullptr, nullptr, nullptr};  ///< the level above's n[d] entries
  // A slab's share (PbMgSpan); the z maps above are then in this array's and the level above's
  // array's plane numbers (which may point past either for the halo planes, never used there).
  PbMgSpan span = PbMgSpan::Whole;
  long plane_offset = 0;  ///< the whole level's z-plane of this array's plane 0 (for the sweeps' colours)
  long own_begin = 0;     ///< the planes whose operator and restriction this slab computes
  long own_end = -1;      ///< one past them (-1: n[2])
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
  double own_residual = 0;    ///< the CG recursion's ‖r‖₂/‖b‖₂ at the end (what decided to stop)
  double upload_seconds = 0;  ///< device set-up, allocation and copies in
  double solve_seconds = 0;   ///< the iterations (CUDA events)
  double download_seconds = 0;
  std::string device;  ///< the GPU's description
};

/// Solves A u = rhs (u = 0 on the faces) on `run.device`. `levels[0]` is the system's operator;
/// `rhs` and `u` hold levels[0]'s n[0]·n[1]·n[2] values (u is written). Throws CudaError / Error.
PbMgResult solve_pb_multigrid(const PbMgLevel* levels, int level_count, const double* rhs, double* u,
                              const PbMgRun& run);

/// The nonlinear equation's Boltzmann term and Newton settings (src/pb/pb_nonlinear.h).
struct PbNewtonInput {
  pb::BoltzmannSpecies ions;
  pb::NewtonSettings settings;  ///< settings.max_linear_iterations bounds each multigrid solve
};

/// The nonlinear system by inexact Newton with the whole iteration on `run.device`
/// (kernels/pb/pb_nonlinear.cu): `levels` gives the hierarchy's shape and level 0's operator (its c is
/// the Boltzmann term's coefficient; coarser operators are built on the device for each step's
/// Jacobian), `rhs` the linear system's source, `coulomb` φ_Coulomb for the split formulation (null
/// for direct). `u` receives the solution; `outcome` and `clipped_nodes` what the iteration did.
PbMgResult solve_pb_newton(const PbMgLevel* levels, int level_count, const double* rhs, const double* coulomb,
                           double* u, const PbMgRun& run, const PbNewtonInput& newton, pb::NewtonOutcome& outcome,
                           std::size_t& clipped_nodes);

}  // namespace espgrid::cuda

namespace espgrid::cuda {

/// Device memory kept between PB solves on the same grid (trajectory frames): the solve's buffers
/// return to it instead of being freed and are handed out again to requests of the same size, so
/// a frame after the first allocates nothing. One solve at a time uses it; freed with it.
class PbDeviceWorkspace {
 public:
  PbDeviceWorkspace();
  ~PbDeviceWorkspace();
  PbDeviceWorkspace(const PbDeviceWorkspace&) = delete;
  PbDeviceWorkspace& operator=(const PbDeviceWorkspace&) = delete;
  struct Pool;  // kernels/pb/pb_multigrid.cu (a DevicePool)
  Pool& pool() noexcept { return *pool_; }
  std::mutex& mutex() noexcept { return mutex_; }

 private:
  std::unique_ptr<Pool> pool_;
  std::mutex mutex_;  ///< one solve at a time
};

/// The whole PB map on one device: the coefficient maps, the system's assembly, the multigrid
/// hierarchy, the solve and the combination run there (the per-node code of src/pb_numerics/pb_geometry.h,
/// pb_system_math.h and pb_multigrid_math.h); only the float map comes back.
struct PbDeviceSolveInput {
  PbSurfaceInput surface;             ///< the coefficient maps' inputs; surface.device is the device
  pb::AssemblyArgs assembly;          ///< its scalars (n, geo, mass, zmagic, eps_p, split); pointers ignored
  const double* charge = nullptr;     ///< host: Direct's spread charges (any chgm), e
  const double* coulomb = nullptr;    ///< host: Split's φ_Coulomb, kT/e
  const double* boundary = nullptr;   ///< host: the boundary values (0 inside), kT/e
  const PbMgLevel* levels = nullptr;  ///< the hierarchy's shape (n, coarsened, maps); operators ignored
  int level_count = 0;
  PbMgRun run;
  double unit_scale = 1;    ///< kT/e → the map's unit
  float* values = nullptr;  ///< host, written: the map
  /// Host, optional (null: not copied): φ in double kT/e at every node, for energies and focusing.
  double* potential = nullptr;
  const PbNewtonInput* nonlinear = nullptr;  ///< the nonlinear equation (npbe); null: the linear one
  PbDeviceWorkspace* workspace = nullptr;    ///< buffers kept between solves (null: allocated for this one)
};

struct PbDeviceSolveResult {
  int iterations = 0;
  double own_residual = 0;  ///< the CG recursion's relative residual at the end
  double relative_residual = 0;  ///< ‖b − Au‖₂/‖b‖₂ (npbe: ‖F(u)‖₂/‖b‖₂) recomputed from the solution, on the device
  std::size_t sas_points = 0;
  pb::NewtonOutcome newton;       ///< npbe: what the Newton iteration did (iterations above: the linear ones)
  std::size_t clipped_nodes = 0;  ///< npbe: interior nodes where APBS's exponent clip is active
  double surface_seconds = 0;     ///< CUDA events
  double assemble_seconds = 0;    ///< assembly and hierarchy, CUDA events
  double solve_seconds = 0;       ///< CUDA events
  double wall_seconds = 0;        ///< the whole call: allocation, copies in and out, kernels
  std::string device;
};

void solve_pb_on_device(const PbDeviceSolveInput& in, PbDeviceSolveResult& out);

}  // namespace espgrid::cuda
