// The energies a `--model pb` map reports (APBS's, src/pb/pb_energy.h) and the ones built from
// more solves on its grid: solvation (--solvation-energy) and binding (--binding-parts). Printed by
// `espgrid map`, written as the summary's "energy" block (--json, Python's Map.energy).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "src/core/atoms.h"
#include "src/core/json.h"
#include "src/pb/pb_solve.h"

namespace espgrid {

struct PbEnergyReport {
  pb::PbEnergy energy;              ///< the map's own (APBS's total, and comps' terms and per-atom energies)
  std::string charge_method;        ///< chgm, for the description
  bool nonlinear = false;           ///< npbe (its total is the full functional)
  std::optional<double> reference;  ///< kT: the reference solve's total (--solvation-energy)
  std::optional<double> solvation;  ///< kT: total − reference
  struct Part {
    std::string name;  ///< the file
    double total = 0;  ///< kT
  };
  std::vector<Part> parts;        ///< --binding-parts, each solved on the map's grid
  std::optional<double> binding;  ///< kT: total − Σ parts
};

/// The report of a solved map: its energy, then the reference and the parts solved on `grid` with
/// the same options and run (parts read from their files: PQR or XYZ).
PbEnergyReport pb_energy_report(const Atoms& atoms, const GridSpec& grid, const PbOptions& options, const PbRun& run,
                                const PbResult& solved);
/// The summary's "energy" block: totals in kT and kJ/mol, the terms and per-atom energies (comps),
/// solvation and binding.
Json pb_energy_json(const PbEnergyReport& report);
/// The lines `espgrid map` prints ("energy     ...", "solvation  ...", "binding    ...").
std::vector<std::string> pb_energy_lines(const PbEnergyReport& report);

}  // namespace espgrid
