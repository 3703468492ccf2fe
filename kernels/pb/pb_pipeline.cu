// The whole PB map from the atoms (src/pb/pb_pipeline_driver.h), on one device or split in z-slabs over
// several: inputs and surface (kernels/pb/pb_pipeline_inputs.cu), then the right-hand side, the hierarchy
// and the solve (kernels/pb/pb_lean_solver.cuh; over several slabs kernels/pb/pb_slab_solver.cuh), then the
// map. Built with FMA contraction like pb_multigrid.cu, whose kernels these repeat: with the V-cycle in
// double (ESPGRID_PB_FLOAT_CYCLE=0) one slab gives that path's map bit for bit; in float (the default) to
// ~1e-10 relative RMS (PbPipelineGpu.FloatCycleGivesTheDoubleCyclesMapInLessMemory).
//
// Device memory, bytes a node of a slab: the codes 4 and the surface bytes 4 while the surface is built;
// then the codes, the solver's five vectors (44) and coarse levels (~4 in float, ~8 in double); the outputs
// reuse the vectors (docs/pb.md, "Memory"). With a workspace (trajectory frames) buffers come from its pool.
#include <cuda_runtime.h>

#include <algorithm>
#include <functional>
#include <future>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include "kernels/cuda_runtime_support.h"
#include "kernels/pb/pb_device.cuh"
#include "kernels/pb/pb_lean_solver.cuh"
#include "kernels/pb/pb_pipeline.cuh"
#include "kernels/pb/pb_pipeline_node_kernels.cuh"
#include "kernels/pb/pb_slab_solver.cuh"
#include "src/compute/cuda_driver.h"
#include "src/core/process_trace.h"
#include "src/core/stopwatch.h"
#include "src/pb/pb_pipeline_driver.h"

namespace espgrid::cuda {
namespace {

using pipeline::Ledger;
using pipeline::Tracked;
template <class Real>
using Solver = lean::Solver<pb::CodedOperator, Real>;
template <class Real>
using Slabs = lean::Slabs<pb::CodedOperator, Real>;
using pipeline_nodes::charge_potential_kernel;
using pipeline_nodes::combine_kernel;
using pipeline_nodes::Grid;
using pipeline_nodes::rhs_kernel;

constexpr int kThreads = 256;
unsigned blocks_for(long count) { return static_cast<unsigned>((count + kThreads - 1) / kThreads); }

double seconds_between(const Event& a, const Event& b) { return Event::elapsed_ms(a, b) * 1e-3; }

/// A page-locked count for this thread's copies back of one number, kept until the thread ends: a copy
/// into pageable memory waits for the stream's kernels inside the driver, and other threads' CUDA calls
/// wait there (the capsid on an H200: the boundary's allocations beside the surface, 105 ms); made and
/// freed a solve, its cudaFreeHost could wait for the whole device while other PB frames run.
unsigned long long* kept_host_count() {
  thread_local const PinnedBuffer<unsigned long long> count(1, "PB count copied back (host)");
  return count.get();
}

/// Device a's access to b's memory where the pair can (else peer copies go through the host), once a
/// process: asked again the call fails (already enabled), which compute-sanitizer reports at every solve.
void enable_peer_access_once(int a, int b) {
  static std::mutex mutex;
  static std::set<std::pair<int, int>> enabled;
  const std::lock_guard<std::mutex> lock(mutex);
  int can = 0;
  if (enabled.count({a, b})) return;
  ESPGRID_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, a, b));
  const DeviceGuard guard(a);
  const cudaError_t e = can ? cudaDeviceEnablePeerAccess(b, 0) : cudaSuccess;
  if (e != cudaErrorPeerAccessAlreadyEnabled) ESPGRID_CUDA_CHECK(e);
  cudaGetLastError();  // clears "already enabled" (other code of this process enabled it)
  enabled.insert({a, b});
}

