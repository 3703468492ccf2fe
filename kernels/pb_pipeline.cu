// The whole PB map on one device from the atoms (src/pb/pb_pipeline_driver.h): inputs and surface
// (kernels/pb_pipeline_inputs.cu), then the right-hand side, the hierarchy and the solve
// (kernels/pb_lean_solver.cuh), then the map. Built with FMA contraction like pb_multigrid.cu, whose
// kernels these repeat, so the same inputs give that path's map bit for bit.
//
// Device memory, bytes a node: the codes 4 and the surface bytes 4 while the surface is built; then
// the codes and the solver's five vectors (44) and coarse levels (~8); the outputs reuse the
// vectors (docs/pb.md, "Memory").
#include <cuda_runtime.h>

#include <chrono>
#include <optional>

#include "kernels/cuda_runtime_support.h"
#include "kernels/pb_lean_solver.cuh"
#include "kernels/pb_pipeline.cuh"
#include "src/compute/cuda_driver.h"
#include "src/pb/pb_pipeline_driver.h"

namespace espgrid::cuda {
namespace {

using pipeline::Ledger;
using pipeline::Tracked;
using Solver = lean::Solver<pb::CodedOperator>;

constexpr int kThreads = 256;
unsigned blocks_for(long count) { return static_cast<unsigned>((count + kThreads - 1) / kThreads); }

struct Grid {
  long n[3];
};

__device__ __forceinline__ void node_of(long idx, const long* n, long& i, long& j, long& k) {
  const long plane = n[0] * n[1];
  k = idx / plane;
  j = (idx - k * plane) / n[0];
  i = idx - k * plane - j * n[0];
}

/// b at every node (0 on the faces) from the spread charges and the face values.
__global__ void rhs_kernel(pb::CodedOperator op, double zmagic, const double* charge, const double* faces, double* b) {
  const long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= op.n[0] * op.n[1] * op.n[2]) return;
  long i, j, k;
  node_of(idx, op.n, i, j, k);
  b[idx] = pb::interior(op.n, i, j, k) ? pb::direct_rhs(op, zmagic, charge[idx], faces, i, j, k) : 0.0;
}

/// φ = the face values on the faces, u inside (pb::combined_value's arithmetic), times `scale`.
template <class T>
__global__ void combine_kernel(Grid g, const double* faces, const double* u, double scale, T* out) {
  const long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= g.n[0] * g.n[1] * g.n[2]) return;
  long i, j, k;
  node_of(idx, g.n, i, j, k);
  const double phi = pb::on_faces(g.n, i, j, k) ? faces[pb::face_index(g.n, i, j, k)] : u[idx] + 0.0;
  out[idx] = static_cast<T>(phi * scale);
}

/// φ·q at every node (APBS's spl2 fixed-charge energy, summed after).
__global__ void charge_potential_kernel(Grid g, const double* faces, const double* u, const double* charge,
                                        double* out) {
  const long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= g.n[0] * g.n[1] * g.n[2]) return;
  long i, j, k;
  node_of(idx, g.n, i, j, k);
  const double phi = pb::on_faces(g.n, i, j, k) ? faces[pb::face_index(g.n, i, j, k)] : u[idx] + 0.0;
  out[idx] = phi * charge[idx];
}

double seconds_between(const Event& a, const Event& b) { return Event::elapsed_ms(a, b) * 1e-3; }

/// One run; members in the order they must be released (the stream last declared, first destroyed,
/// waiting for the work that uses the buffers above it).
class PipelineRun {
 public:
  PipelineRun(const PbPipelineInput& in, PbPipelineResult& out) : in_(in), out_(out) {}

