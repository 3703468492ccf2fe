#include "src/compute/launch_plan.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <string>

#include "src/core/errors.h"

namespace espgrid {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

std::int64_t round_up(std::int64_t value, std::int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}
std::int64_t ceil_div(std::int64_t value, std::int64_t divisor) { return (value + divisor - 1) / divisor; }

/// The block and coarsening asked for, with 0 replaced by the layout's default.
LaunchPlan resolve_shape(std::string_view variant, const DeviceLayout& layout, const LaunchShape& s) {
  const std::string name(variant);
  if (s.block_x < 0 || s.block_y < 0 || s.coarsening < 0)
    throw UsageError(name + ": block sizes and coarsening must not be negative");
  LaunchPlan r;
  r.bx = layout.block_x;
  r.by = layout.block_y;
  r.cx = layout.coarsening;
  const int default_threads = layout.block_x * layout.block_y;
  if (s.block_x > 0 && s.block_y > 0) {
    r.bx = s.block_x;
    r.by = s.block_y;
  } else if (s.block_x > 0) {
    r.bx = s.block_x;
    r.by = std::max(1, default_threads / s.block_x);
  } else if (s.block_y > 0) {
    r.by = s.block_y;
    r.bx = std::max(1, default_threads / s.block_y);
  }
  if (static_cast<long long>(r.bx) * r.by > 1024)
    throw UsageError(name + ": a block of " + std::to_string(r.bx) + "x" + std::to_string(r.by) + " = " +
                     std::to_string(static_cast<long long>(r.bx) * r.by) +
                     " threads is too large (at most 1024 threads per block)");
  if (s.coarsening > 0) r.cx = s.coarsening;
  if (!layout.coarsens && !layout.dual_pipe && r.cx != 1)
    throw UsageError(name + " computes one point per thread: coarsening must be 0 or 1 (got " + std::to_string(r.cx) +
                     ")");
  if (layout.coarsens && std::find(kCoarsenings.begin(), kCoarsenings.end(), r.cx) == kCoarsenings.end())
    throw UsageError(name + ": coarsening must be 1, 2, 4, 8 or 16 (got " + std::to_string(r.cx) + ")");
  r.ry = layout.register_tile ? register_tile_rows(r.cx) : 1;
  if (layout.dual_pipe) {  // one fixed register tile: the slab pads to it
    if (s.coarsening > 0 && s.coarsening != kDualPipeColumns)
      throw UsageError(name + " computes a fixed tile of " + std::to_string(kDualPipeColumns) + " x " +
                       std::to_string(kDualPipeRows) + " points per thread: coarsening must be 0 or " +
                       std::to_string(kDualPipeColumns) + " (got " + std::to_string(s.coarsening) + ")");
    r.cx = kDualPipeColumns;
    r.ry = kDualPipeRows;
  }
  return r;
}

}  // namespace

// The cost model. Useful work: the map's points over the padded tiles' points. Balance: blocks
// over whole waves of `sms` blocks (a ragged last wave idles SMs). Occupancy: too few warps per
// SM sub-partition leave the SFU idle between dependent instructions; about 4 keep it busy.
// ILP: smaller tiles pay more per-atom overhead per evaluation. The occupancy and ILP factors
// are estimates, checked against the block and coarsening sweeps (benchmarks/NOTES.md).
double register_tile_score(const GridSumProblem& p, int bx, int by, int cx, int ry, int sms) {
  const double planes = static_cast<double>(std::min<std::int64_t>(p.nz, kMaxPlanesPerLaunch));
  const std::int64_t tile_x = std::int64_t{cx} * bx;
  const std::int64_t tile_y = std::int64_t{ry} * by;
  const std::int64_t px = round_up(p.nx, tile_x), py = round_up(p.ny, tile_y);
  const double useful = static_cast<double>(p.nx * p.ny) / static_cast<double>(px * py);
  const double blocks = static_cast<double>((px / tile_x) * (py / tile_y)) * planes;
  const double balance = blocks / (std::ceil(blocks / sms) * sms);
  const double warps_per_scheduler = std::min(16.0, blocks * (bx * by / 32.0) / (4.0 * sms));
  const double occupancy = std::min(1.0, 0.6 + 0.1 * warps_per_scheduler);
  const int points = cx * ry;
  const double ilp = points >= 16 ? 1.0 : (points >= 8 ? 0.985 : 0.96);
  return useful * balance * occupancy * ilp;
}

