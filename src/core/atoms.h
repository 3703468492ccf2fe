// Atoms as structure-of-arrays, as the readers return them and the kernels consume them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace espgrid {

/// A chemical element symbol of one or two letters ("C", "Cl"), or "X" when unknown. Two
/// bytes per atom: a million-atom structure keeps its elements in 2 MB.
struct ElementSymbol {
  std::array<char, 2> letters{'X', '\0'};
  static ElementSymbol from(std::string_view symbol);  ///< first two characters, capitalized as "Cl"
  std::string text() const;
  friend bool operator==(const ElementSymbol& a, const ElementSymbol& b) { return a.letters == b.letters; }
};

struct Atoms {
  std::vector<double> x, y, z;  ///< positions, Å
  std::vector<double> charge;   ///< partial charges, e
  std::vector<double> radius;   ///< radii, Å (PQR column; element radius for XYZ)
  /// Element of each atom, for drawing only (bonds, hydrogens); never used by the physics.
  /// The readers' rule: XYZ species as written; PQR from the atom name (see structure/pqr_reader.cpp).
  std::vector<ElementSymbol> element;

  std::size_t size() const noexcept { return x.size(); }
  bool empty() const noexcept { return x.empty(); }
  void reserve(std::size_t n);
  void push_back(double px, double py, double pz, double q, double r, ElementSymbol e = {});
  /// Sum of the charges, e.
  double total_charge() const noexcept;
};

/// Axis-aligned bounding box of the atom centres, Å.
struct BoundingBox {
  double lo[3];
  double hi[3];
};
/// The atoms' box (zeros for none); `threads`: OpenMP threads for a large structure (0: all).
BoundingBox bounding_box(const Atoms& atoms, int threads = 0);

/// Bondi van der Waals radius of an element, Å; 1.70 (carbon-like) for elements not in the table.
double bondi_radius(ElementSymbol element);
/// Whether bondi_radius has the element in its table (else it answers 1.70 Å).
bool bondi_radius_known(ElementSymbol element);

}  // namespace espgrid
