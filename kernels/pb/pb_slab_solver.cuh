// The multigrid-preconditioned CG of kernels/pb/pb_lean_solver.cuh over the slabs of one grid split
// over devices by z-planes (kernels/pb/pb_pipeline.cu); one slab is that solver's arithmetic alone.
//
// A slab's level holds its planes and, at each cut, the neighbour's nearest plane (a halo). The
// cycle is the one-grid cycle: red-black half-sweeps are order-free within a colour, so a sweep on
// every slab followed by a halo exchange is the whole grid's sweep, node for node; restriction and
// prolongation read at most one plane across a cut (the halo); each slab computes its own planes'
// coarse operator and exchanges the halo planes. Coarse levels too thin to split (a slab with fewer
// than pb::kMinSlabLevelPlanes planes) are whole on every slab: each computes the planes it owns,
// gathers the others' (once for the operator, each cycle for the restricted residual), and every
// slab then runs the rest of the cycle on the whole level by itself, as one device would. Dot
// products are the slabs' sums, added in slab order. Halo copies go device to device (peer copies)
// on the receiving slab's stream after an event of the sending one, and every slab's stream then
// waits for all the exchange's copies (the sender's next sweep would write what they read); no host
// waits for them. Across MPI ranks (a pb::PbRankLink: one slab a rank, on the rank's device) the same
// planes go through page-locked host buffers and the link: the same cycle, node for node, and the
// same sums in the same order, so the ranks' map is the one-process slabs' map bit for bit.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory>
#include <type_traits>
#include <vector>

#include "kernels/cuda_runtime_support.h"
#include "kernels/pb/pb_lean_solver.cuh"
#include "src/core/switches.h"
#include "src/pb/pb_rank_link.h"

namespace espgrid::cuda::lean {

template <class Top, class Real>
class Slabs {
 public:
  using Slab = Solver<Top, Real>;
  using Levels = LevelArrays<Real>;

  /// The slabs in z order (their streams and devices are theirs). With a link of several ranks: this
  /// rank's one slab, the others' on theirs.
  Slabs(Slab* const* slabs, int count, const pb::PbRankLink* link = nullptr)
      : slabs_(slabs, slabs + count), link_(link && link->ranks > 1 ? link : nullptr), split_(count > 1 || link_) {
    if (link_ && count != 1) throw Error("internal error: a PB grid split over ranks holds one slab a rank");
    for (Slab* s : slabs_) {
      s->select();
      ready_.push_back(std::make_unique<Event>(cudaEventDisableTiming));
      copied_.push_back(std::make_unique<Event>(cudaEventDisableTiming));
    }
  }

  /// Every coarse level's operator (after each slab's shape()).
  void build_operators() {
    for (std::size_t l = 1; l < slabs_[0]->levels(); ++l) {
      each([&](Slab& s) { s.coarse_operator(l); });
      if (!split_) continue;
      for (int a = 0; a < 4; ++a) {
        std::vector<Real*> arrays;
        for (Slab* s : slabs_) arrays.push_back(s->operator_arrays(l)[static_cast<std::size_t>(a)]);
        share(l, arrays);
      }
    }
  }

  /// CG from u = 0 with the right-hand side in each slab's r(): pb_multigrid.cu's loop.
  int solve(double tolerance, int max_iterations, double& own_residual) {
    const double bnorm = std::sqrt(dot(Vector::r, Vector::r));
    if (bnorm == 0.0) {
      own_residual = 0.0;
      return 0;
    }
    precondition();
    each([](Slab& s) { s.first_direction(); });
    double rz = dot(Vector::r, Vector::z);
    double rnorm = bnorm;
    int it = 0;
    while (it < max_iterations && rnorm > tolerance * bnorm) {
      exchange_top(Vector::p);
      each([](Slab& s) { s.apply_direction(); });
      const double pq = dot(Vector::p, Vector::q);
      if (!(pq > 0.0)) throw Error("PB multigrid (CUDA): the operator is not positive definite");
      const double alpha = rz / pq;
      each([alpha](Slab& s) { s.update_solution(alpha); });
      ++it;
      rnorm = std::sqrt(dot(Vector::r, Vector::r));
      if (rnorm <= tolerance * bnorm) break;
      precondition();
      const double rz_new = dot(Vector::r, Vector::z);
      const double beta = rz_new / rz;
      rz = rz_new;
      each([beta](Slab& s) { s.update_direction(beta); });
    }
    own_residual = rnorm / bnorm;
    return it;
  }

