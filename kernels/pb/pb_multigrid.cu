// espgrid's multigrid-preconditioned conjugate gradients for the PB system on one GPU, in double
// precision. The algorithm and the per-node arithmetic are src/pb/pb_multigrid.h's and
// src/pb_numerics/pb_multigrid_math.h's: one thread per node calls the same functions the CPU emulation
// calls. Dot products are summed in a fixed order (block partials, then one block), so a run
// repeats bit for bit. Longer than 500 lines because the solver's kernels, its Solver class and the
// whole-system entry point share the launch geometry and the device buffers' layout, private here.
#include <cuda_runtime.h>

#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/cuda_runtime_support.h"
#include "kernels/pb/pb_block_sum.cuh"
#include "kernels/pb/pb_coarsest.cuh"
#include "kernels/pb/pb_device.cuh"
#include "kernels/pb/pb_multigrid_solver.cuh"
#include "src/compute/cuda_driver.h"
#include "src/pb/pb_cuda_driver.h"
#include "src/pb_numerics/pb_multigrid_math.h"
#include "src/pb_numerics/pb_system_math.h"

namespace espgrid::cuda {
namespace {

using pb::MgAxisMap;
using pb::MgOperator;

constexpr int kBlock = kPbBlock;
constexpr int kDotBlocks = kPbDotBlocks;

struct DeviceIndex {
  long i, j, k;
};

__device__ __forceinline__ bool node_of(long idx, const long* n, DeviceIndex& out) {
  const long plane = n[0] * n[1];
  if (idx >= plane * n[2]) return false;
  out.k = idx / plane;
  const long rest = idx - out.k * plane;
  out.j = rest / n[0];
  out.i = rest - out.j * n[0];
  return true;
}

using OperatorArgs = PbOperatorArgs;

struct TransferArgs {
  long nf[3], nc[3];
  MgAxisMap maps[3];
  bool coarsened[3];
};

__global__ void half_sweep_kernel(OperatorArgs a, double* x, const double* b, int color) {
  const long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  DeviceIndex p;
  if (!node_of(idx, a.op.n, p)) return;
  if (!pb::interior(a.op.n, p.i, p.j, p.k) || ((p.i + p.j + p.k) & 1) != color) return;
  x[idx] = pb::gauss_seidel_value(a.op, x, b, idx);
}

__global__ void residual_kernel(OperatorArgs a, const double* x, const double* b, double* r) {
  const long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  DeviceIndex p;
  if (!node_of(idx, a.op.n, p)) return;
  r[idx] = pb::interior(a.op.n, p.i, p.j, p.k) ? b[idx] - pb::apply_row(a.op, x, idx) : 0.0;
}

__global__ void apply_kernel(OperatorArgs a, const double* x, double* y) {
  const long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  DeviceIndex p;
  if (!node_of(idx, a.op.n, p)) return;
  y[idx] = pb::interior(a.op.n, p.i, p.j, p.k) ? pb::apply_row(a.op, x, idx) : 0.0;
}

__global__ void restrict_kernel(TransferArgs t, const double* r_fine, double* b_coarse) {
  const long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  DeviceIndex p;
  if (!node_of(idx, t.nc, p)) return;
  b_coarse[idx] =
      pb::interior(t.nc, p.i, p.j, p.k) ? pb::restrict_value(r_fine, t.nf, t.maps, t.coarsened, p.i, p.j, p.k) : 0.0;
}

__global__ void prolong_add_kernel(TransferArgs t, const double* e_coarse, double* x_fine) {
  const long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  DeviceIndex p;
  if (!node_of(idx, t.nf, p)) return;
  if (!pb::interior(t.nf, p.i, p.j, p.k)) return;
  x_fine[idx] += pb::prolong_value(e_coarse, t.nc, t.maps, t.coarsened, p.i, p.j, p.k);
}

/// u += α p, r −= α q (every node: the faces are 0 in all four).
__global__ void update_solution_kernel(long size, double alpha, const double* p, const double* q, double* u,
                                       double* r) {
  const long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= size) return;
  u[idx] += alpha * p[idx];
  r[idx] -= alpha * q[idx];
}

/// p = z + β p.
__global__ void update_direction_kernel(long size, double beta, const double* z, double* p) {
  const long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= size) return;
  p[idx] = z[idx] + beta * p[idx];
}

