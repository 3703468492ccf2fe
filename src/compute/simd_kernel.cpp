// cpu-simd: the CPU kernel for machines without a GPU, written once with Google Highway and
// compiled for every x86-64 vector unit (SSE4, AVX2, AVX-512), the best one picked at run time
// (HWY_DYNAMIC_DISPATCH): one binary runs anywhere, no -march=native.
//
// Work: tasks of (plane, two rows, a chunk of up to kChunkVectors·kTileVectors vectors along x),
// handed out in plane order over one OpenMP region (compute/plane_tasks.h: whole planes reported in order).
// Each task forms every atom's offset from its own origin in double (x, and dy² + dz² + a² for
// each of its two rows, q, as float32: the rounding of the pair's own distances, not of the
// coordinates' size), then sweeps register tiles of 4 vectors × 2 rows over all atoms, in blocks
// of 256 atoms whose partial sums are added to the totals at the end of each block (blocked
// summation); a row's end takes a tile of fewer vectors (register_tile). Per pair: dx (1 SUB per vector,
// shared by both rows), r² (FMA), then the model's evaluator (src/physics/pair_potentials.h)
// on vectors through SimdMath: for Coulomb an approximate reciprocal square root (RSQRTPS, 12
// bits; RSQRT14 on AVX-512) and one Newton step (4 operations: to ~1e-7 relative, 2 ulp), q·f
// accumulated; the distance model the approximate reciprocal and a Newton step, the Debye model
// rsqrt and exp2_polynomial in vectors. Every model of PairModels is instantiated.
//
// ESPGRID_SIMD=avx2 (or sse4) caps the vector unit, for measuring a smaller machine on a larger one.

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "src/compute/plane_tasks.h"
#include "src/compute/simd_kernel.h"
#include "src/core/errors.h"
#include "src/core/stopwatch.h"