  /// Level 0's vectors that cross the cuts: the CG's direction (before A p) and the solution (before
  /// the residual is recomputed from it).
  enum class Vector { u, r, z, p, q };
  void exchange_top(Vector v) {
    if (!split_) return;
    std::vector<double*> arrays;
    for (Slab* s : slabs_) arrays.push_back(pick(*s, v));
    exchange(0, arrays, 0, slabs_.size());
  }

  /// Σ over the slabs (slab order) of each slab's a·b, or of Σ a.
  double dot(Vector a, Vector b) { return reduce(a, b, true); }
  double sum(Vector a) { return reduce(a, a, false); }

 private:
  double reduce(Vector a, Vector b, bool product) {
    each([&](Slab& s) { s.dot_launch(pick(s, a), product ? pick(s, b) : nullptr); });
    std::vector<double> parts;
    for (Slab* s : slabs_) {
      s->select();
      parts.push_back(s->dot_fetch());
    }
    if (link_) parts = link_->every_value(parts[0]);  // every rank's, in rank order
    double sum = 0.0;
    for (std::size_t i = 0; i < parts.size(); ++i) sum = i == 0 ? parts[i] : sum + parts[i];
    return sum;
  }

  static double* pick(Slab& s, Vector v) {
    switch (v) {
      case Vector::u:
        return s.u();
      case Vector::r:
        return s.r();
      case Vector::z:
        return s.z();
      case Vector::p:
        return s.p();
      case Vector::q:
        return s.q();
    }
    return nullptr;
  }

  template <class F>
  void each(F&& f) {
    for (Slab* s : slabs_) {
      s->select();
      f(*s);
    }
  }

  /// z = M⁻¹ r: one V-cycle over every slab. One slab replays the cycle as a CUDA graph captured at
  /// its first use: ~250 launches a cycle (the coarsest level's 200 half-sweeps among them) cost
  /// more than their work on small grids (a trajectory's frames); the same kernels, the same bits.
  void precondition() {
    if (split_ || sync_check_enabled() || !cycle_graphs()) return whole_cycle();
    Slab& s = *slabs_[0];
    if (!cycle_.exec) {
      ESPGRID_CUDA_CHECK(cudaStreamBeginCapture(s.stream(), cudaStreamCaptureModeRelaxed));
      try {
        whole_cycle();
      } catch (...) {
        cudaGraph_t broken = nullptr;
        cudaStreamEndCapture(s.stream(), &broken);  // ends the capture; its error is the one thrown
        if (broken) cudaGraphDestroy(broken);
        throw;
      }
      ESPGRID_CUDA_CHECK(cudaStreamEndCapture(s.stream(), &cycle_.graph));
      ESPGRID_CUDA_CHECK(cudaGraphInstantiate(&cycle_.exec, cycle_.graph, 0));
    }
    ESPGRID_CUDA_CHECK(cudaGraphLaunch(cycle_.exec, s.stream()));
  }

  /// The cycle from CG's r to its z: r into the cycle's storage, the V-cycle, its x out into z.
  void whole_cycle() {
    each([](Slab& s) { s.cycle_in(); });
    v_cycle(0, slabs_.size(), 0, split_);
    each([](Slab& s) { s.cycle_out(); });
  }

  /// ESPGRID_PB_GRAPH=0 launches every cycle's kernels one by one (for measuring what the graph saves).
  static bool cycle_graphs() {
    static const bool on = !switched_off("ESPGRID_PB_GRAPH");
    return on;
  }

  /// A captured V-cycle, destroyed with the Slabs (before the solvers whose buffers it names).
  struct CycleGraph {
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    CycleGraph() = default;
    CycleGraph(const CycleGraph&) = delete;
    CycleGraph& operator=(const CycleGraph&) = delete;
    ~CycleGraph() {
      if (exec) cudaGraphExecDestroy(exec);
      if (graph) cudaGraphDestroy(graph);
    }
  };