/// Partial sums of a·b: block b sums indices b·kBlock + t, stepping by the whole grid.
__global__ void dot_partial_kernel(long size, const double* a, const double* b, double* partial) {
  double s = 0.0;
  for (long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x; idx < size;
       idx += static_cast<long>(gridDim.x) * blockDim.x)
    s += a[idx] * b[idx];
  s = pb_sums::block_sum<kBlock>(s);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

/// A coarse level's operator from the finer one's (pb::coarse_node), one thread per coarse node.
__global__ void coarse_operator_kernel(TransferArgs t, MgOperator fine, double* wx, double* wy, double* wz, double* c) {
  const long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  DeviceIndex p;
  if (!node_of(idx, t.nc, p)) return;
  pb::coarse_node(fine, t.nf, t.nc, t.maps, t.coarsened, p.i, p.j, p.k, wx[idx], wy[idx], wz[idx], c[idx]);
}

__global__ void assemble_coefficients_kernel(pb::AssemblyArgs a) {
  const long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  DeviceIndex p;
  if (!node_of(idx, a.n, p)) return;
  pb::assemble_coefficients(a, p.i, p.j, p.k);
}

__global__ void assemble_rhs_kernel(pb::AssemblyArgs a) {
  const long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  DeviceIndex p;
  if (!node_of(idx, a.n, p)) return;
  pb::assemble_rhs(a, p.i, p.j, p.k);
}

/// The map times `scale`: boundary values on the faces, the solution (+ φ_Coulomb) inside; as
/// floats in the map's unit, or as doubles in kT/e (scale 1) for energies and focusing.
template <class T>
__global__ void combine_kernel(OperatorArgs a, const double* boundary, const double* u, const double* coulomb,
                               double scale, T* out) {
  const long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  DeviceIndex p;
  if (!node_of(idx, a.op.n, p)) return;
  out[idx] = static_cast<T>(pb::combined_value(a.op.n, boundary, u, coulomb, p.i, p.j, p.k) * scale);
}

unsigned blocks_for(long size) { return pb_blocks_for(size); }

template <class T>
DeviceBuffer<T> upload(const T* host, std::size_t count, const std::string& name, cudaStream_t stream) {
  DeviceBuffer<T> d(count, name);
  if (count) ESPGRID_CUDA_CHECK(cudaMemcpyAsync(d.get(), host, count * sizeof(T), cudaMemcpyHostToDevice, stream));
  return d;
}

/// The transfer between level `coarse` and the one above it.
TransferArgs transfer(const std::vector<PbDeviceLevel>& levels, std::size_t coarse) {
  const PbDeviceLevel& c = levels[coarse];
  const PbDeviceLevel& f = levels[coarse - 1];
  TransferArgs t;
  for (int a = 0; a < 3; ++a) {
    t.nf[a] = f.n[a];
    t.nc[a] = c.n[a];
    t.coarsened[a] = c.coarsened[a];
    t.maps[a] = {c.fine_of[a].get(), c.coarse_lo[a].get(), c.mid[a].get()};
  }
  return t;
}

}  // namespace

OperatorArgs PbDeviceLevel::args() const {
  OperatorArgs a;
  for (int d = 0; d < 3; ++d) a.op.n[d] = n[d];
  a.op.wx = wx.get();
  a.op.wy = wy.get();
  a.op.wz = wz.get();
  a.op.c = c.get();
  return a;
}

PbMultigridSolver::PbMultigridSolver(const PbMgRun& run) : run_(run) { stream_ = owned_stream_.get(); }

void PbMultigridSolver::upload_levels(const PbMgLevel* levels, int count) {
  levels_.resize(static_cast<std::size_t>(count));
  for (int l = 0; l < count; ++l) {
    const PbMgLevel& h = levels[l];
    PbDeviceLevel& d = levels_[static_cast<std::size_t>(l)];
    const std::size_t size = shape(d, h, l > 0 ? &levels[l - 1] : nullptr, l);
    const std::string level = "PB level " + std::to_string(l) + " ";
    d.wx = upload(h.wx, size, level + "wx", stream_);
    d.wy = upload(h.wy, size, level + "wy", stream_);
    d.wz = upload(h.wz, size, level + "wz", stream_);
    d.c = upload(h.c, size, level + "c", stream_);
  }
  allocate_vectors();
}

