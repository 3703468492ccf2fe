// How a CUDA kernel family runs on one problem, decided on the host: block shape, points per
// thread, the padded device layout, slab and chunk sizes. Plain C++ (C++17, no CUDA), so the
// cost model and the sizing rules are unit-tested without a GPU (tests/test_launch_plan.cpp)
// and the device driver (kernels/device_driver.cu) only carries the plan out.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/compute/grid_sum_problem.h"

namespace espgrid {

/// What the host must know of a CUDA kernel family's work layout (one per registry entry).
struct DeviceLayout {
  int block_x = 32;  ///< default block shape
  int block_y = 4;
  int coarsening = 1;                 ///< default points per thread along x
  bool coarsens = false;              ///< accepts a coarsening factor (kCoarsenings)
  bool register_tile = false;         ///< a CX × RY tile per thread; all-zero shape: chosen per map
  bool pads_to_tiles = false;         ///< device slab padded to whole thread tiles (no bounds tests)
  bool accumulates = false;           ///< adds into a zeroed slab (atomics) instead of writing once
  bool thread_per_atom = false;       ///< threads index atoms (and planes), not grid points
  bool uses_constant_memory = false;  ///< one call at a time per device (one __constant__ buffer)
  /// An 8 × 2 register tile whose reciprocal square roots are split between the SFU and the FMA
  /// pipe: accepts LaunchShape::fma_split (0..kMaxFmaSplit), not a coarsening.
  bool dual_pipe = false;
  bool double_positions = false;  ///< reads the atoms' double positions (tile-relative offsets)
};

/// The dual-pipe family's register tile and the most of its points that may use the FMA pipe.
inline constexpr int kDualPipeColumns = 8;
inline constexpr int kDualPipeRows = 2;
inline constexpr int kMaxFmaSplit = 8;

/// A requested launch shape; 0 keeps the family's default. When only one of block_x/block_y is
/// set, the other keeps the default thread count. All three 0 for a register-tiled family
/// chooses the tile for the map (choose_register_tile).
struct LaunchShape {
  int block_x = 0;
  int block_y = 0;
  int coarsening = 0;  ///< points per thread along x: 1, 2, 4, 8 or 16 where supported
  /// Dual-pipe families: how many of each thread's 16 points take their reciprocal square root
  /// on the FMA pipe (Newton iterations) instead of the SFU; −1: the device's tuned value.
  int fma_split = -1;
};

/// The plan of one family on one problem.
struct LaunchPlan {
  int bx = 0, by = 0;            ///< block shape
  int cx = 1, ry = 1;            ///< points per thread along x, rows per thread
  int pitch_x = 0, pitch_y = 0;  ///< device plane: floats per row, rows (padded for tiled families)
  bool zero_slab = false;        ///< the slab starts at zero (atomics); otherwise NaN poison
  int fma_split = 0;             ///< dual-pipe: points per thread on the FMA pipe (−1: the tuned value)
  std::size_t plane_floats() const noexcept {
    return static_cast<std::size_t>(pitch_x) * static_cast<std::size_t>(pitch_y);
  }
};

/// Coarsening factors the coarsening families are instantiated for.
inline constexpr std::array<int, 5> kCoarsenings = {1, 2, 4, 8, 16};
/// Register tiles (points along x, rows) the register-tiled family is instantiated for:
/// (c, register_tile_rows(c)) for every coarsening c, plus taller tiles the automatic choice
/// uses to pad small or odd maps less. kernels/unrolled.cu instantiates exactly these.
struct TileShape {
  int cx, ry;
};
inline constexpr std::array<TileShape, 8> kRegisterTiles = {TileShape{1, 2}, TileShape{2, 2},  TileShape{4, 2},
                                                            TileShape{8, 2}, TileShape{16, 1}, TileShape{2, 4},
                                                            TileShape{4, 4}, TileShape{2, 8}};
/// Rows per thread of a register tile with `cx` columns chosen by an explicit coarsening
/// (16 columns × 2 rows would not fit the 64 registers that 1024-thread blocks allow).
constexpr int register_tile_rows(int cx) { return cx >= 16 ? 1 : 2; }
/// Blocks of at most this many threads use the kernels' small-block instantiation (up to 255
/// registers a thread); larger ones (up to 1024) the large-block one (64 registers).
inline constexpr int kSmallBlockThreads = 256;

/// The plan for `layout` on `problem` with `shape` on a device of `sms` multiprocessors.
/// Throws UsageError naming `variant` for a shape it does not support or a map too large.
LaunchPlan make_launch_plan(std::string_view variant, const DeviceLayout& layout, const GridSumProblem& problem,
                            const LaunchShape& shape, int sms);

/// The register tile and block for a map when none is requested: among a few tiles and blocks,
/// the one that wastes the least work on padding and on a ragged last wave of blocks
/// (see the comment in launch_plan.cpp for the cost model and its estimates).
LaunchPlan choose_register_tile(const GridSumProblem& problem, int sms);
/// The cost model's score of one shape (higher is better; 1 = no waste): exposed for tests.
double register_tile_score(const GridSumProblem& problem, int bx, int by, int cx, int ry, int sms);

/// Planes per device slab. The budget is the device memory for the map: `max_slab_bytes`, or
/// (when 0) what `free_device_bytes` allows after a reserve, at most two buffers of 256 MiB,
/// each about an eighth of the map so that copies overlap kernels. A map within the budget is
/// one slab in one buffer; a larger one streams through two buffers of half the budget each
/// (never less than one plane). Slabs are of equal size, no sliver at the end.
std::int64_t planes_per_slab(const GridSumProblem& problem, const LaunchPlan& plan, std::size_t max_slab_bytes,
                             std::size_t free_device_bytes, std::size_t atom_bytes);

/// Planes per work-queue chunk for `workers` workers: about 8 chunks each, so that a slower or
/// busier device simply takes fewer and all finish within about one chunk of each other; at
/// least 2^21 points (a chunk fills a GPU); equal sizes, no sliver at the end.
std::int64_t auto_chunk_planes(const GridSumProblem& problem, int workers);

/// Most z-planes one launch covers (CUDA's grid z limit).
inline constexpr std::int64_t kMaxPlanesPerLaunch = 65535;

}  // namespace espgrid
