// The nonlinear PB equation's inexact Newton iteration on one GPU (src/pb/pb_nonlinear.h): the
// algorithm is src/pb_numerics/pb_newton.h's, the per-node arithmetic src/pb_numerics/pb_nonlinear_math.h's, and
// each step's linear system goes to the device multigrid (kernels/pb/pb_multigrid_solver.cuh) after
// its level-0 diagonal is rewritten and the coarse operators rebuilt there. Between steps nothing
// leaves the device but scalars (norms, dot products). Sums are taken in a fixed order (block
// partials, then one block), so a run repeats bit for bit.
#include <cuda_runtime.h>

#include <chrono>
#include <cmath>
#include <string>

#include "kernels/cuda_runtime_support.h"
#include "kernels/pb/pb_block_sum.cuh"
#include "kernels/pb/pb_multigrid_solver.cuh"
#include "src/compute/cuda_driver.h"
#include "src/pb/pb_cuda_driver.h"
#include "src/pb_numerics/pb_newton.h"
#include "src/pb_numerics/pb_nonlinear_math.h"

namespace espgrid::cuda {
namespace {

using pb::BoltzmannSpecies;
using pb::MgOperator;

__device__ __forceinline__ bool interior_node(long idx, const long* n) {
  const long plane = n[0] * n[1];
  if (idx >= plane * n[2]) return false;
  const long k = idx / plane, rest = idx - k * plane, j = rest / n[0], i = rest - j * n[0];
  return pb::interior(n, i, j, k);
}

/// What the Newton kernels read: level 0's conductances, the Boltzmann term's coefficient and
/// species, and the split formulation's φ_Coulomb (null for direct).
struct NewtonArgs {
  MgOperator op;
  const double* mass = nullptr;
  const double* offset = nullptr;
  BoltzmannSpecies ions;
  __device__ double total(const double* u, long idx) const { return offset ? u[idx] + offset[idx] : u[idx]; }
};

/// A₀u and F = b − A₀u − N(u) (0 on the faces).
__global__ void residual_kernel(NewtonArgs a, const double* b, const double* u, double* a_u, double* f) {
  const long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= a.op.n[0] * a.op.n[1] * a.op.n[2]) return;
  if (!interior_node(idx, a.op.n)) {
    a_u[idx] = f[idx] = 0.0;
    return;
  }
  a_u[idx] = pb::conductance_row(a.op, u, idx);
  f[idx] = b[idx] - a_u[idx] - pb::boltzmann_value(a.ions, a.mass[idx], a.total(u, idx));
}

/// The Jacobian's diagonal term into level 0's c, and its right-hand side F into the solver's.
__global__ void jacobian_kernel(NewtonArgs a, const double* u, const double* f, double* c, double* rhs) {
  const long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= a.op.n[0] * a.op.n[1] * a.op.n[2]) return;
  const bool inside = interior_node(idx, a.op.n);
  c[idx] = inside ? pb::boltzmann_slope(a.ions, a.mass[idx], a.total(u, idx)) : 0.0;
  rhs[idx] = inside ? f[idx] : 0.0;
}

/// A₀δ (0 on the faces).
__global__ void conductance_kernel(NewtonArgs a, const double* delta, double* out) {
  const long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= a.op.n[0] * a.op.n[1] * a.op.n[2]) return;
  out[idx] = interior_node(idx, a.op.n) ? pb::conductance_row(a.op, delta, idx) : 0.0;
}

/// b + c φ_C: the split formulation's source once the Boltzmann term takes over c φ_C.
__global__ void split_source_kernel(long size, const double* b, const double* mass, const double* offset, double* out) {
  const long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx < size) out[idx] = b[idx] + mass[idx] * offset[idx];
}

/// u += λδ (every node: both are 0 on the faces).
__global__ void step_kernel(long size, double lambda, const double* delta, double* u) {
  const long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx < size) u[idx] += lambda * delta[idx];
}