void PbMultigridSolver::device_levels(const PbMgLevel* levels, int count, DeviceBuffer<double>&& wx,
                                      DeviceBuffer<double>&& wy, DeviceBuffer<double>&& wz, DeviceBuffer<double>&& c) {
  levels_.resize(static_cast<std::size_t>(count));
  shape(levels_[0], levels[0], nullptr, 0);
  levels_[0].wx = std::move(wx);
  levels_[0].wy = std::move(wy);
  levels_[0].wz = std::move(wz);
  levels_[0].c = std::move(c);
  for (int l = 1; l < count; ++l) {
    PbDeviceLevel& d = levels_[static_cast<std::size_t>(l)];
    const std::size_t size = shape(d, levels[l], &levels[l - 1], l);
    const std::string level = "PB level " + std::to_string(l) + " ";
    d.wx = DeviceBuffer<double>(size, level + "wx");
    d.wy = DeviceBuffer<double>(size, level + "wy");
    d.wz = DeviceBuffer<double>(size, level + "wz");
    d.c = DeviceBuffer<double>(size, level + "c");
  }
  rebuild_coarse_levels();
  allocate_vectors();
}

void PbMultigridSolver::rebuild_coarse_levels() {
  for (std::size_t l = 1; l < levels_.size(); ++l) {
    PbDeviceLevel& d = levels_[l];
    coarse_operator_kernel<<<blocks_for(d.size), kBlock, 0, stream_>>>(transfer(levels_, l), levels_[l - 1].args().op,
                                                                       d.wx.get(), d.wy.get(), d.wz.get(), d.c.get());
    ESPGRID_CUDA_CHECK_LAUNCH();
  }
}

double PbMultigridSolver::relative_residual(const double* x, const double* b) {
  residual_kernel<<<blocks_for(levels_[0].size), kBlock, 0, stream_>>>(levels_[0].args(), x, b, q_.get());
  ESPGRID_CUDA_CHECK_LAUNCH();
  const double rr = dot(q_.get(), q_.get()), bb = dot(b, b);
  return bb > 0 ? std::sqrt(rr / bb) : std::sqrt(rr);
}

int PbMultigridSolver::solve(double tolerance, int max_iterations, double& own_residual) {
  const long size = levels_[0].size;
  const double bnorm = std::sqrt(dot(r_.get(), r_.get()));
  if (bnorm == 0.0) {
    own_residual = 0.0;
    return 0;
  }
  precondition();
  ESPGRID_CUDA_CHECK(cudaMemcpyAsync(p_.get(), z_.get(), static_cast<std::size_t>(size) * sizeof(double),
                                     cudaMemcpyDeviceToDevice, stream_));
  double rz = dot(r_.get(), z_.get());
  double rnorm = bnorm;
  int it = 0;
  const OperatorArgs a = levels_[0].args();
  while (it < max_iterations && rnorm > tolerance * bnorm) {
    apply_kernel<<<blocks_for(size), kBlock, 0, stream_>>>(a, p_.get(), q_.get());
    ESPGRID_CUDA_CHECK_LAUNCH();
    const double pq = dot(p_.get(), q_.get());
    if (!(pq > 0.0)) throw Error("PB multigrid (CUDA): the operator is not positive definite");
    const double alpha = rz / pq;
    update_solution_kernel<<<blocks_for(size), kBlock, 0, stream_>>>(size, alpha, p_.get(), q_.get(), u_.get(),
                                                                     r_.get());
    ESPGRID_CUDA_CHECK_LAUNCH();
    ++it;
    rnorm = std::sqrt(dot(r_.get(), r_.get()));
    if (rnorm <= tolerance * bnorm) break;
    precondition();
    const double rz_new = dot(r_.get(), z_.get());
    const double beta = rz_new / rz;
    rz = rz_new;
    update_direction_kernel<<<blocks_for(size), kBlock, 0, stream_>>>(size, beta, z_.get(), p_.get());
    ESPGRID_CUDA_CHECK_LAUNCH();
  }
  own_residual = rnorm / bnorm;
  return it;
}