/// One slab of the grid on its device (PbPipelineSlab): its own grid is the whole grid's planes
/// lo_ .. lo_ + n_[2] − 1 (its planes and, at each cut, the neighbour's first one), whose inputs it
/// builds from all the atoms with the whole grid's indices (so they are the whole grid's, bit for
/// bit), and its share of the CG's vectors. Members in the order they must be released (the stream
/// last declared, first destroyed, waiting for the work that uses the buffers above it).
template <class Real>
class Slab {
 public:
  Slab(const PbPipelineInput& in, const PbPipelineSlab& part, bool first, bool last)
      : in_(in), part_(part), first_(first), last_(last) {
    // Its planes are its hierarchy's level 0 (pb::slab_hierarchy: its own and a halo at each cut).
    if (part.level_count < 1) throw Error("internal error: a PB slab without a hierarchy");
    lo_ = part.levels[0].plane_offset;
    n_[0] = in.n[0];
    n_[1] = in.n[1];
    n_[2] = part.levels[0].n[2];
    if (lo_ > part.first_plane || lo_ + n_[2] < part.end_plane)
      throw Error("internal error: a PB slab's hierarchy does not hold its planes");
  }

  int device() const { return part_.device; }
  long plane_size() const { return n_[0] * n_[1]; }
  Solver<Real>& solver() { return *solver_; }
  cudaStream_t stream() const { return stream_.get(); }
  std::size_t peak_bytes() const { return ledger_.peak; }
  /// This slab's first own plane in its arrays (1 below a cut, else 0).
  long own_first_local() const { return part_.first_plane - lo_; }

  /// Atoms, SAS lists, the surface and the codes of this slab's planes (waits for them). Event
  /// times: inputs, surface.
  void build_surface(double& inputs_seconds, double& surface_seconds, std::size_t& pairs, std::size_t& open) {
    const cudaStream_t st = stream_.get();
    unsigned long long* const count = kept_host_count();  // the open points' (page-locked)
    Event e0, e1, e2;
    e0.record(st);
    atoms_ = pipeline::upload_atoms(ledger_, in_.atoms, st);
    const pb::AtomArrays at = atoms_.view();
    const pb::SurfaceBytes window = byte_window();
    pb::AtomCells cells = in_.cells;
    std::optional<pipeline::Bins> cell_bins(pipeline::bin_atoms(ledger_, cells, at, st));
    cells.start = cell_bins->start.get();
    cells.atoms = cell_bins->atoms.get();
    std::optional<pipeline::Neighbours> neighbours(
        pipeline::sas_neighbours(ledger_, cells, at, in_.probe_radius, window, st));
    pairs = neighbours->pairs;
    e1.record(st);
    Tracked<unsigned long long> open_points(ledger_, 1, "PB open SAS points");
    std::optional<pipeline::SurfaceBytes> bytes(
        pipeline::build_surface_bytes(ledger_, in_, at, *neighbours, window, counted_heights(), open_points.get(), st));
    codes_ = Tracked<std::uint32_t>(ledger_, static_cast<std::size_t>(plane_size() * n_[2]), "PB node codes");
    pipeline::write_codes(bytes->view, in_.smooth, in_.salt, lo_, n_[2], codes_.get(), st);
    e2.record(st);
    ESPGRID_CUDA_CHECK(cudaMemcpyAsync(count, open_points.get(), sizeof *count, cudaMemcpyDeviceToHost, st));
    ESPGRID_CUDA_CHECK(cudaStreamSynchronize(st));  // the surface is built: its bytes and lists go
    open = static_cast<std::size_t>(*count);
    inputs_seconds = seconds_between(e0, e1);
    surface_seconds = seconds_between(e1, e2);
  }

  /// All of b's inputs but the face values, queued: the charges' bins and lists, the solver and its
  /// hierarchy's shape, the charges gathered into z. The solve waits for the boundary's last host steps
  /// after the surface (on the capsid 9-10 ms since they run on threads); this work runs meanwhile.
  void prepare() {
    const cudaStream_t st = stream_.get();
    prepare_start_.record(st);
    const pb::AtomArrays at = atoms_.view();
    charge_bins_ = charge_geometry();
    charge_lists_.emplace(pipeline::bin_atoms(ledger_, charge_bins_, at, st));
    charge_bins_.start = charge_lists_->start.get();
    charge_bins_.atoms = charge_lists_->atoms.get();
    const pb::CodedOperator top = pb::coded_operator(n_, codes_.get(), table(), in_.mass);
    PbMgRun run = in_.run;
    run.device = part_.device;
    solver_.emplace(ledger_, run, st);
    solver_->shape(top, part_.levels, part_.level_count);  // the coarse operators: Slabs::build_operators
    charges_into(solver_->z());                            // the charges pass through z, zeroed after
    prepare_end_.record(st);
  }