/// The per-node terms summed by the reductions below.
struct RemainderTerm {  ///< c R(u, λδ)
  NewtonArgs a;
  const double* u;
  const double* delta;
  double lambda;
  __device__ double operator()(long idx) const {
    return interior_node(idx, a.op.n)
               ? pb::boltzmann_remainder(a.ions, a.mass[idx], a.total(u, idx), lambda * delta[idx])
               : 0.0;
  }
};
struct TrialResidualTerm {  ///< F(u + λδ)², from A₀u and A₀δ
  NewtonArgs a;
  const double* b;
  const double* u;
  const double* a_u;
  const double* delta;
  const double* a_delta;
  double lambda;
  __device__ double operator()(long idx) const {
    if (!interior_node(idx, a.op.n)) return 0.0;
    const double r = b[idx] - a_u[idx] - lambda * a_delta[idx] -
                     pb::boltzmann_value(a.ions, a.mass[idx], a.total(u, idx) + lambda * delta[idx]);
    return r * r;
  }
};
struct ClippedTerm {  ///< 1 where the exponent clip is active
  NewtonArgs a;
  const double* u;
  __device__ double operator()(long idx) const {
    return interior_node(idx, a.op.n) && pb::boltzmann_clipped(a.ions, a.mass[idx], a.total(u, idx)) ? 1.0 : 0.0;
  }
};

