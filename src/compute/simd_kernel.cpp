// cpu-simd: the CPU kernel for machines without a GPU, written once with Google Highway and
// compiled for every x86-64 vector unit (SSE4, AVX2, AVX-512), the best one picked at run time
// (HWY_DYNAMIC_DISPATCH): one binary runs anywhere, no -march=native.
//
// Work: tasks of (plane, two rows, a chunk of up to kChunkTiles·kTileVectors vectors along x),
// handed out in plane order over one OpenMP region (compute/plane_tasks.h: whole planes reported
// in order); under AVX-512 a grid whose rows fit one tile gives a task 4 or 8 rows where they
// fill the vectors better (SimdTaskRows). Each task forms every atom's offset from its own origin
// in double (x, and dy² + dz² + a² for each of its rows, y from the row pair's first row, q, as
// float32: the rounding of the pair's own distances, not of the coordinates' size), then sweeps
// register tiles of 4 vectors × 2 rows over all atoms, in blocks of 256 atoms whose partial sums
// are added to the totals at the end of each block (blocked summation); a row's end takes a tile
// of fewer vectors, the last points of several rows sharing a vector (register_tile). Per pair: dx (1 SUB per vector,
// shared by both rows), r² (FMA), then the model's evaluator (src/physics/pair_potentials.h)
// on vectors through SimdMath: for Coulomb an approximate reciprocal square root (RSQRTPS, 12
// bits; RSQRT14 on AVX-512) and one Newton step (4 operations: to ~1e-7 relative, 2 ulp), q·f
// accumulated; the distance model the approximate reciprocal and a Newton step, the Debye model
// rsqrt and exp2_polynomial in vectors. Every model of PairModels is instantiated.
//
// ESPGRID_SIMD=avx2 (or sse4) caps the vector unit, for measuring a smaller machine on a larger one.
//
// Longer than 500 lines because Highway compiles this file once per vector unit
// (HWY_TARGET_INCLUDE re-includes it): the tile, the task loop and SimdMath must share it.

#include "src/compute/simd_kernel.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "src/compute/plane_tasks.h"
#include "src/core/errors.h"
#include "src/core/stopwatch.h"
#include "src/core/thread_count.h"