// Defined once, outside the per-target namespaces (foreach_target.h includes this file again
// for every target).
#ifndef ESPGRID_SIMD_KERNEL_ONCE
#define ESPGRID_SIMD_KERNEL_ONCE
namespace espgrid {
/// One thread's working memory: the atoms relative to its task's origin (float32) and a tile.
struct SimdScratch {
  std::vector<float> x, q;
  std::vector<float> dyz0, dyz1;  ///< dy² + dz² (+ softening²) of each atom for the task's two rows
  std::vector<float> lx, out;
  std::vector<float> mixed_x;  ///< x of each lane of the mixed vector (register_tile)
};
}  // namespace espgrid
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/compute/simd_kernel.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace espgrid {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

constexpr int kTileVectors = 4;  ///< register tile: 4 vectors along x
constexpr int kRows = 2;         ///< × 2 rows
constexpr int kChunkTiles = 4;   ///< register tiles along x per task (shares the per-task atom offsets)
constexpr std::size_t kAtomBlock = 256;  ///< atoms per partial sum (blocked summation)

using DF = hn::ScalableTag<float>;
using DI = hn::RebindToSigned<DF>;
using VF = hn::Vec<DF>;

/// 1/√x: the hardware estimate and one Newton step.
HWY_INLINE VF rsqrt(DF d, VF x) {
  const VF y = hn::ApproximateReciprocalSqrt(x);
  const VF half_x = hn::Mul(x, hn::Set(d, 0.5f));
  return hn::Mul(y, hn::NegMulAdd(half_x, hn::Mul(y, y), hn::Set(d, 1.5f)));
}

/// 1/x: the hardware estimate and one Newton step.
HWY_INLINE VF reciprocal(DF d, VF x) {
  const VF y = hn::ApproximateReciprocal(x);
  return hn::Mul(y, hn::NegMulAdd(x, y, hn::Set(d, 2.0f)));
}

/// exp2_polynomial (src/physics/pair_potentials.h) in vectors: the same steps.
HWY_INLINE VF exp2_vector(DF d, VF x) {
  const DI di;
  x = hn::Min(hn::Max(x, hn::Set(d, -127.0f)), hn::Zero(d));
  const VF round = hn::Set(d, 12582912.0f);
  const VF shifted = hn::Add(x, round);
  const VF f = hn::Sub(x, hn::Sub(shifted, round));
  VF p = hn::Set(d, 1.5252733804059841e-05f);
  p = hn::MulAdd(p, f, hn::Set(d, 1.5403530393381609e-04f));
  p = hn::MulAdd(p, f, hn::Set(d, 1.3333558146428443e-03f));
  p = hn::MulAdd(p, f, hn::Set(d, 9.6181291076284772e-03f));
  p = hn::MulAdd(p, f, hn::Set(d, 5.5504108664821580e-02f));
  p = hn::MulAdd(p, f, hn::Set(d, 2.4022650695910071e-01f));
  p = hn::MulAdd(p, f, hn::Set(d, 6.9314718055994531e-01f));
  p = hn::MulAdd(p, f, hn::Set(d, 1.0f));
  const auto bits = hn::Sub(hn::BitCast(di, shifted), hn::Set(di, 0x4B400000 - 127));
  return hn::Mul(p, hn::BitCast(d, hn::ShiftLeft<23>(bits)));
}

/// A vector of float lanes with the operators the pair evaluators are written in, so that
/// cpu-simd computes every model through the evaluator seam (Potential::term) instead of maths of
/// its own: a float converts to all lanes; +, −, × are Highway's.
struct Lanes {
  VF v;
  HWY_ATTR inline Lanes(VF x) : v(x) {}  // NOLINT(google-explicit-constructor): the evaluators mix them
  HWY_ATTR inline Lanes(float x) : v(hn::Set(DF(), x)) {}  // NOLINT(google-explicit-constructor)
  friend HWY_ATTR inline Lanes operator*(Lanes a, Lanes b) { return hn::Mul(a.v, b.v); }
  friend HWY_ATTR inline Lanes operator+(Lanes a, Lanes b) { return hn::Add(a.v, b.v); }
  friend HWY_ATTR inline Lanes operator-(Lanes a, Lanes b) { return hn::Sub(a.v, b.v); }
};

/// The evaluators' Math policy on vectors: the hardware estimates each refined by one Newton
/// step (rsqrt and reciprocal to ~1e-7 relative, 2 ulp) and exp2_polynomial in lanes. Plain
/// inline, not always_inline: the evaluator's term is compiled without this target's
/// attributes, so these are inlined only once term itself is inlined into the tile loop (an
/// always_inline here would be refused inside term: "target specific option mismatch").
struct SimdMath {
  static HWY_ATTR inline Lanes rsqrt(Lanes x) { return espgrid::HWY_NAMESPACE::rsqrt(DF(), x.v); }
  static HWY_ATTR inline Lanes over_sqrt(Lanes q, Lanes r2) { return hn::Mul(q.v, rsqrt(r2).v); }
  static HWY_ATTR inline Lanes over(Lanes q, Lanes r2) { return hn::Mul(q.v, reciprocal(DF(), r2.v)); }
  static HWY_ATTR inline Lanes exp2(Lanes x) { return exp2_vector(DF(), x.v); }
};

/// q·f(r) from r² for the model: its evaluator on lanes.
template <class Potential>
HWY_INLINE VF pair_term(VF q, VF r2, const PairParameters& pair) {
  return Potential::template term<SimdMath, Lanes>(Lanes(q), Lanes(r2), pair).v;
}

/// One register tile: V (0 to 4) vectors × 2 rows at local positions lx (per vector lane), and
/// with MIXED one vector more whose first e lanes are row 0's last e points and next e lanes row
/// 1's (e ≤ half the lanes; its own x per lane in mixed_x, the row by mask), over every atom in
/// blocks of kAtomBlock; row r's sums go to out + r·row_stride. A row's body takes V = 4; its end
/// takes as few vectors as hold it, with the same operations per point (so the same bits): a
/// 4-vector tile over the last few points of a row computed up to 3 vectors of nothing, a quarter
/// of the throughput at widths like 96 (FINDINGS, issue 24), and a row pair's 2·e last points in
/// one vector instead of two save one pair-vector in 2V + 2 (width 40 under AVX-512: 5 vectors,
/// not 6). One pass over the atoms for all of it: each pass pays the per-atom broadcasts again.
template <class Potential, int V, bool MIXED>
HWY_INLINE void register_tile(DF d, const SimdScratch& atoms, std::size_t n, const float* lx,
                              const PairParameters& pair, float* out, std::size_t row_stride, std::size_t e) {
  static_assert(V >= 0 && V <= kTileVectors && (V > 0 || MIXED), "0 to 4 vectors, and something to compute");
  const std::size_t lanes = hn::Lanes(d);
  const VF x0 = hn::LoadU(d, lx);
  const VF x1 = V >= 2 ? hn::LoadU(d, lx + lanes) : x0;
  const VF x2 = V >= 3 ? hn::LoadU(d, lx + 2 * lanes) : x0;
  const VF x3 = V >= 4 ? hn::LoadU(d, lx + 3 * lanes) : x0;
  const VF xm = MIXED ? hn::LoadU(d, atoms.mixed_x.data()) : x0;
  const auto row0_lanes = hn::FirstN(d, e);
  VF s00 = hn::Zero(d), s01 = hn::Zero(d), s02 = hn::Zero(d), s03 = hn::Zero(d), s10 = hn::Zero(d),
     s11 = hn::Zero(d), s12 = hn::Zero(d), s13 = hn::Zero(d), sm = hn::Zero(d);
  for (std::size_t base = 0; base < n; base += kAtomBlock) {
    const std::size_t end = std::min(n, base + kAtomBlock);
    VF p00 = hn::Zero(d), p01 = hn::Zero(d), p02 = hn::Zero(d), p03 = hn::Zero(d), p10 = hn::Zero(d),
       p11 = hn::Zero(d), p12 = hn::Zero(d), p13 = hn::Zero(d), pm = hn::Zero(d);
    for (std::size_t a = base; a < end; ++a) {
      const VF ax = hn::Set(d, atoms.x[a]);
      const VF q = hn::Set(d, atoms.q[a]);
      const VF dyz0 = hn::Set(d, atoms.dyz0[a]);
      const VF dyz1 = hn::Set(d, atoms.dyz1[a]);
      if constexpr (V >= 1) {
        const VF dx0 = hn::Sub(x0, ax);
        p00 = hn::Add(p00, pair_term<Potential>(q, hn::MulAdd(dx0, dx0, dyz0), pair));
        p10 = hn::Add(p10, pair_term<Potential>(q, hn::MulAdd(dx0, dx0, dyz1), pair));
      }
      if constexpr (V >= 2) {
        const VF dx1 = hn::Sub(x1, ax);
        p01 = hn::Add(p01, pair_term<Potential>(q, hn::MulAdd(dx1, dx1, dyz0), pair));
        p11 = hn::Add(p11, pair_term<Potential>(q, hn::MulAdd(dx1, dx1, dyz1), pair));
      }
      if constexpr (V >= 3) {
        const VF dx2 = hn::Sub(x2, ax);
        p02 = hn::Add(p02, pair_term<Potential>(q, hn::MulAdd(dx2, dx2, dyz0), pair));
        p12 = hn::Add(p12, pair_term<Potential>(q, hn::MulAdd(dx2, dx2, dyz1), pair));
      }
      if constexpr (V >= 4) {
        const VF dx3 = hn::Sub(x3, ax);
        p03 = hn::Add(p03, pair_term<Potential>(q, hn::MulAdd(dx3, dx3, dyz0), pair));
        p13 = hn::Add(p13, pair_term<Potential>(q, hn::MulAdd(dx3, dx3, dyz1), pair));
      }
      if constexpr (MIXED) {
        const VF dxm = hn::Sub(xm, ax);
        pm = hn::Add(pm, pair_term<Potential>(q, hn::MulAdd(dxm, dxm, hn::IfThenElse(row0_lanes, dyz0, dyz1)), pair));
      }
    }
    if constexpr (V >= 1) s00 = hn::Add(s00, p00), s10 = hn::Add(s10, p10);
    if constexpr (V >= 2) s01 = hn::Add(s01, p01), s11 = hn::Add(s11, p11);
    if constexpr (V >= 3) s02 = hn::Add(s02, p02), s12 = hn::Add(s12, p12);
    if constexpr (V >= 4) s03 = hn::Add(s03, p03), s13 = hn::Add(s13, p13);
    if constexpr (MIXED) sm = hn::Add(sm, pm);
  }
  if constexpr (V >= 1) hn::StoreU(s00, d, out), hn::StoreU(s10, d, out + row_stride);
  if constexpr (V >= 2) hn::StoreU(s01, d, out + lanes), hn::StoreU(s11, d, out + row_stride + lanes);
  if constexpr (V >= 3) hn::StoreU(s02, d, out + 2 * lanes), hn::StoreU(s12, d, out + row_stride + 2 * lanes);
  if constexpr (V >= 4) hn::StoreU(s03, d, out + 3 * lanes), hn::StoreU(s13, d, out + row_stride + 3 * lanes);
  if constexpr (MIXED) {
    float mixed[HWY_MAX_BYTES / sizeof(float)];
    hn::StoreU(sm, d, mixed);
    std::memcpy(out + V * lanes, mixed, sizeof(float) * e);
    std::memcpy(out + row_stride + V * lanes, mixed + e, sizeof(float) * e);
  }
}

/// Points along x per task for this target's vector width.
std::size_t SimdChunkPoints() { return kChunkTiles * kTileVectors * hn::Lanes(DF()); }

template <class Potential>
void simd_task(const DcsProblem& p, std::int64_t k, std::int64_t t, SimdScratch& s) {
  const DF d;
  const std::size_t lanes = hn::Lanes(d);
  const std::size_t tile_points = kTileVectors * lanes;
  const std::size_t chunk_points = kChunkTiles * tile_points;
  const std::int64_t chunks_x = (p.nx + static_cast<std::int64_t>(chunk_points) - 1) / static_cast<std::int64_t>(chunk_points);
  const double hx = p.hx64 > 0 ? p.hx64 : p.hx, hy = p.hy64 > 0 ? p.hy64 : p.hy, hz = p.hz64 > 0 ? p.hz64 : p.hz;
  const bool exact = p.x64 && p.y64 && p.z64;
  const double oz = static_cast<double>(p.z_offset + k) * hz;
  if (s.x.size() < p.atom_count) {
    s.x.resize(p.atom_count), s.q.resize(p.atom_count), s.dyz0.resize(p.atom_count), s.dyz1.resize(p.atom_count);
  }
  s.lx.resize(tile_points), s.out.resize(kRows * tile_points), s.mixed_x.resize(lanes);
  const std::int64_t j0 = (t / chunks_x) * 2;
  const std::int64_t i_chunk = (t % chunks_x) * static_cast<std::int64_t>(chunk_points);
  const double ox = static_cast<double>(i_chunk) * hx, oy = static_cast<double>(j0) * hy;
  // Each atom's dy² + dz² for both rows, once per task rather than in every tile's atom loop
  // (there it cost 2 subtractions, 2 FMAs and 2 broadcasts per atom and tile); one loop per
  // coordinate type, with no choice inside, so that the compiler vectorizes it (on a narrow grid
  // a task is one tile, and this loop, scalar, was a third of the task's time).
  const float ly1 = static_cast<float>(hy);  // row 1's y from the task's origin (row 0's is 0)
  const float softening2 = p.softening2;
  float* HWY_RESTRICT sx = s.x.data();
  float* HWY_RESTRICT sq = s.q.data();
  float* HWY_RESTRICT dyz0 = s.dyz0.data();
  float* HWY_RESTRICT dyz1 = s.dyz1.data();
  const auto offsets = [&](const auto* HWY_RESTRICT xs, const auto* HWY_RESTRICT ys, const auto* HWY_RESTRICT zs) {
    for (std::size_t a = 0; a < p.atom_count; ++a) {
      sx[a] = static_cast<float>(static_cast<double>(xs[a]) - ox);
      const float ay = static_cast<float>(static_cast<double>(ys[a]) - oy);
      const float dz = static_cast<float>(oz - static_cast<double>(zs[a]));
      const float dz2 = dz * dz + softening2;
      const float dy0 = 0.0f - ay, dy1 = ly1 - ay;
      dyz0[a] = dy0 * dy0 + dz2;
      dyz1[a] = dy1 * dy1 + dz2;
      sq[a] = p.q[a];
    }
  };
  if (exact) {
    offsets(p.x64, p.y64, p.z64);
  } else {
    offsets(p.x, p.y, p.z);
  }
  for (std::int64_t i0 = i_chunk; i0 < std::min<std::int64_t>(p.nx, i_chunk + static_cast<std::int64_t>(chunk_points));
       i0 += static_cast<std::int64_t>(tile_points)) {
    for (std::size_t c = 0; c < tile_points; ++c)
      s.lx[c] = static_cast<float>(static_cast<double>(i0 - i_chunk + static_cast<std::int64_t>(c)) * hx);
    const std::size_t width = static_cast<std::size_t>(std::min<std::int64_t>(static_cast<std::int64_t>(tile_points), p.nx - i0));
    // One pass over the atoms for these points (row r's sums at out + r·tile_points): `full`
    // whole vectors per row (4 in a row's body), and at a row's end the e points left of each
    // row in one mixed vector when 2e fit in it, else in one more vector per row.
    const std::size_t full = width / lanes, e = width % lanes;
    const bool mixed = e > 0 && 2 * e <= lanes;
    if (mixed) {
      for (std::size_t c = 0; c < lanes; ++c) s.mixed_x[c] = s.lx[full * lanes + (c < e ? c : (c < 2 * e ? c - e : 0))];
    }
    float* out = s.out.data();
    const std::size_t n = p.atom_count;
    const float* lx = s.lx.data();
    if (mixed) {  // full < 4, since e > 0
      if (full == 0) register_tile<Potential, 0, true>(d, s, n, lx, p.pair, out, tile_points, e);
      if (full == 1) register_tile<Potential, 1, true>(d, s, n, lx, p.pair, out, tile_points, e);
      if (full == 2) register_tile<Potential, 2, true>(d, s, n, lx, p.pair, out, tile_points, e);
      if (full == 3) register_tile<Potential, 3, true>(d, s, n, lx, p.pair, out, tile_points, e);
    } else {
      const std::size_t vectors = (width + lanes - 1) / lanes;
      if (vectors == 1) register_tile<Potential, 1, false>(d, s, n, lx, p.pair, out, tile_points, 0);
      if (vectors == 2) register_tile<Potential, 2, false>(d, s, n, lx, p.pair, out, tile_points, 0);
      if (vectors == 3) register_tile<Potential, 3, false>(d, s, n, lx, p.pair, out, tile_points, 0);
      if (vectors == 4) register_tile<Potential, 4, false>(d, s, n, lx, p.pair, out, tile_points, 0);
    }
    for (int r = 0; r < kRows && j0 + r < p.ny; ++r)
      std::memcpy(p.potential + static_cast<std::size_t>(i0 + p.nx * (j0 + r + p.ny * k)), s.out.data() + r * tile_points,
                  sizeof(float) * width);
  }
}

/// One task: plane k, rows 2·(t / chunks) and +1, chunk t % chunks along x. The OpenMP loop
/// over tasks lives outside the per-target code: clang 14 outlines an OpenMP region without the
/// target's attributes and then cannot lower its AVX2/AVX-512 vectors (a backend crash).
void SimdTask(const DcsProblem& p, std::int64_t k, std::int64_t t, SimdScratch* scratch) {
  with_pair_potential(p.model, [&](auto potential) { simd_task<decltype(potential)>(p, k, t, *scratch); });
}

/// The ceiling: independent chains of the Coulomb evaluation (FMA r², rsqrt estimate, Newton,
/// FMA accumulate) with no loads, on one core; returns evaluations done.
double SimdCeilingEvaluations(std::size_t iterations, float* sink) {
  const DF d;
  const std::size_t lanes = hn::Lanes(d);
  VF r[8], acc[8];
  for (int c = 0; c < 8; ++c) {
    r[c] = hn::Set(d, 1.0f + 0.01f * static_cast<float>(c));
    acc[c] = hn::Zero(d);
  }
  const VF q = hn::Set(d, 1e-3f), bump = hn::Set(d, 1e-7f);
  for (std::size_t it = 0; it < iterations; ++it) {
    for (int c = 0; c < 8; ++c) {
      const VF r2 = hn::MulAdd(r[c], r[c], bump);
      acc[c] = hn::MulAdd(q, rsqrt(d, r2), acc[c]);
      r[c] = hn::Add(r[c], bump);
    }
  }
  VF total = hn::Zero(d);
  for (int c = 0; c < 8; ++c) total = hn::Add(total, acc[c]);
  *sink = hn::GetLane(hn::SumOfLanes(d, total));
  return static_cast<double>(iterations) * 8.0 * static_cast<double>(lanes);
}

const char* SimdTargetName() { return hwy::TargetName(HWY_TARGET); }

}  // namespace HWY_NAMESPACE
}  // namespace espgrid
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace espgrid {
HWY_EXPORT(SimdChunkPoints);
HWY_EXPORT(SimdTask);
HWY_EXPORT(SimdCeilingEvaluations);
HWY_EXPORT(SimdTargetName);

namespace {

/// Applies ESPGRID_SIMD (sse4 | avx2 | avx512: the most capable unit to use) once.
void apply_simd_cap() {
  static const bool applied = [] {
    const char* cap = std::getenv("ESPGRID_SIMD");
    if (!cap || !*cap) return true;
    const std::string c(cap);
    std::int64_t disabled = 0;
    if (c == "avx2" || c == "sse4") disabled |= HWY_AVX3 | HWY_AVX3_DL;
    if (c == "sse4") disabled |= HWY_AVX2;
    if (c != "avx2" && c != "sse4" && c != "avx512")
      throw UsageError("ESPGRID_SIMD must be sse4, avx2 or avx512, got '" + c + "'");
    hwy::DisableTargets(disabled);
    return true;
  }();
  (void)applied;
}

}  // namespace

namespace cpu {

void simd(const DcsProblem& problem, int threads, const ProgressFn& progress) {
  apply_simd_cap();
  const auto chunk_points = static_cast<std::int64_t>(HWY_DYNAMIC_DISPATCH(SimdChunkPoints)());
  const std::int64_t tasks = ((problem.nx + chunk_points - 1) / chunk_points) * ((problem.ny + 1) / 2);
  // Per task: 2 rows of a chunk over every atom, after forming every atom's offset once.
  const double work = static_cast<double>(problem.nz * tasks) * static_cast<double>(problem.atom_count) *
                      (2.0 * static_cast<double>(chunk_points) + 4.0);
  run_plane_tasks<SimdScratch>(problem.nz, tasks, team_for(work, threads, problem.nz * tasks), progress,
                               [&](std::int64_t k, std::int64_t t, SimdScratch& scratch) {
                                 HWY_DYNAMIC_DISPATCH(SimdTask)(problem, k, t, &scratch);
                               });
}

std::string simd_target() {
  apply_simd_cap();
  return HWY_DYNAMIC_DISPATCH(SimdTargetName)();
}

SimdCeiling measure_simd_ceiling(int threads) {
  apply_simd_cap();
  const int team = threads > 0 ? threads : omp_get_max_threads();
  SimdCeiling out;
  out.target = simd_target();
  out.threads = team;
  // One core: warm up, then the median of 5 runs of ~20 ms.
  float sink = 0;
  std::vector<double> rates;
  for (int run = 0; run < 6; ++run) {
    const Stopwatch clock;
    const double evaluations = HWY_DYNAMIC_DISPATCH(SimdCeilingEvaluations)(std::size_t{1} << 20, &sink);
    if (run > 0) rates.push_back(evaluations / clock.seconds());
  }
  std::sort(rates.begin(), rates.end());
  out.per_core_evaluations_per_second = rates[rates.size() / 2];
  // Every core at once: after a barrier each thread times its own chains; the team's rate is
  // the sum of the threads' rates (they ran together), median of 5 runs after a warm-up (the
  // first parallel region also starts the threads).
  std::vector<double> team_rates;
  for (int run = 0; run < 6; ++run) {
    double rate = 0;
#pragma omp parallel num_threads(team) reduction(+ : rate)
    {
      float local = 0;
#pragma omp barrier
      const Stopwatch clock;
      const double evaluations = HWY_DYNAMIC_DISPATCH(SimdCeilingEvaluations)(std::size_t{1} << 20, &local);
      rate += evaluations / clock.seconds();
      (void)local;  // the dispatched call stores its chains there, so the work is not elided
    }
    if (run > 0) team_rates.push_back(rate);
  }
  std::sort(team_rates.begin(), team_rates.end());
  out.all_cores_evaluations_per_second = team_rates[team_rates.size() / 2];
  if (sink == 12345.0f) out.target += "";
  return out;
}

}  // namespace cpu
}  // namespace espgrid
#endif