  /// The V-cycle from level l on slabs first .. first + count − 1: `split`, a level split over them (and
  /// over the ranks); else one slab's whole level, which it runs by itself.
  void v_cycle(std::size_t first, std::size_t count, std::size_t l, bool split) {
    const auto on = [&](auto&& f) {
      for (std::size_t i = first; i < first + count; ++i) {
        slabs_[i]->select();
        f(*slabs_[i]);
      }
    };
    const auto sweep = [&](int color) {
      on([&](Slab& s) { s.half_sweep(l, color); });
      if (split) exchange(l, level_x(l), first, count);
    };
    on([&](Slab& s) { s.zero(l); });
    const PbMgRun& run = slabs_[first]->run();
    if (l + 1 == slabs_[first]->levels()) {
      if (!split && slabs_[first]->coarsest_sweeps(l, run.coarsest_sweeps)) return;
      for (int s = 0; s < run.coarsest_sweeps; ++s) {
        sweep(0);
        sweep(1);
        sweep(1);
        sweep(0);
      }
      return;
    }
    for (int s = 0; s < run.smoothing; ++s) {
      sweep(0);
      sweep(1);
    }
    on([&](Slab& s) { s.level_residual(l); });
    if (split) exchange(l, level_r(l), first, count);  // restriction reads a plane across each cut
    on([&](Slab& s) { s.restrict_down(l); });
    const PbMgSpan below = slabs_[first]->level(l + 1).span;
    if (split && below == PbMgSpan::Gathered) share(l + 1, level_b(l + 1));
    if (split && below != PbMgSpan::Slab)
      for (std::size_t i = first; i < first + count; ++i) v_cycle(i, 1, l + 1, false);  // the whole level on each
    else
      v_cycle(first, count, l + 1, split);
    on([&](Slab& s) { s.prolong_up(l); });
    for (int s = 0; s < run.smoothing; ++s) {
      sweep(1);
      sweep(0);
    }
  }

  std::vector<Real*> level_x(std::size_t l) { return arrays_of(l, 0); }
  std::vector<Real*> level_r(std::size_t l) { return arrays_of(l, 2); }
  std::vector<Real*> level_b(std::size_t l) { return arrays_of(l, 1); }
  std::vector<Real*> arrays_of(std::size_t l, int which) {
    std::vector<Real*> out;
    for (Slab* s : slabs_) {
      const Levels a = s->level(l);
      out.push_back(which == 0 ? a.x : which == 1 ? a.b : a.r);
    }
    return out;
  }

  /// Level l's arrays made whole across the slabs: halo planes exchanged (a split level) or each
  /// slab's own planes copied to every other (a gathered level); nothing for a whole level.
  void share(std::size_t l, const std::vector<Real*>& arrays) {
    const PbMgSpan span = slabs_[0]->level(l).span;
    if (span == PbMgSpan::Slab) exchange(l, arrays, 0, slabs_.size());
    if (span == PbMgSpan::Gathered) gather(l, arrays);
  }

  /// The halo planes of level l's `arrays` (CG's double or the cycle's Real) on slabs first .. first +
  /// count − 1: at each cut the lower slab's last own plane to the upper's halo, and the upper's first
  /// own plane to the lower's.
  template <class T>
  void exchange(std::size_t l, const std::vector<T*>& arrays, std::size_t first, std::size_t count) {
    if (link_) return exchange_across_ranks(l, arrays[0]);
    record(first, count);
    for (std::size_t c = first; c + 1 < first + count; ++c) {
      Slab& below = *slabs_[c];
      const Levels lb = below.level(l);
      const long plane = lb.n[0] * lb.n[1];
      const std::size_t bytes = static_cast<std::size_t>(plane) * sizeof(T);
      copy(c + 1, arrays[c + 1], c, arrays[c] + plane * (lb.n[2] - 2), bytes);
      copy(c, arrays[c] + plane * (lb.n[2] - 1), c + 1, arrays[c + 1] + plane * 1, bytes);
    }
    settle(first, count);
  }

