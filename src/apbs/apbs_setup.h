// The calculations an APBS input asks for, set up as APBS 3.4.1's NOsh sets them up
// (NOsh_setupCalcMGMANUAL, NOsh_setupCalcMGAUTO, NOsh_setupCalcMGPARA in src/generic/nosh.c):
// one solve per mg-manual block; for mg-auto a chain of focusing levels, as many as keep each
// level's spacing at least a quarter of the one before (VREDFRAC), every level with the same
// dime, the first with the block's bcfl and the rest focused from the level before, the
// intermediate centres moved onto the coarser grid as NOsh moves them. mg-para is solved as one
// focusing chain whose finest level is the whole fine grid APBS splits among its processes
// (pdime, ofrac); each process's file is that grid's part the process would write.
// Plain geometry: no atoms beyond the molecules' centres, no physics.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "src/apbs/apbs_input.h"
#include "src/core/grid.h"

namespace espgrid::apbs {

/// One level's grid as NOsh records it: dime, spacing, lengths and centre.
struct LevelGrid {
  std::array<int, 3> dime{};
  std::array<double, 3> spacing{};  ///< Å
  std::array<double, 3> length{};   ///< Å, spacing · (dime − 1)
  std::array<double, 3> center{};   ///< Å
  /// The grid with its lowest corner at center − length/2 (APBS's xmin = xcent − (nx−1)·hx/2).
  GridSpec grid() const;
};

/// The part of an mg-para grid one APBS process owns and writes (routines.c setPartMG, vpmg.c
/// Vpmg_setPart): the nodes of the global fine grid in [first, first + count) along each axis.
struct Partition {
  int rank = 0;                         ///< APBS's processor number, x fastest
  std::array<int, 3> position{};        ///< (ip, jp, kp) in the pdime processor grid
  std::array<std::int64_t, 3> first{};  ///< first node of the global fine grid it writes
  std::array<std::int64_t, 3> count{};  ///< nodes it writes along each axis
};

/// One solve: APBS's "CALCULATION #n".
struct Calculation {
  std::size_t elec = 0;  ///< the ELEC block (0-based)
  int level = 0;         ///< focusing level within the block, 0 = coarsest
  int levels = 1;        ///< the block's number of levels
  LevelGrid grid;
  Boundary boundary = Boundary::MultipleDebyeHuckel;  ///< level 0: the block's; later levels: Focus
  int multigrid_levels = 0;                           ///< what APBS prints as "Multigrid levels"
  bool finest() const noexcept { return level + 1 == levels; }
};

/// Every calculation of the input in APBS's order, and for each ELEC block its partitions
/// (mg-para; empty otherwise) and the partitions written (all, or the `async` one).
struct CalculationPlan {
  std::vector<Calculation> calculations;
  std::vector<std::vector<Partition>> partitions;  ///< per ELEC block
  /// The calculation whose result is each ELEC block's (its finest level).
  std::vector<std::size_t> result_of_elec;
};

/// Sets up every calculation of `input`; `molecule_centers` are the centres of the molecules
/// READ loads (APBS's: the middle of each molecule's bounding box), in order. Throws
/// ApbsInputError naming the ELEC block's line where NOsh would fail (the finest level off the
/// coarser ones, a first calculation that focuses).
CalculationPlan plan_calculations(const ApbsInput& input, const std::vector<std::array<double, 3>>& molecule_centers);

/// The levels NOsh makes of one mg-auto block with these coarse and fine grids (exposed for the
/// tests that compare them with APBS's logs). `file`/`line` name the block in errors.
std::vector<LevelGrid> focusing_levels(const std::array<int, 3>& dime, const std::array<double, 3>& coarse_length,
                                       const std::array<double, 3>& coarse_center,
                                       const std::array<double, 3>& fine_length,
                                       const std::array<double, 3>& fine_center, const std::string& file,
                                       std::size_t line);

/// The global fine grid of an mg-para block: its dime (pdime · ⌊dime/(1 + 2·ofrac) + ½⌋ along a
/// split axis) and the partitions, as NOsh_setupCalcMGPARA computes them for each rank.
struct ParallelLayout {
  std::array<int, 3> global_dime{};
  std::vector<Partition> partitions;
};
ParallelLayout parallel_layout(const ElecBlock& elec);

/// The name APBS gives a written file: "STEM-PE<rank>.dx" or ".dx.gz".
std::string output_file_name(const WriteRequest& request, int rank);

/// "X-SHIFTED DIELECTRIC MAP", "POTENTIAL (kT/e)", ...: the title APBS puts in the file.
std::string write_title(WriteType type, double srad, double swin, double ion_radius);

}  // namespace espgrid::apbs