  void run() {
    const cudaStream_t st = stream_.get();
    const long size = in_.n[0] * in_.n[1] * in_.n[2];
    const std::size_t points = static_cast<std::size_t>(size);
    Event e0, e1, e2, e3, e4, e5;
    e0.record(st);
    atoms_ = pipeline::upload_atoms(ledger_, in_.atoms, st);
    const pb::AtomArrays at = atoms_.view();
    // The SAS search: cells, then every atom's neighbours.
    pb::AtomCells cells = in_.cells;
    std::optional<pipeline::Bins> cell_bins(pipeline::bin_atoms(ledger_, cells, at, st));
    cells.start = cell_bins->start.get();
    cells.atoms = cell_bins->atoms.get();
    std::optional<pipeline::Neighbours> neighbours(pipeline::sas_neighbours(ledger_, cells, at, in_.probe_radius, st));
    out_.neighbour_pairs = neighbours->pairs;
    e1.record(st);
    // The surface as bytes, then as node codes.
    Tracked<unsigned long long> open_points(ledger_, 1, "PB open SAS points");
    std::optional<pipeline::SurfaceBytes> bytes(
        pipeline::build_surface_bytes(ledger_, in_, at, *neighbours, open_points.get(), st));
    codes_ = Tracked<std::uint32_t>(ledger_, points, "PB node codes");
    pipeline::write_codes(bytes->view, in_.smooth, in_.salt, codes_.get(), st);
    e2.record(st);
    // The boundary values (the direct sum on another thread has overlapped the surface's kernels).
    const auto wait0 = std::chrono::steady_clock::now();
    const std::vector<double> faces = in_.faces();
    out_.faces_wait_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wait0).count();
    const long face_count = pb::face_node_count(in_.n);
    if (faces.size() != static_cast<std::size_t>(face_count))
      throw Error("internal error: the PB pipeline got " + std::to_string(faces.size()) + " boundary values for " +
                  std::to_string(face_count) + " face nodes");
    faces_ = Tracked<double>(ledger_, faces.size(), "PB boundary values (faces)");
    ESPGRID_CUDA_CHECK(
        cudaMemcpyAsync(faces_.get(), faces.data(), faces.size() * sizeof(double), cudaMemcpyHostToDevice, st));
    unsigned long long open = 0;
    ESPGRID_CUDA_CHECK(cudaMemcpyAsync(&open, open_points.get(), sizeof open, cudaMemcpyDeviceToHost, st));
    ESPGRID_CUDA_CHECK(cudaStreamSynchronize(st));  // the surface is built: its bytes and lists go
    out_.sas_points = static_cast<std::size_t>(open);
    bytes.reset();
    neighbours.reset();
    cell_bins.reset();
    e3.record(st);
    // Charges, right-hand side, hierarchy.
    charge_bins_ = charge_geometry();
    charge_lists_.emplace(pipeline::bin_atoms(ledger_, charge_bins_, at, st));
    charge_bins_.start = charge_lists_->start.get();
    charge_bins_.atoms = charge_lists_->atoms.get();
    const pb::CodedOperator top = pb::coded_operator(in_.n, codes_.get(), table(), in_.mass);
    solver_.emplace(ledger_, in_.run, st);
    solver_->build(top, in_.levels, in_.level_count);
    right_hand_side(solver_->r(), solver_->z(), at);  // the charges pass through z, zeroed after
    ESPGRID_CUDA_CHECK(cudaMemsetAsync(solver_->z(), 0, points * sizeof(double), st));
    e4.record(st);
    out_.iterations = solver_->solve(in_.run.tolerance, in_.run.max_iterations, out_.own_residual);
    e5.record(st);
    outputs(at);
    stream_.synchronize();
    out_.inputs_seconds = seconds_between(e0, e1);
    out_.surface_seconds = seconds_between(e1, e2);
    out_.assemble_seconds = seconds_between(e3, e4);
    out_.solve_seconds = seconds_between(e4, e5);
    out_.peak_bytes = ledger_.peak;
  }

 private:
  pb::ChargeBins charge_geometry() const {
    pb::ChargeBins b;
    for (int d = 0; d < 3; ++d) {
      b.n[d] = in_.n[d];
      b.origin[d] = in_.origin[d];
      b.h[d] = in_.spacing[d];
    }
    b.method = in_.charge_method;
    b.bin_nodes = pb::charge_bin_nodes(b.method);
    for (int d = 0; d < 3; ++d) b.bins[d] = (b.n[d] + b.bin_nodes - 1) / b.bin_nodes;
    return b;
  }

  const double* table() {
    table_ = Tracked<double>(ledger_, 3 * pb::kPatterns, "PB conductance table");
    ESPGRID_CUDA_CHECK(cudaMemcpyAsync(table_.get(), in_.conductances, 3 * pb::kPatterns * sizeof(double),
                                       cudaMemcpyHostToDevice, stream_.get()));
    return table_.get();
  }

  /// b into `b` (the charges gathered into `scratch` first).
  void right_hand_side(double* b, double* scratch, const pb::AtomArrays& at) {
    const cudaStream_t st = stream_.get();
    pipeline::gather_charges(charge_bins_, at, scratch, st);
    rhs_kernel<<<blocks_for(solver_->size()), kThreads, 0, st>>>(solver_->top(), in_.zmagic, scratch, faces_.get(), b);
    ESPGRID_CUDA_CHECK_LAUNCH();
  }

  /// The recomputed residual, the energy, φ in double and the map, each in a vector the solve no
  /// longer needs (u holds the solution; r, z, p, q are free).
  void outputs(const pb::AtomArrays& at) {
    const cudaStream_t st = stream_.get();
    const auto wall0 = std::chrono::steady_clock::now();
    Solver& s = *solver_;
    const long size = s.size();
    Grid g{{in_.n[0], in_.n[1], in_.n[2]}};
    right_hand_side(s.z(), s.p(), at);  // z = b, p = the charges
    s.residual(s.u(), s.z(), s.q());
    const double rr = s.dot(s.q(), s.q()), bb = s.dot(s.z(), s.z());
    out_.relative_residual = bb > 0 ? std::sqrt(rr / bb) : std::sqrt(rr);
    if (in_.fixed_charge_energy) {
      charge_potential_kernel<<<blocks_for(size), kThreads, 0, st>>>(g, faces_.get(), s.u(), s.p(), s.q());
      ESPGRID_CUDA_CHECK_LAUNCH();
      out_.fixed_charge = s.dot(s.q(), nullptr);
    }
    const std::size_t points = static_cast<std::size_t>(size);
    if (in_.potential) {
      combine_kernel<double><<<blocks_for(size), kThreads, 0, st>>>(g, faces_.get(), s.u(), 1.0, s.q());
      ESPGRID_CUDA_CHECK_LAUNCH();
      ESPGRID_CUDA_CHECK(cudaMemcpyAsync(in_.potential, s.q(), points * sizeof(double), cudaMemcpyDeviceToHost, st));
    }
    float* map = reinterpret_cast<float*>(s.r());
    combine_kernel<float><<<blocks_for(size), kThreads, 0, st>>>(g, faces_.get(), s.u(), in_.unit_scale, map);
    ESPGRID_CUDA_CHECK_LAUNCH();
    ESPGRID_CUDA_CHECK(cudaMemcpyAsync(in_.values, map, points * sizeof(float), cudaMemcpyDeviceToHost, st));
    ESPGRID_CUDA_CHECK(cudaStreamSynchronize(st));
    out_.output_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  }

  const PbPipelineInput& in_;
  PbPipelineResult& out_;
  Ledger ledger_;
  pipeline::DeviceAtoms atoms_;
  Tracked<std::uint32_t> codes_;
  Tracked<double> faces_, table_;
  pb::ChargeBins charge_bins_;
  std::optional<pipeline::Bins> charge_lists_;
  std::optional<Solver> solver_;
  Stream stream_;
};

}  // namespace

void run_pb_pipeline(const PbPipelineInput& in, PbPipelineResult& out) {
  if (in.level_count < 1) throw Error("internal error: the PB pipeline needs at least one multigrid level");
  if (!in.faces || !in.values || !in.conductances) throw Error("internal error: the PB pipeline's inputs are missing");
  const auto wall0 = std::chrono::steady_clock::now();
  const DeviceGuard guard(in.run.device);
  out.device = describe_device(in.run.device);
  PipelineRun run(in, out);
  run.run();
  out.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
}

void pb_device_memory(int device, std::size_t& free_bytes, std::size_t& total_bytes) {
  const DeviceGuard guard(device);
  ESPGRID_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
}

}  // namespace espgrid::cuda