// Defined once, outside the per-target namespaces (foreach_target.h includes this file again
// for every target).
#ifndef ESPGRID_SIMD_KERNEL_ONCE
#define ESPGRID_SIMD_KERNEL_ONCE
namespace espgrid {
inline constexpr int kMaxTaskRows = 8;
/// One thread's working memory: the atoms relative to its task's origin (float32) and a tile.
struct SimdScratch {
  std::vector<float> x, q;
  std::vector<float> dyz[kMaxTaskRows];  ///< dy² + dz² (+ softening²) of each atom for each of the task's rows
  std::vector<float> lx, out;
  std::vector<float> mixed_x[2];  ///< x of each lane of the mixed vectors (register_tile)
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

constexpr int kTileVectors = 4;          ///< register tile: 4 vectors along x
constexpr int kChunkTiles = 4;           ///< register tiles along x per task (shares the per-task atom offsets)
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

/// Which register tiles exist: R rows (2, 4 or 8) × V whole vectors per row and M mixed vectors
/// (lane l of mixed vector m holds point l mod e of row m·R/M + l/e: the last e points of R/M
/// rows), at most kTileBudget pair-vectors an atom (the live set: R·V + M partial sums, the x
/// vectors, R + 2 broadcasts and the model's temporaries within AVX-512's 32 registers; the
/// 4 × 2 body tile is 8). Two rows' mixed vector needs M ≤ 1; V = 0 needs a mixed vector.
constexpr int kTileBudget = 9;
constexpr bool tile_exists(int rows, int vectors, int mixed) {
  if (rows != 2 && rows != 4 && rows != 8) return false;
  if (vectors < 0 || vectors > kTileVectors || mixed < 0 || mixed > (rows == 2 ? 1 : 2)) return false;
  return vectors + mixed > 0 && rows * vectors + mixed <= (rows == 2 ? kTileVectors * 2 : kTileBudget);
}

/// One register tile over every atom, in blocks of kAtomBlock: R rows × V whole vectors at local
/// positions lx (per vector lane), and M mixed vectors for the rows' last e points (e < lanes;
/// mixed vector m's x per lane in mixed_x[m], each lane's dy² + dz² picked by mask); row r's sums
/// go to out + r·row_stride. A row's body takes 2 rows × 4 vectors; its end as few vectors as hold
/// it, with the same operations per point (so the same bits): a 4-vector tile over the last few
/// points of a row computed up to 3 vectors of nothing (a quarter of the throughput at widths like
/// 96), and a row's last e points alone in a vector leave lanes − e idle: at widths 17 and 33 under
/// AVX-512 (one point left per row) two rows' mixed vector was 2 of 16 lanes, where 8 or 4 rows'
/// fill half or a quarter of it and share the atom's broadcasts among more vectors. One pass over
/// the atoms for all of it: each pass pays the per-atom broadcasts again.
template <class Potential, int R, int V, int M>
HWY_INLINE void register_tile(DF d, const SimdScratch& atoms, std::size_t n, const float* lx,
                              const PairParameters& pair, float* out, std::size_t row_stride, std::size_t e) {
  static_assert(tile_exists(R, V, M), "a tile of the kind tile_exists lists");
  constexpr int kRowsPerMixed = M > 0 ? R / M : 1;
  constexpr int kSums = R * V + M;
  const std::size_t lanes = hn::Lanes(d);
  VF x[V > 0 ? V : 1];
#pragma GCC unroll 8
  for (int v = 0; v < V; ++v) x[v] = hn::LoadU(d, lx + v * lanes);
  VF xm[M > 0 ? M : 1];
#pragma GCC unroll 8
  for (int m = 0; m < M; ++m) xm[m] = hn::LoadU(d, atoms.mixed_x[m].data());
  hn::Mask<DF> first_rows[kRowsPerMixed];  // lanes of a mixed vector's first i + 1 rows
#pragma GCC unroll 8
  for (int i = 0; i < kRowsPerMixed; ++i) first_rows[i] = hn::FirstN(d, static_cast<std::size_t>(i + 1) * e);
  const float* dyz[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) dyz[r] = atoms.dyz[r].data();
  VF sums[kSums];
#pragma GCC unroll 16
  for (int i = 0; i < kSums; ++i) sums[i] = hn::Zero(d);
  for (std::size_t base = 0; base < n; base += kAtomBlock) {
    const std::size_t end = std::min(n, base + kAtomBlock);
    VF partial[kSums];
#pragma GCC unroll 16
    for (int i = 0; i < kSums; ++i) partial[i] = hn::Zero(d);
    for (std::size_t a = base; a < end; ++a) {
      const VF ax = hn::Set(d, atoms.x[a]);
      const VF q = hn::Set(d, atoms.q[a]);
      VF row_dyz[R];
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) row_dyz[r] = hn::Set(d, dyz[r][a]);
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) {
        const VF dx = hn::Sub(x[v], ax);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r)
          partial[r * V + v] =
              hn::Add(partial[r * V + v], pair_term<Potential>(q, hn::MulAdd(dx, dx, row_dyz[r]), pair));
      }
#pragma GCC unroll 2
      for (int m = 0; m < M; ++m) {
        VF lane_dyz = row_dyz[m * kRowsPerMixed + kRowsPerMixed - 1];
#pragma GCC unroll 8
        for (int i = kRowsPerMixed - 2; i >= 0; --i)
          lane_dyz = hn::IfThenElse(first_rows[i], row_dyz[m * kRowsPerMixed + i], lane_dyz);
        const VF dx = hn::Sub(xm[m], ax);
        partial[R * V + m] = hn::Add(partial[R * V + m], pair_term<Potential>(q, hn::MulAdd(dx, dx, lane_dyz), pair));
      }
    }
#pragma GCC unroll 16
    for (int i = 0; i < kSums; ++i) sums[i] = hn::Add(sums[i], partial[i]);
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) hn::StoreU(sums[r * V + v], d, out + r * row_stride + v * lanes);
#pragma GCC unroll 2
  for (int m = 0; m < M; ++m) {
    float mixed[HWY_MAX_BYTES / sizeof(float)];
    hn::StoreU(sums[R * V + m], d, mixed);
    for (int i = 0; i < kRowsPerMixed; ++i)
      std::memcpy(out + static_cast<std::size_t>(m * kRowsPerMixed + i) * row_stride + V * lanes, mixed + i * e,
                  sizeof(float) * e);
  }
}