  /// Each slab's own planes of a whole level's `arrays` copied to every other slab.
  void gather(std::size_t l, const std::vector<Real*>& arrays) {
    if (link_) return gather_across_ranks(l, arrays[0]);
    record(0, slabs_.size());
    for (std::size_t from = 0; from < slabs_.size(); ++from) {
      const Levels a = slabs_[from]->level(l);
      const long plane = a.n[0] * a.n[1];
      const std::size_t bytes = static_cast<std::size_t>(plane * (a.own_end - a.own_begin)) * sizeof(Real);
      if (bytes == 0) continue;
      for (std::size_t to = 0; to < slabs_.size(); ++to)
        if (to != from) copy(to, arrays[to] + plane * a.own_begin, from, arrays[from] + plane * a.own_begin, bytes);
    }
    settle(0, slabs_.size());
  }

  /// exchange() with the neighbouring ranks: this slab's first and last own planes (1 and n − 2) out, the
  /// neighbours' into its halo planes (0 and n − 1), through page-locked buffers. The stream's copies in
  /// are queued before its next kernels, and the host waits for the copies out before the link runs,
  /// which also means the previous exchange's copies in have read the buffers the link refills.
  template <class T>
  void exchange_across_ranks(std::size_t l, T* array) {
    Slab& s = *slabs_[0];
    const Levels a = s.level(l);
    const std::size_t plane = static_cast<std::size_t>(a.n[0] * a.n[1]), bytes = plane * sizeof(T);
    const bool lower = link_->rank > 0, upper = link_->rank + 1 < link_->ranks;
    T* staging = host_staging<T>(4 * plane);
    T *to_lower = staging, *from_lower = staging + plane, *to_upper = staging + 2 * plane,
      *from_upper = staging + 3 * plane;
    const cudaStream_t st = s.stream();
    T* const halo_low = array;
    T* const halo_high = array + plane * static_cast<std::size_t>(a.n[2] - 1);
    if (lower) ESPGRID_CUDA_CHECK(cudaMemcpyAsync(to_lower, array + plane, bytes, cudaMemcpyDeviceToHost, st));
    if (upper) ESPGRID_CUDA_CHECK(cudaMemcpyAsync(to_upper, halo_high - plane, bytes, cudaMemcpyDeviceToHost, st));
    ESPGRID_CUDA_CHECK(cudaStreamSynchronize(st));
    if constexpr (std::is_same_v<T, double>) {
      link_->swap_with_neighbours(to_lower, from_lower, to_upper, from_upper, plane);
    } else {  // the link carries doubles: the cycle's float planes widened there and rounded back, exactly
      link_wide_.resize(4 * plane);
      double* w = link_wide_.data();
      if (lower) std::copy(to_lower, to_lower + plane, w);
      if (upper) std::copy(to_upper, to_upper + plane, w + 2 * plane);
      link_->swap_with_neighbours(w, w + plane, w + 2 * plane, w + 3 * plane, plane);
      if (lower) std::transform(w + plane, w + 2 * plane, from_lower, [](double v) { return static_cast<T>(v); });
      if (upper) std::transform(w + 3 * plane, w + 4 * plane, from_upper, [](double v) { return static_cast<T>(v); });
    }
    if (lower) ESPGRID_CUDA_CHECK(cudaMemcpyAsync(halo_low, from_lower, bytes, cudaMemcpyHostToDevice, st));
    if (upper) ESPGRID_CUDA_CHECK(cudaMemcpyAsync(halo_high, from_upper, bytes, cudaMemcpyHostToDevice, st));
  }

