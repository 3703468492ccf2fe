// The multilevel summation's two sweeps of `espgrid bench`:
//
//   --sweep msm           large structures (copies of a bundled molecule on a lattice: 16,090 to
//                         1,609,000 atoms of acetylcholine-binding protein, plus a small
//                         protein) at the map spacing given: the
//                         MSM's time (per phase) and error against the exact sum at sampled
//                         points away from atoms, for each accuracy preset, against the exact
//                         kernel's time (measured on as many planes as fit the budget and scaled
//                         to the whole map); the crossover; and a map-size sub-sweep.
//   --sweep msm-accuracy  the measurement behind the presets' table (msm_accuracy_table): every
//                         candidate setting on the bundled molecules against the exact map.
//
// Both write bench-KIND.csv and .json (benchmarks/plot_bench.py draws them).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "src/bench/bench.h"
#include "src/physics/physics_options.h"

namespace espgrid::bench {

struct MsmSweepContext {
  RunOptions run;          ///< threads, device, method (an --accuracy given: only that preset)
  Settings settings;       ///< repeats (at most 3 for the MSM's big maps), budget, check points, seed
  PhysicsOptions physics;  ///< --model must be one MSM computes
  std::array<double, 3> spacing{0.5, 0.5, 0.5};  ///< map spacing, Å
  bool use_gpu = false;        ///< cuda-msm against the CUDA default; else cpu-msm against cpu-parallel
  std::string base_structure;  ///< the lattice's molecule (default data/achbp.pqr)
  std::string out_dir;         ///< empty: no files
  Metadata meta;
};

/// One structure of the MSM sweep: the lattice copies (or a bundled molecule) and their atoms.
struct LatticeSize {
  std::array<int, 3> copies;
};
/// Copies of the base molecule for --sweep msm: 1, 2, 6, 18, 48 and 100 on the GPU (16,090 to
/// 1,609,000 atoms of data/achbp.pqr, the lattices of /tmp/big300k.pqr and /tmp/big1500k.pqr made
/// by scripts/make_lattice_structure.py); 1 and 2 on the CPU.
std::vector<LatticeSize> msm_sweep_sizes(bool gpu);

/// Copies of `base` on a lattice, each turned by a random rotation (seeded) about its centre;
/// pitch = the copy's largest extent through its centre, doubled, plus `gap` Å (copies never
/// overlap), as scripts/make_lattice_structure.py builds them.
Atoms lattice_structure(const Atoms& base, std::array<int, 3> copies, double gap, std::uint64_t seed);

/// Runs --sweep msm; returns false when any measurement failed (an MSM error over its bound).
bool sweep_msm(const MsmSweepContext& context);
/// Runs --sweep msm-accuracy; returns false when any measurement failed.
bool sweep_msm_accuracy(const MsmSweepContext& context);

}  // namespace espgrid::bench