template <class Term>
__global__ void sum_partial_kernel(long size, Term term, double* partial) {
  double s = 0.0;
  for (long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x; idx < size;
       idx += static_cast<long>(gridDim.x) * blockDim.x)
    s += term(idx);
  s = pb_sums::block_sum<kPbBlock>(s);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

/// pb_newton.h's machine on the device: u, A₀u, F, A₀δ and the Boltzmann coefficient are device
/// buffers; δ is the multigrid solver's solution vector.
class DeviceMachine {
 public:
  DeviceMachine(PbMultigridSolver& solver, const double* rhs, const double* coulomb, const BoltzmannSpecies& ions)
      : solver_(solver), size_(solver.size()), stream_(solver.stream()) {
    const std::size_t bytes = static_cast<std::size_t>(size_) * sizeof(double);
    mass_ = DeviceBuffer<double>(static_cast<std::size_t>(size_), "PB Boltzmann coefficient");
    u_ = DeviceBuffer<double>(static_cast<std::size_t>(size_), "PB Newton iterate");
    f_ = DeviceBuffer<double>(static_cast<std::size_t>(size_), "PB Newton residual");
    a_u_ = DeviceBuffer<double>(static_cast<std::size_t>(size_), "PB A0 u");
    a_delta_ = DeviceBuffer<double>(static_cast<std::size_t>(size_), "PB A0 delta");
    partial_ = DeviceBuffer<double>(kPbDotBlocks, "PB Newton partial sums");
    scalar_ = DeviceBuffer<double>(1, "PB Newton sum");
    ESPGRID_CUDA_CHECK(cudaMemcpyAsync(mass_.get(), solver.top_mass(), bytes, cudaMemcpyDeviceToDevice, stream_));
    ESPGRID_CUDA_CHECK(cudaMemsetAsync(u_.get(), 0, bytes, stream_));
    rhs_ = rhs;
    b_ = rhs;
    if (coulomb) {
      b_split_ = DeviceBuffer<double>(static_cast<std::size_t>(size_), "PB split Newton source");
      split_source_kernel<<<pb_blocks_for(size_), kPbBlock, 0, stream_>>>(size_, rhs, mass_.get(), coulomb,
                                                                          b_split_.get());
      ESPGRID_CUDA_CHECK_LAUNCH();
      b_ = b_split_.get();
    }
    args_.op = solver.top().op;
    args_.mass = mass_.get();
    args_.offset = coulomb;
    args_.ions = ions;
  }

  /// u = the linear equation's solution to `eta` (level 0 still holds the linear operator).
  int start_linear(double eta, int max_iterations) {
    const std::size_t bytes = static_cast<std::size_t>(size_) * sizeof(double);
    ESPGRID_CUDA_CHECK(cudaMemcpyAsync(solver_.rhs_buffer(), rhs_, bytes, cudaMemcpyDeviceToDevice, stream_));
    ESPGRID_CUDA_CHECK(cudaMemsetAsync(solver_.solution(), 0, bytes, stream_));
    double own = 0;
    const int iterations = solver_.solve(eta, max_iterations, own);
    ESPGRID_CUDA_CHECK(cudaMemcpyAsync(u_.get(), solver_.solution(), bytes, cudaMemcpyDeviceToDevice, stream_));
    return iterations;
  }

  double reference_norm() { return std::sqrt(solver_.dot(rhs_, rhs_)); }

  double residual_norm() {
    residual_kernel<<<pb_blocks_for(size_), kPbBlock, 0, stream_>>>(args_, b_, u_.get(), a_u_.get(), f_.get());
    ESPGRID_CUDA_CHECK_LAUNCH();
    return std::sqrt(solver_.dot(f_.get(), f_.get()));
  }

  void set_jacobian() {
    jacobian_kernel<<<pb_blocks_for(size_), kPbBlock, 0, stream_>>>(args_, u_.get(), f_.get(), solver_.top_mass(),
                                                                    solver_.rhs_buffer());
    ESPGRID_CUDA_CHECK_LAUNCH();
    solver_.rebuild_coarse_levels();
  }

  pb::LinearStep solve_step(double eta, int max_iterations) {
    ESPGRID_CUDA_CHECK(
        cudaMemsetAsync(solver_.solution(), 0, static_cast<std::size_t>(size_) * sizeof(double), stream_));
    double own = 0;
    pb::LinearStep step;
    step.iterations = solver_.solve(eta, max_iterations, own);
    step.converged = own <= eta;
    return step;
  }

  void prepare_line(double& f_dot_delta, double& delta_a_delta) {
    conductance_kernel<<<pb_blocks_for(size_), kPbBlock, 0, stream_>>>(args_, solver_.solution(), a_delta_.get());
    ESPGRID_CUDA_CHECK_LAUNCH();
    f_dot_delta = solver_.dot(f_.get(), solver_.solution());
    delta_a_delta = solver_.dot(solver_.solution(), a_delta_.get());
  }

  void line_trial(double lambda, double& remainder, double& residual) {
    remainder = sum(RemainderTerm{args_, u_.get(), solver_.solution(), lambda});
    residual = sum(TrialResidualTerm{args_, b_, u_.get(), a_u_.get(), solver_.solution(), a_delta_.get(), lambda});
  }

  void take_step(double lambda) {
    step_kernel<<<pb_blocks_for(size_), kPbBlock, 0, stream_>>>(size_, lambda, solver_.solution(), u_.get());
    ESPGRID_CUDA_CHECK_LAUNCH();
  }

  std::size_t clipped_nodes() { return static_cast<std::size_t>(sum(ClippedTerm{args_, u_.get()})); }

  /// The iterate into the solver's solution vector (where the map's combination reads it).
  void publish() {
    ESPGRID_CUDA_CHECK(cudaMemcpyAsync(solver_.solution(), u_.get(), static_cast<std::size_t>(size_) * sizeof(double),
                                       cudaMemcpyDeviceToDevice, stream_));
  }

 private:
  template <class Term>
  double sum(const Term& term) {
    sum_partial_kernel<<<kPbDotBlocks, kPbBlock, 0, stream_>>>(size_, term, partial_.get());
    ESPGRID_CUDA_CHECK_LAUNCH();
    pb_sums::partials_sum_kernel<kPbBlock><<<1, kPbBlock, 0, stream_>>>(partial_.get(), kPbDotBlocks, scalar_.get());
    ESPGRID_CUDA_CHECK_LAUNCH();
    double out = 0.0;
    ESPGRID_CUDA_CHECK(cudaMemcpyAsync(&out, scalar_.get(), sizeof(double), cudaMemcpyDeviceToHost, stream_));
    ESPGRID_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return out;
  }

  PbMultigridSolver& solver_;
  const long size_;
  const cudaStream_t stream_;
  NewtonArgs args_;
  const double* rhs_ = nullptr;  ///< the linear system's source
  const double* b_ = nullptr;    ///< the Newton system's (split: b_split_)
  DeviceBuffer<double> mass_, u_, a_u_, f_, a_delta_, b_split_, partial_, scalar_;
};

}  // namespace