LaunchPlan choose_register_tile(const GridSumProblem& p, int sms) {
  // The default (16x8 threads, 8x2 points each: 128x16-point tiles) unless another tile is
  // clearly (3%) better for this map.
  LaunchPlan best;
  best.bx = 16;
  best.by = 8;
  best.cx = 8;
  best.ry = 2;
  double best_score = register_tile_score(p, best.bx, best.by, best.cx, best.ry, sms);
  const double threshold = 1.03 * best_score;
  static constexpr std::array<int, 2> kTiles[] = {{8, 2}, {4, 4}, {2, 8}, {4, 2}, {2, 4}, {2, 2}};
  static constexpr std::array<int, 2> kBlocks[] = {{16, 8}, {32, 4}, {8, 16}, {16, 4}, {8, 8}, {4, 16}, {8, 4}, {4, 8}};
  for (const auto& t : kTiles) {
    for (const auto& b : kBlocks) {
      const double v = register_tile_score(p, b[0], b[1], t[0], t[1], sms);
      if (v > best_score + 1e-9 && v >= threshold) {
        best_score = v;
        best.bx = b[0];
        best.by = b[1];
        best.cx = t[0];
        best.ry = t[1];
      }
    }
  }
  return best;
}

LaunchPlan make_launch_plan(std::string_view variant, const DeviceLayout& layout, const GridSumProblem& p,
                            const LaunchShape& shape, int sms) {
  const bool automatic = shape.block_x == 0 && shape.block_y == 0 && shape.coarsening == 0;
  LaunchPlan plan =
      layout.register_tile && automatic ? choose_register_tile(p, sms) : resolve_shape(variant, layout, shape);
  plan.zero_slab = layout.accumulates;
  if (shape.fma_split < -1 || shape.fma_split > kMaxFmaSplit)
    throw UsageError(std::string(variant) + ": the FMA-pipe split must be 0.." + std::to_string(kMaxFmaSplit) +
                     " points of 16 (got " + std::to_string(shape.fma_split) + ")");
  if (shape.fma_split >= 0 && !layout.dual_pipe)
    throw UsageError(std::string(variant) + " has no FMA-pipe split (only the dual-pipe family does)");
  // −1: the device's tuned split, filled in by the family's prepare hook (it knows the device).
  plan.fma_split = layout.dual_pipe ? shape.fma_split : 0;
  std::int64_t px = p.nx, py = p.ny;
  if (layout.pads_to_tiles) {
    px = round_up(p.nx, std::int64_t{plan.cx} * plan.bx);
    py = round_up(p.ny, std::int64_t{plan.ry} * plan.by);
  }
  if (px > INT_MAX || py > INT_MAX) throw UsageError(std::string(variant) + ": grid too large for the CUDA kernels");
  plan.pitch_x = static_cast<int>(px);
  plan.pitch_y = static_cast<int>(py);
  // Grid limits: y ≤ 65535 blocks (planes are capped at kMaxPlanesPerLaunch per slab).
  const std::int64_t grid_y = layout.thread_per_atom ? 1 : ceil_div(py, std::int64_t{plan.ry} * plan.by);
  if (grid_y > 65535)
    throw UsageError(std::string(variant) + ": " + std::to_string(p.ny) +
                     " rows need more than 65535 blocks along y; use a taller block");
  return plan;
}

std::int64_t planes_per_slab(const GridSumProblem& p, const LaunchPlan& plan, std::size_t max_slab_bytes,
                             std::size_t free_device_bytes, std::size_t atom_bytes) {
  const std::size_t plane_bytes = sizeof(float) * plan.plane_floats();
  const std::size_t map_bytes = plane_bytes * static_cast<std::size_t>(p.nz);
  std::size_t budget = max_slab_bytes;
  if (budget == 0) {
    const std::size_t reserve = 256 * kMiB + atom_bytes;
    const std::size_t available = free_device_bytes > reserve ? free_device_bytes - reserve : 0;
    budget = std::min(2 * std::clamp(map_bytes / 8, 32 * kMiB, 256 * kMiB), available);
  }
  std::int64_t planes =
      map_bytes <= budget ? p.nz : static_cast<std::int64_t>(budget / 2 / std::max<std::size_t>(plane_bytes, 1));
  planes =
      std::clamp<std::int64_t>(planes, 1, std::max<std::int64_t>(1, std::min<std::int64_t>(p.nz, kMaxPlanesPerLaunch)));
  const std::int64_t slabs = ceil_div(std::max<std::int64_t>(p.nz, 1), planes);
  return ceil_div(std::max<std::int64_t>(p.nz, 1), slabs);
}

std::int64_t auto_chunk_planes(const GridSumProblem& p, int workers) {
  const std::int64_t plane_points = std::max<std::int64_t>(p.nx * p.ny, 1);
  const std::int64_t nz = std::max<std::int64_t>(p.nz, 1);
  const std::int64_t by_count = ceil_div(nz, std::int64_t{8} * std::max(workers, 1));
  const std::int64_t by_fill = ceil_div(std::int64_t{1} << 21, plane_points);
  const std::int64_t chunk =
      std::clamp<std::int64_t>(std::max(by_count, by_fill), 1, std::min<std::int64_t>(nz, kMaxPlanesPerLaunch));
  return ceil_div(nz, ceil_div(nz, chunk));
}

}  // namespace espgrid
