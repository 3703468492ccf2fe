// The exact kernels' sweeps of `espgrid bench` (the multilevel summation's are in
// msm_sweeps.h): every selected kernel on one input, CUDA block shapes, coarsening, the
// dual-pipe FMA split, atom count, grid size, CPU-vs-GPU speedup, 1 to N GPUs, and a structure
// file to map files end to end. Each prints its table and writes bench-KIND.csv and .json
// (benchmarks/plot_bench.py draws them); src/cli/bench_command.cpp parses the options and
// calls them.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "src/bench/bench.h"
#include "src/compute/prepared_problem.h"
#include "src/physics/physics_options.h"

namespace espgrid::bench {

/// One `espgrid bench` run, shared by its exact-kernel sweeps: what to measure, how, and the
/// verdict so far.
struct BenchRun {
  Settings settings;
  RunOptions run;
  bool have_cuda = false;
  std::string cuda_reason;
  std::vector<const KernelVariant*> selected;  ///< --kernel ∩ --backend, in registry order
  Metadata meta;
  std::string out_dir;
  std::array<double, 3> spacing{};  ///< Å
  PhysicsOptions physics;           ///< --model and the unit of every map (kT/e at 298.15 K, vacuum by default)
  std::uint64_t seed = 1;
  bool any_fail = false;
  bool kernels_named = false;  ///< --kernel named the variants (the gpus sweep then runs each CUDA one)
  bool custom_input = false;   ///< an input file, --dims or --atoms (the gpus sweep then uses it)

  bool is_selected(const KernelVariant& k) const;
  /// Measures kernel `k` on `problem` (a skipped line without a CUDA device for a CUDA kernel),
  /// prints the line with `config` and records a failure.
  Measurement measure_one(const std::string& sweep, const KernelVariant& k, const PreparedProblem& problem,
                          const RunOptions& options, const std::string& config, bool shape_sweep = false);
  /// Writes bench-KIND.csv and .json into out_dir (nothing when it is empty).
  void save(const std::string& kind, const std::vector<Measurement>& lines, const std::vector<Speedup>& speedups = {});
};

/// Every selected kernel on the same input (the table `espgrid bench` prints first).
void sweep_variants(BenchRun& b, const PreparedProblem& problem);
/// CUDA block shapes, 64 to 1024 threads.
void sweep_blocks(BenchRun& b, const PreparedProblem& problem);
/// Points per thread along x, for the kernels that take a coarsening factor.
void sweep_coarsening(BenchRun& b, const PreparedProblem& problem);
/// The dual-pipe families: every FMA-pipe split of the 16-point tile, to choose the split for
/// this device and model (kernels/dualpipe.cu's table takes the fastest).
void sweep_split(BenchRun& b, const PreparedProblem& problem);
/// Random atoms of growing counts on `grid`.
void sweep_atoms(BenchRun& b, const GridSpec& grid);
/// Growing grids of kSweepGridAtoms random atoms.
void sweep_grid(BenchRun& b);
/// The CPU default against the best GPU kernel on a few problem sizes.
void sweep_speedup(BenchRun& b);
/// The whole map on 1, 2, 4, ... of the devices (--devices, default all usable ones), each run
/// end to end through the registry (the multi-GPU work queue for more than one); time, speedup
/// and parallel efficiency against one GPU, by kernel time and by wall time; every multi-GPU
/// map compared bit for bit with the one-GPU map. `given` is used with a custom input.
void sweep_gpus(BenchRun& b, const PreparedProblem& given);
/// The structure file through `espgrid map`'s path to a map file of each format (words of the
/// format table), every stage timed; wall / kernel is the figure to watch (1 = nothing but the
/// kernel).
void sweep_end_to_end(BenchRun& b, const EndToEndRequest& request, const std::vector<std::string>& formats);

}  // namespace espgrid::bench