std::size_t PbMultigridSolver::shape(PbDeviceLevel& d, const PbMgLevel& h, const PbMgLevel* above, int l) {
  for (int a = 0; a < 3; ++a) d.n[a] = h.n[a];
  d.size = h.n[0] * h.n[1] * h.n[2];
  const std::size_t size = static_cast<std::size_t>(d.size);
  const std::string level = "PB level " + std::to_string(l) + " ";
  d.x = DeviceBuffer<double>(size, level + "x");
  d.b = DeviceBuffer<double>(size, level + "b");
  d.r = DeviceBuffer<double>(size, level + "r");
  ESPGRID_CUDA_CHECK(cudaMemsetAsync(d.r.get(), 0, size * sizeof(double), stream_));
  if (!above) return size;
  for (int a = 0; a < 3; ++a) {
    d.coarsened[a] = h.coarsened[a];
    if (!h.coarsened[a]) continue;
    d.fine_of[a] = upload(h.fine_of[a], static_cast<std::size_t>(h.n[a]), level + "fine_of", stream_);
    d.coarse_lo[a] = upload(h.coarse_lo[a], static_cast<std::size_t>(above->n[a]), level + "coarse_lo", stream_);
    d.mid[a] = upload(h.mid[a], static_cast<std::size_t>(above->n[a]), level + "mid", stream_);
  }
  return size;
}

void PbMultigridSolver::allocate_vectors() {
  const std::size_t size = static_cast<std::size_t>(levels_[0].size);
  u_ = DeviceBuffer<double>(size, "PB solution");
  r_ = DeviceBuffer<double>(size, "PB residual");
  z_ = DeviceBuffer<double>(size, "PB preconditioned residual");
  p_ = DeviceBuffer<double>(size, "PB search direction");
  q_ = DeviceBuffer<double>(size, "PB A p");
  partial_ = DeviceBuffer<double>(kDotBlocks, "PB dot partial sums");
  scalar_ = DeviceBuffer<double>(1, "PB dot");
  for (DeviceBuffer<double>* v : {&u_, &r_, &z_, &p_, &q_})
    ESPGRID_CUDA_CHECK(cudaMemsetAsync(v->get(), 0, size * sizeof(double), stream_));
}

double PbMultigridSolver::dot(const double* a, const double* b) {
  dot_partial_kernel<<<kDotBlocks, kBlock, 0, stream_>>>(levels_[0].size, a, b, partial_.get());
  ESPGRID_CUDA_CHECK_LAUNCH();
  pb_sums::partials_sum_kernel<kBlock><<<1, kBlock, 0, stream_>>>(partial_.get(), kDotBlocks, scalar_.get());
  ESPGRID_CUDA_CHECK_LAUNCH();
  double out = 0.0;
  ESPGRID_CUDA_CHECK(cudaMemcpyAsync(&out, scalar_.get(), sizeof(double), cudaMemcpyDeviceToHost, stream_));
  ESPGRID_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return out;
}

void PbMultigridSolver::half_sweep(std::size_t l, double* x, const double* b, int color) {
  const PbDeviceLevel& d = levels_[l];
  half_sweep_kernel<<<blocks_for(d.size), kBlock, 0, stream_>>>(d.args(), x, b, color);
  ESPGRID_CUDA_CHECK_LAUNCH();
}

/// x = M⁻¹ b on level l and below (x starts at 0).
void PbMultigridSolver::v_cycle(std::size_t l, double* x, const double* b) {
  PbDeviceLevel& d = levels_[l];
  ESPGRID_CUDA_CHECK(cudaMemsetAsync(x, 0, static_cast<std::size_t>(d.size) * sizeof(double), stream_));
  if (l + 1 == levels_.size()) {
    if (coarsest::solve_in_one_launch(d.args().op, x, b, run_.coarsest_sweeps, 0, stream_)) return;
    for (int s = 0; s < run_.coarsest_sweeps; ++s) {
      half_sweep(l, x, b, 0);
      half_sweep(l, x, b, 1);
      half_sweep(l, x, b, 1);
      half_sweep(l, x, b, 0);
    }
    return;
  }
  for (int s = 0; s < run_.smoothing; ++s) {
    half_sweep(l, x, b, 0);
    half_sweep(l, x, b, 1);
  }
  residual_kernel<<<blocks_for(d.size), kBlock, 0, stream_>>>(d.args(), x, b, d.r.get());
  ESPGRID_CUDA_CHECK_LAUNCH();
  PbDeviceLevel& c = levels_[l + 1];
  const TransferArgs t = transfer(levels_, l + 1);
  restrict_kernel<<<blocks_for(c.size), kBlock, 0, stream_>>>(t, d.r.get(), c.b.get());
  ESPGRID_CUDA_CHECK_LAUNCH();
  v_cycle(l + 1, c.x.get(), c.b.get());
  prolong_add_kernel<<<blocks_for(d.size), kBlock, 0, stream_>>>(t, c.x.get(), x);
  ESPGRID_CUDA_CHECK_LAUNCH();
  for (int s = 0; s < run_.smoothing; ++s) {
    half_sweep(l, x, b, 1);
    half_sweep(l, x, b, 0);
  }
}