void newton_on_device(PbMultigridSolver& solver, const double* rhs, const double* coulomb, const PbNewtonInput& in,
                      pb::NewtonOutcome& outcome, std::size_t& clipped_nodes) {
  DeviceMachine machine(solver, rhs, coulomb, in.ions);
  int start_iterations = 0;
  if (coulomb) start_iterations = machine.start_linear(in.settings.max_forcing, in.settings.max_linear_iterations);
  outcome = pb::newton_solve(machine, machine.reference_norm(), in.settings);
  outcome.linear_iterations += start_iterations;
  clipped_nodes = machine.clipped_nodes();
  machine.publish();
  ESPGRID_CUDA_CHECK(cudaStreamSynchronize(solver.stream()));
}

PbMgResult solve_pb_newton(const PbMgLevel* levels, int level_count, const double* rhs, const double* coulomb,
                           double* u, const PbMgRun& run, const PbNewtonInput& newton, pb::NewtonOutcome& outcome,
                           std::size_t& clipped_nodes) {
  if (level_count < 1) throw Error("internal error: the PB multigrid needs at least one level");
  PbMgResult result;
  const DeviceGuard guard(run.device);
  result.device = describe_device(run.device);
  const auto wall = [] { return std::chrono::steady_clock::now(); };
  const auto seconds = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
  const auto t0 = wall();
  PbMultigridSolver solver(run);
  const cudaStream_t stream = solver.stream();
  const PbMgLevel& top = levels[0];
  const std::size_t size = static_cast<std::size_t>(top.n[0] * top.n[1] * top.n[2]);
  const auto upload = [&](const double* host, const char* name) {
    DeviceBuffer<double> d(size, name);
    ESPGRID_CUDA_CHECK(cudaMemcpyAsync(d.get(), host, size * sizeof(double), cudaMemcpyHostToDevice, stream));
    return d;
  };
  solver.device_levels(levels, level_count, upload(top.wx, "PB level 0 wx"), upload(top.wy, "PB level 0 wy"),
                       upload(top.wz, "PB level 0 wz"), upload(top.c, "PB level 0 c"));
  DeviceBuffer<double> rhs_device = upload(rhs, "PB right-hand side");
  DeviceBuffer<double> coulomb_device;
  if (coulomb) coulomb_device = upload(coulomb, "PB Coulomb map");
  ESPGRID_CUDA_CHECK(cudaStreamSynchronize(stream));
  const auto t1 = wall();
  result.upload_seconds = seconds(t0, t1);
  Event start, stop;
  start.record(stream);
  newton_on_device(solver, rhs_device.get(), coulomb_device.get(), newton, outcome, clipped_nodes);
  stop.record(stream);
  ESPGRID_CUDA_CHECK(cudaEventSynchronize(stop.get()));
  result.solve_seconds = Event::elapsed_ms(start, stop) * 1e-3;
  result.iterations = outcome.linear_iterations;
  result.own_residual = outcome.relative_residual;
  const auto t2 = wall();
  ESPGRID_CUDA_CHECK(cudaMemcpyAsync(u, solver.solution(), size * sizeof(double), cudaMemcpyDeviceToHost, stream));
  ESPGRID_CUDA_CHECK(cudaStreamSynchronize(stream));
  result.download_seconds = seconds(t2, wall());
  return result;
}

}  // namespace espgrid::cuda