/// How a tile of `rows` rows covers `width` points a row: whole vectors, mixed vectors.
struct TileShape {
  int rows = 2, vectors = 0, mixed = 0;
};
inline TileShape tile_shape(int rows, std::size_t width, std::size_t lanes) {
  const auto full = static_cast<int>(width / lanes);
  const std::size_t e = width % lanes;
  if (e == 0) return {rows, full, 0};
  if (rows * e <= lanes) return {rows, full, 1};
  if (rows >= 4 && (rows / 2) * e <= lanes) return {rows, full, 2};
  return {rows, full + 1, 0};
}

/// Rows a task takes at this grid width: 2, unless the whole row fits one tile and 4 or 8 rows
/// fill the vectors better (or equally, with more vectors an atom to share its broadcasts) —
/// under AVX-512 only: its 32 registers hold the larger tiles' sums (AVX2's 16 do not).
int SimdTaskRows(std::int64_t nx) {
  const DF d;
  const std::size_t lanes = hn::Lanes(d);
  if (lanes < 16 || nx <= 0 || nx > static_cast<std::int64_t>(kTileVectors * lanes)) return 2;
  const auto width = static_cast<std::size_t>(nx);
  int best = 2;
  double best_fill = 0;
  int best_vectors = 0;
  for (const int rows : {2, 4, 8}) {
    bool exists = true;  // the last task of a plane may take fewer rows: those tiles must exist too
    for (int fewer = 2; fewer <= rows; fewer *= 2) {
      const TileShape t = tile_shape(fewer, width, lanes);
      exists = exists && tile_exists(t.rows, t.vectors, t.mixed);
    }
    if (!exists) continue;
    const TileShape t = tile_shape(rows, width, lanes);
    const int vectors = rows * t.vectors + t.mixed;
    const double fill = static_cast<double>(rows * width) / static_cast<double>(vectors * lanes);
    if (fill > best_fill || (fill == best_fill && vectors > best_vectors))
      best = rows, best_fill = fill, best_vectors = vectors;
  }
  return best;
}

/// Runs the tile of this shape (one that tile_exists lists) for the model.
template <class Potential>
HWY_INLINE void run_tile(const TileShape& shape, DF d, const SimdScratch& atoms, std::size_t n, const float* lx,
                         const PairParameters& pair, float* out, std::size_t row_stride, std::size_t e) {
  bool ran = false;
  const auto try_shape = [&](auto rows, auto vectors, auto mixed) HWY_ATTR {
    constexpr int kR = decltype(rows)::value, kV = decltype(vectors)::value, kM = decltype(mixed)::value;
    if constexpr (tile_exists(kR, kV, kM)) {
      if (!ran && shape.rows == kR && shape.vectors == kV && shape.mixed == kM) {
        register_tile<Potential, kR, kV, kM>(d, atoms, n, lx, pair, out, row_stride, e);
        ran = true;
      }
    }
  };
  const auto for_vectors_and_mixed = [&](auto rows) HWY_ATTR {
    [&]<int... V>(std::integer_sequence<int, V...>) HWY_ATTR {
      (try_shape(rows, std::integral_constant<int, V>{}, std::integral_constant<int, 0>{}), ...);
      (try_shape(rows, std::integral_constant<int, V>{}, std::integral_constant<int, 1>{}), ...);
      (try_shape(rows, std::integral_constant<int, V>{}, std::integral_constant<int, 2>{}), ...);
    }
    (std::make_integer_sequence<int, kTileVectors + 1>{});
  };
  for_vectors_and_mixed(std::integral_constant<int, 2>{});
  for_vectors_and_mixed(std::integral_constant<int, 4>{});
  for_vectors_and_mixed(std::integral_constant<int, 8>{});
  if (!ran)
    throw Error("cpu-simd: no register tile of " + std::to_string(shape.rows) + " rows x " +
                std::to_string(shape.vectors) + " vectors + " + std::to_string(shape.mixed) + " mixed");
}