  /// gather() across the ranks: this slab's own planes of the whole level out, every rank's back in.
  void gather_across_ranks(std::size_t l, Real* array) {
    Slab& s = *slabs_[0];
    const Levels a = s.level(l);
    const std::size_t plane = static_cast<std::size_t>(a.n[0] * a.n[1]);
    const std::size_t begin = plane * static_cast<std::size_t>(a.own_begin);
    const std::size_t count = plane * static_cast<std::size_t>(a.own_end - a.own_begin);
    const std::size_t whole = static_cast<std::size_t>(a.size);
    Real* staging = host_staging<Real>(whole);
    const cudaStream_t st = s.stream();
    if (count > 0)
      ESPGRID_CUDA_CHECK(
          cudaMemcpyAsync(staging + begin, array + begin, count * sizeof(Real), cudaMemcpyDeviceToHost, st));
    ESPGRID_CUDA_CHECK(cudaStreamSynchronize(st));
    if constexpr (std::is_same_v<Real, double>) {
      link_->share_parts(staging, begin, count);
    } else {  // widened for the link and rounded back, exactly
      link_wide_.assign(whole, 0.0);
      std::copy(staging + begin, staging + begin + count, link_wide_.begin() + static_cast<std::ptrdiff_t>(begin));
      link_->share_parts(link_wide_.data(), begin, count);
      std::transform(link_wide_.begin(), link_wide_.end(), staging, [](double v) { return static_cast<Real>(v); });
    }
    ESPGRID_CUDA_CHECK(cudaMemcpyAsync(array, staging, whole * sizeof(Real), cudaMemcpyHostToDevice, st));
  }

  /// At least `count` values of page-locked memory of type T (CG's double or the cycle's Real; grown as
  /// needed, kept for the solve). Growing waits for the stream, whose queued copies may still read the
  /// old buffer.
  template <class T>
  T* host_staging(std::size_t count) {
    PinnedBuffer<T>& buffer = staging<T>();
    if (buffer.size() < count) {
      ESPGRID_CUDA_CHECK(cudaStreamSynchronize(slabs_[0]->stream()));
      buffer = PinnedBuffer<T>(count, "PB halo staging (host)");
    }
    return buffer.get();
  }
  template <class T>
  PinnedBuffer<T>& staging() {
    if constexpr (std::is_same_v<T, double>)
      return staging_;
    else
      return cycle_staging_;
  }

  /// Marks every slab's queued work, for the copies that read it.
  void record(std::size_t first, std::size_t count) {
    for (std::size_t i = first; i < first + count; ++i) {
      slabs_[i]->select();
      ready_[i]->record(slabs_[i]->stream());
    }
  }

  /// A barrier after the copies: no slab's stream goes on (to write what another slab's copy reads)
  /// before every copy of the exchange has run.
  void settle(std::size_t first, std::size_t count) {
    for (std::size_t i = first; i < first + count; ++i) {
      slabs_[i]->select();
      copied_[i]->record(slabs_[i]->stream());
    }
    for (std::size_t i = first; i < first + count; ++i) {
      slabs_[i]->select();
      for (std::size_t j = first; j < first + count; ++j)
        if (j != i) ESPGRID_CUDA_CHECK(cudaStreamWaitEvent(slabs_[i]->stream(), copied_[j]->get(), 0));
    }
  }

  /// `bytes` from slab `from`'s `src` to slab `to`'s `dst`, on `to`'s stream after `from`'s mark.
  template <class T>
  void copy(std::size_t to, T* dst, std::size_t from, const T* src, std::size_t bytes) {
    Slab& t = *slabs_[to];
    t.select();
    ESPGRID_CUDA_CHECK(cudaStreamWaitEvent(t.stream(), ready_[from]->get(), 0));
    ESPGRID_CUDA_CHECK(cudaMemcpyPeerAsync(dst, t.run().device, src, slabs_[from]->run().device, bytes, t.stream()));
  }

  std::vector<Slab*> slabs_;
  const pb::PbRankLink* link_;  ///< the other ranks' slabs (null: every slab is here)
  bool split_;                  ///< the grid is split (over this process's slabs or the ranks)
  PinnedBuffer<double> staging_;
  PinnedBuffer<Real> cycle_staging_;  ///< the cycle's planes across ranks (unused where Real is double)
  std::vector<double> link_wide_;     ///< the cycle's float planes widened for the link
  CycleGraph cycle_;
  std::vector<std::unique_ptr<Event>> ready_, copied_;  ///< each slab's work before / copies of an exchange
};

}  // namespace espgrid::cuda::lean