  /// This slab's face values from the whole grid's, then b (after prepare; waits). Device seconds of both.
  double assemble(const std::vector<double>& whole_faces) {
    if (!solver_) throw Error("internal error: a PB slab assembled before it was prepared");
    const cudaStream_t st = stream_.get();
    Event e0, e1;
    e0.record(st);
    std::vector<double> faces(static_cast<std::size_t>(pb::face_node_count(n_)));
    pb::slab_face_values(whole_faces.data(), in_.n[2], n_, lo_, faces.data());
    faces_ = Tracked<double>(ledger_, faces.size(), "PB boundary values (faces)");
    ESPGRID_CUDA_CHECK(
        cudaMemcpyAsync(faces_.get(), faces.data(), faces.size() * sizeof(double), cudaMemcpyHostToDevice, st));
    rhs_from(solver_->z(), solver_->r());
    ESPGRID_CUDA_CHECK(
        cudaMemsetAsync(solver_->z(), 0, static_cast<std::size_t>(solver_->size()) * sizeof(double), st));
    e1.record(st);
    ESPGRID_CUDA_CHECK(cudaStreamSynchronize(st));
    return seconds_between(prepare_start_, prepare_end_) + seconds_between(e0, e1);
  }

  /// z = b and p = the charges again, for the outputs (u holds the solution; r, z, p, q are free).
  void recompute_rhs() {
    charges_into(solver_->p());
    rhs_from(solver_->p(), solver_->z());
  }

  /// q = φ·q at every node (APBS's spl2 fixed-charge energy), p holding the charges.
  void charge_potential() {
    Solver<Real>& s = *solver_;
    charge_potential_kernel<<<blocks_for(s.size()), kThreads, 0, stream_.get()>>>(grid(), faces_.get(), s.u(), s.p(),
                                                                                  s.q());
    ESPGRID_CUDA_CHECK_LAUNCH();
  }

  /// φ·scale (faces from the face values) into `scratch`, then its own planes to `host` (the map's
  /// planes from `host_first_plane` on: the whole map, or across ranks this rank's planes alone).
  /// With `landed`, copied in runs of planes, `landed(first, count)` called (whole-grid plane numbers)
  /// as each run is in `host`, so that the map's file is written beside the copies: the copy is then
  /// done on return, else queued.
  template <class T>
  void copy_map(double scale, T* scratch, T* host, long host_first_plane,
                const std::function<void(long, long)>& landed = nullptr) {
    Solver<Real>& s = *solver_;
    const cudaStream_t st = stream_.get();
    combine_kernel<T><<<blocks_for(s.size()), kThreads, 0, st>>>(grid(), faces_.get(), s.u(), scale, scratch);
    ESPGRID_CUDA_CHECK_LAUNCH();
    const std::size_t plane = static_cast<std::size_t>(plane_size());
    const long own = part_.end_plane - part_.first_plane;
    // At most 128 MB and a quarter of the slab, so that the first run lands early on a map of any size
    // (a run of 64 MB or more goes to the disk directly, OutputFile::kDirectBytes: the capsid's 8 runs).
    constexpr std::size_t kRunBytes = std::size_t{128} << 20;
    const long run_planes =
        landed ? std::max(1L, std::min(static_cast<long>(kRunBytes / (plane * sizeof(T))), (own + 3) / 4)) : own;
    const Event copied(cudaEventDisableTiming);
    for (long first = 0; first < own; first += run_planes) {
      const long count = std::min(run_planes, own - first);
      ESPGRID_CUDA_CHECK(
          cudaMemcpyAsync(host + plane * static_cast<std::size_t>(part_.first_plane + first - host_first_plane),
                          scratch + plane * static_cast<std::size_t>(own_first_local() + first),
                          plane * static_cast<std::size_t>(count) * sizeof(T), cudaMemcpyDeviceToHost, st));
      if (!landed) continue;
      // Handed on before the next run is queued: a copy into pageable memory (the map's) returns only
      // once it is done, so runs queued first would all land together at the end.
      copied.record(st);
      copied.synchronize();
      landed(part_.first_plane + first, count);
    }
  }

 private:
  Grid grid() const { return Grid{{n_[0], n_[1], n_[2]}}; }