/// Points along x per task for this target's vector width.
std::size_t SimdChunkPoints() { return kChunkTiles * kTileVectors * hn::Lanes(DF()); }

/// The smallest task height (2, 4 or 8 rows) that holds `rows` rows.
inline int task_height(std::int64_t rows) { return rows <= 2 ? 2 : (rows <= 4 ? 4 : 8); }

/// Task t of plane k: rows task_rows·(t / chunks) on (fewer at the plane's edge), chunk t % chunks
/// along x (one chunk when task_rows > 2: SimdTaskRows takes more rows only for one-tile rows).
template <class Potential>
void simd_task(const GridSumProblem& p, std::int64_t k, std::int64_t t, int task_rows, SimdScratch& s) {
  const DF d;
  const std::size_t lanes = hn::Lanes(d);
  const std::size_t tile_points = kTileVectors * lanes;
  const std::size_t chunk_points = kChunkTiles * tile_points;
  const std::int64_t chunks_x =
      (p.nx + static_cast<std::int64_t>(chunk_points) - 1) / static_cast<std::int64_t>(chunk_points);
  const double hx = p.hx64 > 0 ? p.hx64 : p.hx, hy = p.hy64 > 0 ? p.hy64 : p.hy, hz = p.hz64 > 0 ? p.hz64 : p.hz;
  const bool exact = p.x64 && p.y64 && p.z64;
  const double oz = static_cast<double>(p.z_offset + k) * hz;
  const std::int64_t j0 = (t / chunks_x) * task_rows;
  const int rows = std::min(task_rows, task_height(p.ny - j0));
  if (s.x.size() < p.atom_count) s.x.resize(p.atom_count), s.q.resize(p.atom_count);
  for (int r = 0; r < rows; ++r)
    if (s.dyz[r].size() < p.atom_count) s.dyz[r].resize(p.atom_count);
  s.lx.resize(tile_points), s.out.resize(static_cast<std::size_t>(rows) * tile_points);
  s.mixed_x[0].resize(lanes), s.mixed_x[1].resize(lanes);
  const std::int64_t i_chunk = (t % chunks_x) * static_cast<std::int64_t>(chunk_points);
  const double ox = static_cast<double>(i_chunk) * hx;
  // Each atom's x, and dy² + dz² for every row, once per task rather than in every tile's atom
  // loop (there it cost 2 subtractions, 2 FMAs and 2 broadcasts per atom, row pair and tile);
  // one loop per coordinate type and row pair, with no choice inside, so that the compiler
  // vectorizes it (on a narrow grid a task is one tile, and this loop, scalar, was a third of
  // the task's time). Each row pair (j, j + 1), j even, measures y from its own first row,
  // whatever the task's height: a point's bits never depend on how many rows its task took.
  const float ly1 = static_cast<float>(hy);  // a pair's second row's y from the pair's first (whose is 0)
  const float softening2 = p.softening2;
  const auto row_pair = [&](auto first_pair, const auto* HWY_RESTRICT xs, const auto* HWY_RESTRICT ys,
                            const auto* HWY_RESTRICT zs, double oy, float* HWY_RESTRICT dyz0,
                            float* HWY_RESTRICT dyz1) {
    float* HWY_RESTRICT sx = s.x.data();
    float* HWY_RESTRICT sq = s.q.data();
    for (std::size_t a = 0; a < p.atom_count; ++a) {
      if constexpr (decltype(first_pair)::value)
        sx[a] = static_cast<float>(static_cast<double>(xs[a]) - ox), sq[a] = p.q[a];
      const float ay = static_cast<float>(static_cast<double>(ys[a]) - oy);
      const float dz = static_cast<float>(oz - static_cast<double>(zs[a]));
      const float dz2 = dz * dz + softening2;
      const float dy0 = 0.0f - ay, dy1 = ly1 - ay;
      dyz0[a] = dy0 * dy0 + dz2;
      dyz1[a] = dy1 * dy1 + dz2;
    }
  };
  const auto row_pairs = [&](const auto* xs, const auto* ys, const auto* zs) {
    row_pair(std::true_type{}, xs, ys, zs, static_cast<double>(j0) * hy, s.dyz[0].data(), s.dyz[1].data());
    for (int r = 2; r < rows; r += 2)
      row_pair(std::false_type{}, xs, ys, zs, static_cast<double>(j0 + r) * hy, s.dyz[r].data(), s.dyz[r + 1].data());
  };
  if (exact) {
    row_pairs(p.x64, p.y64, p.z64);
  } else {
    row_pairs(p.x, p.y, p.z);
  }
  for (std::int64_t i0 = i_chunk; i0 < std::min<std::int64_t>(p.nx, i_chunk + static_cast<std::int64_t>(chunk_points));
       i0 += static_cast<std::int64_t>(tile_points)) {
    for (std::size_t c = 0; c < tile_points; ++c)
      s.lx[c] = static_cast<float>(static_cast<double>(i0 - i_chunk + static_cast<std::int64_t>(c)) * hx);
    const std::size_t width =
        static_cast<std::size_t>(std::min<std::int64_t>(static_cast<std::int64_t>(tile_points), p.nx - i0));
    // One pass over the atoms for these points (row r's sums at out + r·tile_points): whole
    // vectors per row (4 in a row's body), and at a row's end the e points left of each row
    // packed into mixed vectors where they fit, else one more vector per row.
    const TileShape shape = tile_shape(rows, width, lanes);
    const std::size_t e = width % lanes;
    const int rows_per_mixed = shape.mixed > 0 ? rows / shape.mixed : 0;
    for (int m = 0; m < shape.mixed; ++m)
      for (std::size_t c = 0; c < lanes; ++c) {
        const std::size_t row = c / e;  // lanes past the last row's points repeat a computed x
        s.mixed_x[m][c] = s.lx[static_cast<std::size_t>(shape.vectors) * lanes +
                               (row < static_cast<std::size_t>(rows_per_mixed) ? c % e : 0)];
      }
    run_tile<Potential>(shape, d, s, p.atom_count, s.lx.data(), p.pair, s.out.data(), tile_points, e);
    for (int r = 0; r < rows && j0 + r < p.ny; ++r)
      std::memcpy(p.potential + static_cast<std::size_t>(i0 + p.nx * (j0 + r + p.ny * k)),
                  s.out.data() + r * tile_points, sizeof(float) * width);
  }
}