namespace {
using Solver = PbMultigridSolver;
}  // namespace

PbMgResult solve_pb_multigrid(const PbMgLevel* levels, int level_count, const double* rhs, double* u,
                              const PbMgRun& run) {
  if (level_count < 1) throw Error("internal error: the PB multigrid needs at least one level");
  PbMgResult result;
  const DeviceGuard guard(run.device);
  result.device = describe_device(run.device);
  const auto wall = [] { return std::chrono::steady_clock::now(); };
  const auto seconds = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
  const auto t0 = wall();
  Solver solver(run);
  solver.upload_levels(levels, level_count);
  const cudaStream_t stream = solver.stream();
  const std::size_t size = static_cast<std::size_t>(solver.size());
  ESPGRID_CUDA_CHECK(cudaMemcpyAsync(solver.rhs_buffer(), rhs, size * sizeof(double), cudaMemcpyHostToDevice, stream));
  ESPGRID_CUDA_CHECK(cudaStreamSynchronize(stream));
  const auto t1 = wall();
  result.upload_seconds = seconds(t0, t1);
  Event start, stop;
  ESPGRID_CUDA_CHECK(cudaEventRecord(start.get(), stream));
  result.iterations = solver.solve(run.tolerance, run.max_iterations, result.own_residual);
  ESPGRID_CUDA_CHECK(cudaEventRecord(stop.get(), stream));
  ESPGRID_CUDA_CHECK(cudaEventSynchronize(stop.get()));
  float ms = 0;
  ESPGRID_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
  result.solve_seconds = ms * 1e-3;
  const auto t2 = wall();
  ESPGRID_CUDA_CHECK(cudaMemcpyAsync(u, solver.solution(), size * sizeof(double), cudaMemcpyDeviceToHost, stream));
  ESPGRID_CUDA_CHECK(cudaStreamSynchronize(stream));
  result.download_seconds = seconds(t2, wall());
  return result;
}

PbDeviceWorkspace::PbDeviceWorkspace() : pool_(std::make_unique<Pool>()) {}
PbDeviceWorkspace::~PbDeviceWorkspace() = default;

