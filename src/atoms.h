// Atoms as structure-of-arrays, as the readers return them and the kernels consume them.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace espgrid {

struct Atoms {
  std::vector<double> x, y, z;  ///< positions, Å
  std::vector<double> charge;   ///< partial charges, e
  std::vector<double> radius;   ///< radii, Å (PQR column; element radius for XYZ)

  std::size_t size() const noexcept { return x.size(); }
  bool empty() const noexcept { return x.empty(); }
  void reserve(std::size_t n);
  void push_back(double px, double py, double pz, double q, double r);
  /// Sum of the charges, e.
  double total_charge() const noexcept;
};

/// Axis-aligned bounding box of the atom centres, Å.
struct BoundingBox {
  double lo[3];
  double hi[3];
};
BoundingBox bounding_box(const Atoms& atoms);

}  // namespace espgrid