/// One task (simd_task). The OpenMP loop over tasks lives outside the per-target code: clang 14
/// outlines an OpenMP region without the target's attributes and then cannot lower its
/// AVX2/AVX-512 vectors (a backend crash).
void SimdTask(const GridSumProblem& p, std::int64_t k, std::int64_t t, int task_rows, SimdScratch* scratch) {
  with_pair_potential(p.model, [&](auto potential) { simd_task<decltype(potential)>(p, k, t, task_rows, *scratch); });
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
HWY_EXPORT(SimdTaskRows);
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

void simd(const GridSumProblem& problem, int threads, const ProgressFn& progress) {
  apply_simd_cap();
  const auto chunk_points = static_cast<std::int64_t>(HWY_DYNAMIC_DISPATCH(SimdChunkPoints)());
  const int task_rows = HWY_DYNAMIC_DISPATCH(SimdTaskRows)(problem.nx);
  const std::int64_t tasks =
      ((problem.nx + chunk_points - 1) / chunk_points) * ((problem.ny + task_rows - 1) / task_rows);
  // Per task: its rows of a chunk over every atom, after forming every atom's offsets once.
  const double work = static_cast<double>(problem.nz * tasks) * static_cast<double>(problem.atom_count) *
                      (task_rows * static_cast<double>(chunk_points) + 4.0);
  run_plane_tasks<SimdScratch>(problem.nz, tasks, team_for(work, threads, problem.nz * tasks), progress,
                               [&](std::int64_t k, std::int64_t t, SimdScratch& scratch) {
                                 HWY_DYNAMIC_DISPATCH(SimdTask)(problem, k, t, task_rows, &scratch);
                               });
}

std::string simd_target() {
  apply_simd_cap();
  return HWY_DYNAMIC_DISPATCH(SimdTargetName)();
}

SimdCeiling measure_simd_ceiling(int threads) {
  apply_simd_cap();
  const int team = threads_to_use(threads);
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
