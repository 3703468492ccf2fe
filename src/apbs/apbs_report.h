// What `espgrid apbs` prints, in APBS 3.4.1's words and number formats (routines.c printMGPARM,
// printPBEPARM, energyMG, printElecEnergy), so scripts that read APBS's output ("Total
// electrostatic energy = %1.12E kJ/mol", "Global net ELEC energy = %1.12E kJ/mol") read
// espgrid's; and the same run as JSON (`--json`).
#pragma once

#include <string>

#include "src/apbs/apbs_run.h"
#include "src/core/json.h"

namespace espgrid::apbs {

/// "----...\nCALCULATION #n (name): MULTIGRID\n  Grid dimensions: ..." up to the energy and the
/// files written, as APBS prints a calculation.
std::string calculation_text(const ApbsInput& input, const CalculationResult& result);

/// "PRINT STATEMENTS\n\nprint energy 1 (a) - 2 (b) end\n  Local net energy (PE 0) = ...\n  Global
/// net ELEC energy = ... kJ/mol\n" for every PRINT, then the closing rule; empty without PRINT.
std::string print_text(const ApbsResult& result);

/// The run as JSON: every calculation (grid, boundary, energy, files, solver), every ELEC
/// block's energy (and per-atom energies), every PRINT's sum, the maps written, the notices.
Json result_json(const ApbsResult& result);

}  // namespace espgrid::apbs
