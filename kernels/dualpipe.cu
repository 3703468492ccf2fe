// cuda-dualpipe (espgrid's): cuda-unrolled's register tile (8 × 2 points a thread, atoms staged
// through shared memory, one launch per slab, padded grid) with three changes.
//
// 1. Both pipes busy. On Hopper the SFU issues 16 MUFU instructions per clock per SM against
//    128 FP32 lanes: cuda-unrolled spends one MUFU.RSQ and ~2.75 FP32 instructions an
//    evaluation, so the SFU is the limit (its "rsqrt ceiling") while the FMA pipe idles. Here
//    SPLIT of each thread's 16 points evaluate their pair term with FmaMath instead
//    (kernels/device_common.cuh: about 9 FP32 and 2 integer instructions a reciprocal square
//    root, float-accurate). Per atom and warp the SFU then needs 8·(16 − SPLIT) clocks and the issue
//    slots ~61 + 10·SPLIT: balanced near SPLIT = 4 (~1.25× the ceiling in theory; measured on an
//    H200: 0.955× at SPLIT = 2, limited by dependent chains and dispatch; 1.02× on an H100 since the
//    kernel may take more registers, kSplitMinBlocks below, benchmarks/NOTES.md). The split is
//    a template argument (no run-time branch in the tile loop) chosen per device kind and model
//    by measurement (tuned_fma_split below; `espgrid bench --sweep split`).
// 2. Float32 error at the rounding floor, positions: each block forms every atom's offset from
//    its own tile origin in double (once per atom per block, from the atoms' double positions),
//    and each thread its points' offsets from that origin in double, so a pair's dx, dy, dz carry
//    the rounding of their own size, not of the coordinates' size (up to 1.5e-5 Å at 250 Å from
//    the grid origin in cuda-unrolled).
// 3. Float32 error at the rounding floor, sums: each thread sums a shared tile's 256 atoms into
//    a partial sum, then adds the partial to its total (blocked summation): rounding drift grows
//    like √256 + √(N/256) ulp instead of √N. One FADD per point per 256 atoms.
// Per evaluation on the SFU path: FFMA (r²), MUFU.RSQ, FFMA (accumulate); per atom per thread:
// LDS.128, 8 FADD (dx), 2 × (FADD dy, FFMA dy²+dz²).
// 4. Debye: two special functions a pair (RSQ and EX2) left it at half the rsqrt ceiling. Where
//    κ·hx ≤ kExpChainMaxKappaH (0.15 M at up to ~1.1 Å), the tile's columns are adjacent points
//    and e^(−κr) runs along each row as a chain (kernels/tile_loop.cuh, CHAIN): one EX2 per run
//    of kExpChainRun columns, the rest a degree-5 polynomial in Δr on the FMA pipe. Issue-slot
//    model per atom and warp: SFU 8·(16 + 4) = 160 clocks, issue ~12·11 + 4·7 + 13 ≈ 173: about
//    0.74 of the ceiling at best, against 0.5 with two MUFU a pair. The split does not apply.
#include <string_view>

#include "kernels/tile_loop.cuh"

