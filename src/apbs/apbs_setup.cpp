#include "src/apbs/apbs_setup.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "src/physics/apbs_constants.h"

namespace espgrid::apbs {
namespace {

/// Most a focusing level may shrink the spacing (vhal.h VREDFRAC).
constexpr double kReductionLimit = 0.25;
/// Most calculations one ELEC block may make (nosh.h NOSH_MAXCALC).
constexpr int kMaxLevels = 20;

std::array<double, 3> center_of(const CenterInput& c, const std::vector<std::array<double, 3>>& centers) {
  if (c.molecule == 0) return c.xyz;
  return centers.at(static_cast<std::size_t>(c.molecule - 1));
}

int multigrid_levels(const std::array<int, 3>& dime) {
  int levels = 1 << 30;
  for (int d : dime) levels = std::min(levels, multigrid_axis(d).levels);
  return levels;
}

/// NOsh's repositioning of an intermediate level onto the coarser one (or its error for the
/// finest, which must lie inside as given). A level may stick out by kApbsSmall (maloc's VSMALL)
/// before NOsh moves it.
void fit_inside(LevelGrid& fine, const LevelGrid& coarse, bool finest, const std::string& file, std::size_t line) {
  for (int j = 0; j < 3; ++j) {
    bool moved = false;
    const double min_fine = fine.center[j] - 0.5 * fine.length[j];
    const double min_coarse = coarse.center[j] - 0.5 * coarse.length[j];
    double d = min_coarse - min_fine;
    if (d >= kApbsSmall) {
      if (finest)
        throw ApbsInputError(file, line,
                             std::string("the fine grid (fglen, fgcent) reaches past the coarse grid along ") +
                                 "xyz"[j] + " by " + std::to_string(d) + " A (APBS stops here too)");
      fine.center[j] += d;
      moved = true;
    }
    const double max_fine = fine.center[j] + 0.5 * fine.length[j];
    const double max_coarse = coarse.center[j] + 0.5 * coarse.length[j];
    d = max_fine - max_coarse;
    if (d >= kApbsSmall) {
      if (finest)
        throw ApbsInputError(file, line,
                             std::string("the fine grid (fglen, fgcent) reaches past the coarse grid along ") +
                                 "xyz"[j] + " by " + std::to_string(d) + " A (APBS stops here too)");
      if (moved)
        throw ApbsInputError(file, line,
                             std::string("a focusing level is longer than the coarser one along ") + "xyz"[j] +
                                 " (fglen larger than cglen?); APBS stops here too");
      fine.center[j] -= d;
    }
  }
}

}  // namespace

GridSpec LevelGrid::grid() const {
  GridSpec g;
  for (int j = 0; j < 3; ++j) {
    g.dims[j] = dime[j];
    g.spacing[j] = spacing[j];
    g.origin[j] = center[j] - 0.5 * (dime[j] - 1) * spacing[j];
  }
  return g;
}

std::vector<LevelGrid> focusing_levels(const std::array<int, 3>& dime, const std::array<double, 3>& coarse_length,
                                       const std::array<double, 3>& coarse_center,
                                       const std::array<double, 3>& fine_length,
                                       const std::array<double, 3>& fine_center, const std::string& file,
                                       std::size_t line) {
  std::array<double, 3> coarse_spacing{}, fine_spacing{}, reduction{};
  int levels = 2;
  for (int j = 0; j < 3; ++j) {
    coarse_spacing[j] = coarse_length[j] / (dime[j] - 1);
    fine_spacing[j] = fine_length[j] / (dime[j] - 1);
    const double ratio = fine_spacing[j] / coarse_spacing[j];
    if (ratio < kReductionLimit)  // lengths lie in (0, 1e6] Å (the parser's limit): the count stays small
      levels =
          std::max(levels, static_cast<int>(std::min(1e3, std::ceil(std::log(ratio) / std::log(kReductionLimit)))) + 1);
  }
  // NOsh_setupCalcMGAUTO: a block needs at most NOSH_MAXCALC (20) calculations.
  if (levels > kMaxLevels)
    throw ApbsInputError(file, line,
                         "fglen is " + std::to_string(levels) + " focusing levels from cglen (APBS allows " +
                             std::to_string(kMaxLevels) + " calculations); is fglen or cglen a typo?");
  for (int j = 0; j < 3; ++j)
    reduction[j] = std::pow(fine_spacing[j] / coarse_spacing[j], 1.0 / (static_cast<double>(levels) - 1.0));
  std::vector<LevelGrid> out(static_cast<std::size_t>(levels));
  for (int i = 0; i < levels; ++i) {
    LevelGrid& g = out[static_cast<std::size_t>(i)];
    g.dime = dime;
    for (int j = 0; j < 3; ++j) {
      if (i == 0) {
        g.spacing[j] = coarse_spacing[j];
        g.length[j] = coarse_length[j];
      } else {
        g.spacing[j] = reduction[j] * out[static_cast<std::size_t>(i - 1)].spacing[j];
        g.length[j] = reduction[j] * out[static_cast<std::size_t>(i - 1)].length[j];
      }
    }
    g.center = i == 0 ? coarse_center : fine_center;
    if (i > 0) fit_inside(g, out[static_cast<std::size_t>(i - 1)], i + 1 == levels, file, line);
  }
  return out;
}

ParallelLayout parallel_layout(const ElecBlock& elec) {
  ParallelLayout layout;
  const std::array<int, 3> np = elec.pdime.value;
  std::array<int, 3> disjoint{};
  for (int j = 0; j < 3; ++j) {
    const double overlap = np[j] == 1 ? 0.0 : elec.ofrac.value;
    disjoint[j] = static_cast<int>(std::floor(elec.dime.value[j] / (1 + 2 * overlap) + 0.5));
    layout.global_dime[j] = np[j] * disjoint[j];
  }
  const int count = np[0] * np[1] * np[2];
  for (int rank = 0; rank < count; ++rank) {
    Partition p;
    p.rank = rank;
    p.position = {rank % np[0], (rank / np[0]) % np[1], rank / (np[0] * np[1])};
    for (int j = 0; j < 3; ++j) {
      p.first[j] = static_cast<std::int64_t>(p.position[j]) * disjoint[j];
      p.count[j] = disjoint[j];
    }
    layout.partitions.push_back(p);
  }
  return layout;
}

CalculationPlan plan_calculations(const ApbsInput& input, const std::vector<std::array<double, 3>>& molecule_centers) {
  CalculationPlan plan;
  plan.partitions.resize(input.elecs.size());
  for (std::size_t e = 0; e < input.elecs.size(); ++e) {
    const ElecBlock& elec = input.elecs[e];
    std::vector<LevelGrid> levels;
    if (elec.method == ElecMethod::Manual) {
      LevelGrid g;
      g.dime = elec.dime.value;
      for (int j = 0; j < 3; ++j) {
        g.spacing[j] = elec.grid.set ? elec.grid.value[j] : elec.glen.value[j] / (g.dime[j] - 1);
        g.length[j] = elec.glen.set ? elec.glen.value[j] : elec.grid.value[j] * (g.dime[j] - 1);
      }
      g.center = center_of(elec.gcent, molecule_centers);
      levels.push_back(g);
    } else {
      std::array<int, 3> dime = elec.dime.value;
      if (elec.method == ElecMethod::Parallel) {
        ParallelLayout layout = parallel_layout(elec);
        dime = layout.global_dime;
        for (const Partition& p : layout.partitions)
          if (!elec.async || *elec.async == p.rank) plan.partitions[e].push_back(p);
      }
      levels = focusing_levels(dime, elec.cglen.value, center_of(elec.cgcent, molecule_centers), elec.fglen.value,
                               center_of(elec.fgcent, molecule_centers), input.file, elec.line);
    }
    for (std::size_t i = 0; i < levels.size(); ++i) {
      Calculation c;
      c.elec = e;
      c.level = static_cast<int>(i);
      c.levels = static_cast<int>(levels.size());
      c.grid = levels[i];
      c.boundary = i == 0 ? *elec.boundary : Boundary::Focus;
      c.multigrid_levels = multigrid_levels(levels[i].dime);
      if (c.boundary == Boundary::Focus && plan.calculations.empty())
        throw ApbsInputError(input.file, elec.boundary_line,
                             "bcfl focus needs an earlier calculation to focus from, and this is the first (APBS: "
                             "\"Can't focus first calculation!\")");
      if (c.boundary == Boundary::Focus && i == 0) {  // a block's own levels fit by construction
        const LevelGrid& parent = plan.calculations.back().grid;
        for (int j = 0; j < 3; ++j)
          if (c.grid.center[j] - 0.5 * c.grid.length[j] < parent.center[j] - 0.5 * parent.length[j] - kApbsSmall ||
              c.grid.center[j] + 0.5 * c.grid.length[j] > parent.center[j] + 0.5 * parent.length[j] + kApbsSmall)
            throw ApbsInputError(input.file, elec.boundary_line,
                                 std::string("bcfl focus: this grid reaches past the previous calculation's along ") +
                                     "xyz"[j] + ", where no boundary values can come from");
      }
      plan.calculations.push_back(c);
    }
    plan.result_of_elec.push_back(plan.calculations.size() - 1);
  }
  return plan;
}

std::string output_file_name(const WriteRequest& request, int rank) {
  return request.stem + "-PE" + std::to_string(rank) + (request.format == WriteFormat::Gz ? ".dx.gz" : ".dx");
}

std::string write_title(WriteType type, double srad, double swin, double ion_radius) {
  char text[96];
  switch (type) {
    case WriteType::Pot:
      return "POTENTIAL (kT/e)";
    case WriteType::Charge:
      return "CHARGE DISTRIBUTION (e)";
    case WriteType::Smol:
      std::snprintf(text, sizeof text, "SOLVENT ACCESSIBILITY -- MOLECULAR (%4.3f PROBE)", srad);
      return text;
    case WriteType::Sspl:
      std::snprintf(text, sizeof text, "SOLVENT ACCESSIBILITY -- SPLINE (%4.3f WINDOW)", swin);
      return text;
    case WriteType::Vdw:
      return "SOLVENT ACCESSIBILITY -- VAN DER WAALS";
    case WriteType::Ivdw:
      std::snprintf(text, sizeof text, "ION ACCESSIBILITY -- SPLINE (%4.3f RADIUS)", ion_radius);
      return text;
    case WriteType::Lap:
      return "POTENTIAL LAPLACIAN (kT/e/A^2)";
    case WriteType::Edens:
      return "ENERGY DENSITY (kT/e/A)^2";
    case WriteType::Ndens:
      return "ION NUMBER DENSITY (M)";
    case WriteType::Qdens:
      return "ION CHARGE DENSITY (e_c * M)";
    case WriteType::DielX:
      return "X-SHIFTED DIELECTRIC MAP";
    case WriteType::DielY:
      return "Y-SHIFTED DIELECTRIC MAP";
    case WriteType::DielZ:
      return "Z-SHIFTED DIELECTRIC MAP";
    case WriteType::Kappa:
      return "KAPPA MAP";
  }
  return "";
}

}  // namespace espgrid::apbs