  /// The surface's bytes: this slab's planes and a neighbour on each side (hold_planes_around).
  pb::SurfaceBytes byte_window() const {
    pb::SurfaceBytes g;
    for (int d = 0; d < 3; ++d) {
      g.n[d] = in_.n[d];
      g.origin[d] = in_.origin[d];
      g.h[d] = in_.spacing[d];
    }
    g.hold_planes_around(lo_, n_[2]);
    return g;
  }

  /// Each atom's open SAS points are counted by the slab whose planes its height falls in.
  pipeline::CountedHeights counted_heights() const {
    const double inf = std::numeric_limits<double>::infinity();
    const double h = in_.spacing[2], z0 = in_.origin[2];
    return {first_ ? -inf : z0 + h * static_cast<double>(part_.first_plane),
            last_ ? inf : z0 + h * static_cast<double>(part_.end_plane)};
  }

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

  /// The charges spread to the nodes into `scratch`.
  void charges_into(double* scratch) {
    pipeline::gather_charges(charge_bins_, atoms_.view(), lo_, n_[2], scratch, stream_.get());
  }

  /// b into `b` from the gathered charges in `charge` and the face values.
  void rhs_from(const double* charge, double* b) {
    rhs_kernel<<<blocks_for(solver_->size()), kThreads, 0, stream_.get()>>>(solver_->top(), in_.zmagic, charge,
                                                                            faces_.get(), b);
    ESPGRID_CUDA_CHECK_LAUNCH();
  }

  const PbPipelineInput& in_;
  PbPipelineSlab part_;
  bool first_, last_;
  long lo_ = 0;
  long n_[3] = {0, 0, 0};
  Ledger ledger_;
  pipeline::DeviceAtoms atoms_;
  Tracked<std::uint32_t> codes_;
  Tracked<double> faces_, table_;
  pb::ChargeBins charge_bins_;
  std::optional<pipeline::Bins> charge_lists_;
  std::optional<Solver<Real>> solver_;
  Event prepare_start_, prepare_end_;  // prepare's work (before the stream: recorded on it)
  Stream stream_;
};

/// Deletes a slab with its device current (its buffers and stream are that device's).
struct SlabDeleter {
  template <class Real>
  void operator()(Slab<Real>* s) const noexcept {
    int previous = -1;
    cudaGetDevice(&previous);
    cudaSetDevice(s->device());
    delete s;
    if (previous >= 0) cudaSetDevice(previous);
  }
};

/// One run over the slabs: each slab's inputs (on threads of their own when there are several),
/// one CG over them, the map's planes from each.
template <class Real>
class PipelineRun {
 public:
  PipelineRun(const PbPipelineInput& in, PbPipelineResult& out) : in_(in), out_(out) {
    // Across ranks this process's one slab is the rank's: the first and last are the ends of the grid.
    const int index = in.ranks ? in.ranks->rank : 0, count = in.ranks ? in.ranks->ranks : in.slab_count;
    for (int s = 0; s < in.slab_count; ++s) {
      const DeviceGuard guard(in.slabs[s].device);
      slabs_.emplace_back(new Slab<Real>(in, in.slabs[s], index + s == 0, index + s == count - 1));
    }
    for (const auto& a : slabs_)
      for (const auto& b : slabs_)
        if (a->device() != b->device()) enable_peer_access_once(a->device(), b->device());
  }

