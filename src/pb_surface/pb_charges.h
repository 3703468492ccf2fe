// The atoms' charges on the grid's nodes, e per node, as APBS 3.4.1 spreads them (`chgm`;
// src/mg/vpmg.c fillcoChargeSpline1, fillcoChargeSpline2, fillcoPermanentMultipole):
//   spl0  trilinear onto the 8 nodes around the charge; atoms strictly inside the grid's box
//   spl2  quadratic B-spline weights onto the 3 × 3 × 3 nodes around it; atoms less than one
//         spacing outside the box still spread onto the nodes that exist
//   spl4  quartic B-spline weights onto 5 × 5 × 5 nodes; atoms less than two spacings outside
// Atoms farther out put nothing on the grid (a focusing level's atoms outside its domain).
// Sequential in atom order: the sums round as APBS's do.
#pragma once

#include <vector>

#include "src/core/atoms.h"
#include "src/core/grid.h"
#include "src/physics/pb_options.h"

namespace espgrid::pb {

/// The charges spread by `method`, e per node, x fastest.
std::vector<double> spread_charges(const Atoms& atoms, const GridSpec& grid, PbChargeMethod method);
/// The same on z-planes [first_plane, end_plane) alone (an MPI rank's rows): those planes hold
/// spread_charges' values to the bit (the same atoms in the same order); the array keeps the grid's
/// shape and the other planes read 0 and take no memory (bulk_memory.h assign_zeros_resident).
std::vector<double> spread_charges_on_planes(const Atoms& atoms, const GridSpec& grid, PbChargeMethod method,
                                             long first_plane, long end_plane);
/// Whether `method` puts any of the atom's charge on `grid` (APBS's "on the mesh" test for it).
bool charge_on_grid(double x, double y, double z, const GridSpec& grid, PbChargeMethod method);

/// APBS's `bspline4`: the quartic B-spline on (0, 5] (the `chgm spl4` weights, argument 2.5 + i − f).
double bspline4(double x);

}  // namespace espgrid::pb
