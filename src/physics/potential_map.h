// A computed map: the grid, the values and what they mean. Writers and readers are in
// maps/map_formats.h; nothing here knows about kernels.
#pragma once

#include <string>
#include <vector>

#include "src/core/grid.h"
#include "src/physics/physics_options.h"

namespace espgrid {

struct PotentialMap {
  GridSpec grid;
  std::vector<float> values;  ///< potential in physics.unit, x fastest: i + nx*(j + ny*k)
  PhysicsOptions physics;     ///< unit, medium and pair model the values were computed with
  std::string source;         ///< one line on where the map came from, for file headers
  /// A map espgrid did not compute (read from APBS's or another program's file): who made it
  /// ("APBS", "another program"); empty for espgrid's own. Its physics is then unknown but for
  /// the unit (where `unit_known`), and the files written from it say no more than that.
  std::string foreign;
  bool unit_known = true;
};

}  // namespace espgrid