namespace espgrid::cuda {
namespace {

constexpr int CX = kDualPipeColumns;
constexpr int RY = kDualPipeRows;

/// Resident blocks an SM asked of ptxas (__launch_bounds__'s second argument). The split kernels
/// ask for 1: their FMA-pipe rsqrt is a long dependent chain, and the registers ptxas then gives
/// (84–95 a thread, not 64–80) keep more of a warp's independent points in flight, which pays
/// more than occupancy. Debye's chain asks for 4: held to 64 registers it measured fastest. Only
/// ptxas's register budget moves (the maps are bit-identical); measured on an H100 in
/// benchmarks/NOTES.md, "cuda-dualpipe: registers, not occupancy".
constexpr int kSplitMinBlocks = 1;
constexpr int kChainMinBlocks = 4;

/// cuda-unrolled's loop (kernels/tile_loop.cuh) with the 8 × 2 tile, positions from each tile's
/// origin (TileFrame), SPLIT points on the FMA pipe and blocked sums.
template <int SPLIT, class Potential>
void launch_split(const SlabLaunch& s, const Geometry& g, dim3 grid, dim3 block) {
  tile_kernel<CX, RY, kSmallBlockThreads, TileFrame, SPLIT, true, Potential, 0, kSplitMinBlocks>
      <<<grid, block, 0, stream_of(s)>>>(s.slab, atoms64_of(s), s.atom_count, g, Spacing64{s.hx64, s.hy64, s.hz64},
                                         s.pair);
}

/// Columns per exponential chain (one MUFU.EX2 each): 4 keeps a chain's rounding ≤ 3 steps.
constexpr int kExpChainRun = 4;

/// Debye's exponential chain applies: κ·hx small enough for its polynomial.
bool exp_chain_applies(const SlabLaunch& s) {
  return s.model == PairModel::Debye && static_cast<double>(s.pair.kappa) * s.hx64 <= kExpChainMaxKappaH;
}

}  // namespace

void launch_dualpipe(const SlabLaunch& s) {
  // The kernel writes whole CX × RY tiles without bounds tests: the slab must be padded to them.
  if (s.plan.cx != CX || s.plan.ry != RY || s.plan.pitch_x % (CX * s.plan.bx) != 0 ||
      s.plan.pitch_y % (RY * s.plan.by) != 0)
    throw Error("internal error: cuda-dualpipe launched on a slab not padded to its 8 x 2 tiles");
  const Geometry g = geometry_of(s);
  const dim3 block(static_cast<unsigned>(s.plan.bx), static_cast<unsigned>(s.plan.by));
  const dim3 grid = tile_grid(s, CX, RY);
  if (exp_chain_applies(s)) {
    tile_kernel<CX, RY, kSmallBlockThreads, TileFrame, 0, true, DebyePotential, kExpChainRun, kChainMinBlocks>
        <<<grid, block, 0, stream_of(s)>>>(s.slab, atoms64_of(s), s.atom_count, g, Spacing64{s.hx64, s.hy64, s.hz64},
                                           s.pair);
    ESPGRID_CUDA_CHECK_LAUNCH();
    return;
  }
  with_pair_potential(s.model, [&](auto potential) {
    using P = decltype(potential);
    switch (s.plan.fma_split) {  // the instantiations: 0 .. kMaxFmaSplit
      case 0:
        launch_split<0, P>(s, g, grid, block);
        break;
      case 1:
        launch_split<1, P>(s, g, grid, block);
        break;
      case 2:
        launch_split<2, P>(s, g, grid, block);
        break;
      case 3:
        launch_split<3, P>(s, g, grid, block);
        break;
      case 4:
        launch_split<4, P>(s, g, grid, block);
        break;
      case 5:
        launch_split<5, P>(s, g, grid, block);
        break;
      case 6:
        launch_split<6, P>(s, g, grid, block);
        break;
      case 7:
        launch_split<7, P>(s, g, grid, block);
        break;
      case 8:
        launch_split<8, P>(s, g, grid, block);
        break;
      default:
        throw Error("no dual-pipe kernel for an FMA-pipe split of " + std::to_string(s.plan.fma_split));
    }
  });
  ESPGRID_CUDA_CHECK_LAUNCH();
}

// The split per device kind and model, from `espgrid bench --sweep split` (the fastest split,
// 16 × 8 blocks, 100,000 random atoms on 256 × 256 × 128 points). Devices not in the table get
// kDefaultSplit, the value the issue-slot model above predicts. A fixed table (not a tuning run
// at start-up) keeps a map's bits the same from run to run and across GPUs of one kind.
int tuned_fma_split(int device, PairModel model) {
  struct Entry {
    int compute_capability;  ///< ×10: 90 = Hopper (H100, H200)
    std::string_view model;  ///< the evaluator's name
    int split;
  };
  // Hopper: the H200 sweep of 2026-11-23 (benchmarks/results/h200-2026-11-23/bench): Coulomb
  // 2/16 (95.4% of the rsqrt ceiling; 0/16 91.8%), distance 4/16 (101.6%), Debye 2/16 (48.0%;
  // used only where the exponential chain does not apply, κ·hx > kExpChainMaxKappaH). Swept
  // again with kSplitMinBlocks = 1 on an H100 (benchmarks/results/h100-2026-11-26-registers):
  // the same splits win, Coulomb 2/16 at 102.1% (3/16 99.9%), distance 4/16 at 113.7%.
  // A model not measured here gets kDefaultSplit.
  static constexpr Entry kTable[] = {{90, "coulomb", 2}, {90, "distance", 4}, {90, "debye", 2}};
  constexpr int kDefaultSplit = 4;
  int major = 0, minor = 0;
  ESPGRID_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  ESPGRID_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  const std::string_view name = with_pair_potential(model, [](auto potential) { return potential.name; });
  for (const Entry& e : kTable)
    if (e.compute_capability == 10 * major + minor && e.model == name) return e.split;
  return kDefaultSplit;
}

void prepare_dualpipe(LaunchPlan& plan, int device, const GridSumProblem& problem) {
  if (plan.fma_split < 0) plan.fma_split = tuned_fma_split(device, problem.model);
}

}  // namespace espgrid::cuda