// Longer than 80 lines because it is one stream's sequence (surface, assembly, hierarchy, solve,
// combine, copies) timed by one set of events, each step's buffers freed as soon as the next has
// taken what it needs.
void solve_pb_on_device(const PbDeviceSolveInput& in, PbDeviceSolveResult& out) {
  if (in.level_count < 1) throw Error("internal error: the PB multigrid needs at least one level");
  const auto wall0 = std::chrono::steady_clock::now();
  const DeviceGuard guard(in.surface.device);
  // With a workspace (trajectory frames), every buffer below comes from and returns to its pool:
  // declared first, so it outlives them.
  const std::unique_lock<std::mutex> one_solve =
      in.workspace ? std::unique_lock<std::mutex>(in.workspace->mutex()) : std::unique_lock<std::mutex>();
  const DevicePoolScope pool(in.workspace ? &in.workspace->pool() : nullptr);
  out.device = describe_device(in.surface.device);
  const long n[3] = {in.assembly.n[0], in.assembly.n[1], in.assembly.n[2]};
  const std::size_t size = static_cast<std::size_t>(n[0] * n[1] * n[2]);
  // The solver owns the stream. Every path that returns normally has synchronized it; on an error the
  // buffers' cudaFree waits for the device before releasing them.
  Solver solver(in.run);
  const cudaStream_t st = solver.stream();
  Event e0, e1, e2, e3;
  e0.record(st);
  DeviceSurface surface = build_surface_on_device(in.surface, st);
  out.sas_points = surface.sas_points;
  e1.record(st);
  // The system, assembled where the maps are.
  DeviceBuffer<double> boundary = upload(in.boundary, size, "PB boundary values", st);
  DeviceBuffer<double> charge, coulomb;
  if (in.assembly.split)
    coulomb = upload(in.coulomb, size, "PB Coulomb map", st);
  else
    charge = upload(in.charge, size, "PB charges", st);
  DeviceBuffer<double> wx(size, "PB level 0 wx"), wy(size, "PB level 0 wy"), wz(size, "PB level 0 wz"),
      c(size, "PB level 0 c"), rhs(size, "PB right-hand side");
  pb::AssemblyArgs a = in.assembly;
  a.eps_x = surface.eps[0].get();
  a.eps_y = surface.eps[1].get();
  a.eps_z = surface.eps[2].get();
  a.accessibility = surface.accessibility.get();
  a.charge = charge.get();
  a.coulomb = coulomb.get();
  a.boundary = boundary.get();
  a.wx = wx.get();
  a.wy = wy.get();
  a.wz = wz.get();
  a.c = c.get();
  a.rhs = rhs.get();
  const unsigned blocks = blocks_for(static_cast<long>(size));
  assemble_coefficients_kernel<<<blocks, kBlock, 0, st>>>(a);
  ESPGRID_CUDA_CHECK_LAUNCH();
  assemble_rhs_kernel<<<blocks, kBlock, 0, st>>>(a);
  ESPGRID_CUDA_CHECK_LAUNCH();
  ESPGRID_CUDA_CHECK(cudaStreamSynchronize(st));
  surface = DeviceSurface{};  // the maps are in the operator now: free them before the hierarchy
  solver.device_levels(in.levels, in.level_count, std::move(wx), std::move(wy), std::move(wz), std::move(c));
  ESPGRID_CUDA_CHECK(
      cudaMemcpyAsync(solver.rhs_buffer(), rhs.get(), size * sizeof(double), cudaMemcpyDeviceToDevice, st));
  e2.record(st);
  if (in.nonlinear) {  // npbe: kernels/pb/pb_nonlinear.cu
    newton_on_device(solver, rhs.get(), coulomb.get(), *in.nonlinear, out.newton, out.clipped_nodes);
    out.iterations = out.newton.linear_iterations;
    out.own_residual = out.relative_residual = out.newton.relative_residual;  // recomputed from u at the end
  } else {
    out.iterations = solver.solve(in.run.tolerance, in.run.max_iterations, out.own_residual);
  }
  e3.record(st);
  if (!in.nonlinear) out.relative_residual = solver.relative_residual(solver.solution(), rhs.get());
  DeviceBuffer<float> map(size, "PB map");
  combine_kernel<<<blocks, kBlock, 0, st>>>(solver.top(), boundary.get(), solver.solution(), coulomb.get(),
                                            in.unit_scale, map.get());
  ESPGRID_CUDA_CHECK_LAUNCH();
  ESPGRID_CUDA_CHECK(cudaMemcpyAsync(in.values, map.get(), size * sizeof(float), cudaMemcpyDeviceToHost, st));
  if (in.potential) {
    DeviceBuffer<double> phi(size, "PB potential (double)");
    combine_kernel<<<blocks, kBlock, 0, st>>>(solver.top(), boundary.get(), solver.solution(), coulomb.get(), 1.0,
                                              phi.get());
    ESPGRID_CUDA_CHECK_LAUNCH();
    ESPGRID_CUDA_CHECK(cudaMemcpyAsync(in.potential, phi.get(), size * sizeof(double), cudaMemcpyDeviceToHost, st));
    ESPGRID_CUDA_CHECK(cudaStreamSynchronize(st));  // before phi is freed
  }
  ESPGRID_CUDA_CHECK(cudaStreamSynchronize(st));
  out.surface_seconds = Event::elapsed_ms(e0, e1) * 1e-3;
  out.assemble_seconds = Event::elapsed_ms(e1, e2) * 1e-3;
  out.solve_seconds = Event::elapsed_ms(e2, e3) * 1e-3;
  out.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
}

}  // namespace espgrid::cuda
