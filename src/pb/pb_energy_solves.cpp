// Energies made of several PB solves on one grid (pb_solve.h): solvation and binding.
#include "src/pb/pb_solve.h"

namespace espgrid {

PbSolvation solvation_energy(const Atoms& atoms, const GridSpec& grid, const PbOptions& options, const PbRun& run) {
  PbOptions solvated = options;
  if (solvated.energy.level == PbEnergyLevel::None) solvated.energy.level = PbEnergyLevel::Total;
  PbOptions reference = solvated;
  reference.solvent_dielectric = reference.solute_dielectric;
  reference.ions.clear();
  reference.ionic_strength = 0;
  PbSolvation s;
  s.solvated = solve_pb(atoms, grid, solvated, run);
  s.reference = solve_pb(atoms, grid, reference, run);
  s.energy = s.solvated.energy.total - s.reference.energy.total;
  return s;
}

PbBinding binding_energy(const Atoms& complex, const std::vector<Atoms>& parts, const GridSpec& grid,
                         const PbOptions& options, const PbRun& run) {
  PbOptions o = options;
  if (o.energy.level == PbEnergyLevel::None) o.energy.level = PbEnergyLevel::Total;
  PbBinding b;
  b.complex = solve_pb(complex, grid, o, run);
  b.energy = b.complex.energy.total;
  for (const Atoms& part : parts) {
    b.parts.push_back(solve_pb(part, grid, o, run));
    b.energy -= b.parts.back().energy.total;
  }
  return b;
}

}  // namespace espgrid