  void run() {
    std::vector<double> inputs(slabs_.size()), surface(slabs_.size()), assemble(slabs_.size());
    std::vector<std::size_t> pairs(slabs_.size()), open(slabs_.size());
    for_each_slab([&](Slab<Real>& s, std::size_t i) { s.build_surface(inputs[i], surface[i], pairs[i], open[i]); });
    trace_process("PB pipeline: surface built");
    // Queued: runs while the boundary's last host steps end (the capsid on an H200, 2026-11-29: the
    // device call 852-876 -> 832-865 ms, interleaved; benchmarks/NOTES.md).
    for_each_slab([](Slab<Real>& s, std::size_t) { s.prepare(); });
    trace_process("PB pipeline: the solver's inputs queued (all but the boundary)");
    // The boundary values (the direct sum on another thread has overlapped the surface's kernels).
    const Stopwatch waiting;
    const std::vector<double> faces = in_.faces();
    out_.faces_wait_seconds = waiting.seconds();
    trace_process("PB pipeline: boundary values here");
    const long face_count = pb::face_node_count(in_.n);
    if (faces.size() != static_cast<std::size_t>(face_count))
      throw Error("internal error: the PB pipeline got " + std::to_string(faces.size()) + " boundary values for " +
                  std::to_string(face_count) + " face nodes");
    for_each_slab([&](Slab<Real>& s, std::size_t i) { assemble[i] = s.assemble(faces); });
    if (in_.ranks && !in_.ranks->all_ready(false))  // the steps below are collective
      throw Error("the PB solve stopped: another MPI rank failed before its solve");
    std::vector<Solver<Real>*> solvers;
    for (auto& s : slabs_) solvers.push_back(&s->solver());
    Slabs<Real> cg(solvers.data(), static_cast<int>(solvers.size()), in_.ranks);
    const Stopwatch operators_clock;
    cg.build_operators();
    for (auto& s : slabs_) {
      ESPGRID_CUDA_CHECK(cudaSetDevice(s->device()));
      ESPGRID_CUDA_CHECK(cudaStreamSynchronize(s->stream()));
    }
    const double operators_seconds = operators_clock.seconds();
    const Stopwatch solve_clock;
    out_.iterations = cg.solve(in_.run.tolerance, in_.run.max_iterations, out_.own_residual);
    out_.solve_seconds = solve_clock.seconds();
    trace_process("PB pipeline: solved");
    outputs(cg);
    trace_process("PB pipeline: outputs copied");
    for (std::size_t i = 0; i < slabs_.size(); ++i) {
      out_.neighbour_pairs += pairs[i];
      out_.sas_points += open[i];
      out_.peak_bytes = std::max(out_.peak_bytes, slabs_[i]->peak_bytes());
    }
    if (in_.ranks) {  // every rank's, on every rank
      out_.sas_points = static_cast<std::size_t>(total_over_ranks(static_cast<double>(out_.sas_points), false));
      out_.peak_bytes = static_cast<std::size_t>(total_over_ranks(static_cast<double>(out_.peak_bytes), true));
    }
    out_.inputs_seconds = *std::max_element(inputs.begin(), inputs.end());
    out_.surface_seconds = *std::max_element(surface.begin(), surface.end());
    out_.assemble_seconds = *std::max_element(assemble.begin(), assemble.end()) + operators_seconds;
  }

 private:
  /// f(slab, index) with the slab's device current: in turn for one slab, else one thread each.
  template <class F>
  void for_each_slab(F&& f) {
    if (slabs_.size() == 1) return f(*slabs_[0], 0);
    std::vector<std::future<void>> done;
    for (std::size_t i = 0; i < slabs_.size(); ++i)
      done.push_back(std::async(std::launch::async, [&, i] {
        const DeviceGuard guard(slabs_[i]->device());
        f(*slabs_[i], i);
      }));
    for (auto& d : done) d.wait();
    for (auto& d : done) d.get();  // the first slab's error, after every thread has finished
  }

  /// The sum (or the largest) of every rank's `value` (collective).
  double total_over_ranks(double value, bool largest) const {
    const std::vector<double> all = in_.ranks->every_value(value);
    double out = all[0];
    for (std::size_t r = 1; r < all.size(); ++r) out = largest ? std::max(out, all[r]) : out + all[r];
    return out;
  }

  /// The recomputed residual, the energy, φ in double and the map, each in a vector the solve no
  /// longer needs (u holds the solution; r, z, p, q are free).
  void outputs(Slabs<Real>& cg) {
    using Vector = typename Slabs<Real>::Vector;
    const Stopwatch wall;
    cg.exchange_top(Vector::u);  // the true residual reads the neighbours' u across each cut
    for (auto& s : slabs_) {
      ESPGRID_CUDA_CHECK(cudaSetDevice(s->device()));
      s->recompute_rhs();  // z = b, p = the charges
      s->solver().residual(s->solver().u(), s->solver().z(), s->solver().q());
    }
    const double rr = cg.dot(Vector::q, Vector::q);
    const double bb = cg.dot(Vector::z, Vector::z);
    out_.relative_residual = bb > 0 ? std::sqrt(rr / bb) : std::sqrt(rr);
    if (in_.fixed_charge_energy) {
      for (auto& s : slabs_) {
        ESPGRID_CUDA_CHECK(cudaSetDevice(s->device()));
        s->charge_potential();
      }
      out_.fixed_charge = cg.sum(Vector::q);
    }
    float* values = nullptr;
    double* potential = nullptr;
    std::tie(values, potential) = in_.output_buffers();
    if (!values) throw Error("internal error: the PB pipeline was given no buffer for the map");
    if (potential && in_.ranks) throw Error("internal error: φ in double is not gathered across ranks");
    // The map's planes are handed on as they land (one process: across ranks rank 0 gathers them after).
    std::function<void(long, long)> landed;
    if (in_.planes_copied && !in_.ranks)
      landed = [this](long first, long count) { in_.planes_copied(out_, first, count); };
    for_each_slab([&](Slab<Real>& s, std::size_t) {
      if (potential) s.template copy_map<double>(1.0, s.solver().q(), potential, 0);
      s.template copy_map<float>(in_.unit_scale, reinterpret_cast<float*>(s.solver().r()), values, in_.host_first_plane,
                                 landed);
      ESPGRID_CUDA_CHECK(cudaStreamSynchronize(s.stream()));
    });
    if (in_.ranks) {  // rank 0 takes the others' planes into its map (theirs hold their planes alone)
      const PbPipelineSlab& own = in_.slabs[0];
      in_.ranks->gather_map(values, own.first_plane, own.end_plane, in_.n[0] * in_.n[1]);
    }
    out_.output_seconds = wall.seconds();
  }

  const PbPipelineInput& in_;
  PbPipelineResult& out_;
  std::vector<std::unique_ptr<Slab<Real>, SlabDeleter>> slabs_;
};

}  // namespace

void run_pb_pipeline(const PbPipelineInput& in, PbPipelineResult& out) {
  if (in.slab_count < 1 || !in.slabs) throw Error("internal error: the PB pipeline needs at least one slab");
  for (int s = 0; s < in.slab_count; ++s)
    if (in.slabs[s].level_count < 1 || in.slabs[s].end_plane - in.slabs[s].first_plane < 1 ||
        (s > 0 && in.slabs[s].first_plane != in.slabs[s - 1].end_plane))
      throw Error("internal error: the PB pipeline's slabs do not cover the grid's planes in order");
  if (in.ranks && in.slab_count != 1) throw Error("internal error: a PB grid split over ranks holds one slab a rank");
  if (!in.ranks && (in.slabs[0].first_plane != 0 || in.slabs[in.slab_count - 1].end_plane != in.n[2]))
    throw Error("internal error: the PB pipeline's slabs do not cover the grid's planes");
  if (!in.faces || !in.output_buffers || !in.conductances)
    throw Error("internal error: the PB pipeline's inputs are missing");
  const Stopwatch wall;
  const DeviceGuard guard(in.slabs[0].device);
  std::vector<int> devices;
  for (int s = 0; s < in.slab_count; ++s)
    if (std::find(devices.begin(), devices.end(), in.slabs[s].device) == devices.end())
      devices.push_back(in.slabs[s].device);
  // With a workspace every buffer comes from and returns to its pool: declared before the run.
  const bool pooled = in.workspace && in.slab_count == 1;
  const std::unique_lock<std::mutex> one_solve =
      pooled ? std::unique_lock<std::mutex>(in.workspace->mutex()) : std::unique_lock<std::mutex>();
  const DevicePoolScope pool(pooled ? &in.workspace->pool() : nullptr);
  out.device = describe_device(devices[0]);
  if (in.ranks)
    out.device = std::to_string(in.ranks->ranks) + " MPI ranks, a slab each on its own device (rank " +
                 std::to_string(in.ranks->rank) + "'s: " + out.device + ")";
  else if (in.slab_count > 1)
    out.device = std::to_string(in.slab_count) + " slabs on " +
                 (devices.size() == 1 ? "one device, " : std::to_string(devices.size()) + " devices, the first ") +
                 out.device;
  out.float_cycle = pb_float_cycle();
  if (out.float_cycle)
    PipelineRun<float>(in, out).run();
  else
    PipelineRun<double>(in, out).run();
  out.wall_seconds = wall.seconds();
}

void pb_device_memory(int device, std::size_t& free_bytes, std::size_t& total_bytes) {
  const DeviceGuard guard(device);
  ESPGRID_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
}

std::size_t pb_device_total_memory(int device) {
  cudaDeviceProp properties{};
  ESPGRID_CUDA_CHECK(cudaGetDeviceProperties(&properties, device));  // a device query: no context
  return properties.totalGlobalMem;
}

}  // namespace espgrid::cuda
