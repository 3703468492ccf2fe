#include "src/atoms.h"

#include <algorithm>
#include <numeric>

namespace espgrid {

void Atoms::reserve(std::size_t n) {
  for (auto* v : {&x, &y, &z, &charge, &radius}) v->reserve(n);
}

void Atoms::push_back(double px, double py, double pz, double q, double r) {
  x.push_back(px);
  y.push_back(py);
  z.push_back(pz);
  charge.push_back(q);
  radius.push_back(r);
}

double Atoms::total_charge() const noexcept {
  return std::accumulate(charge.begin(), charge.end(), 0.0);
}

BoundingBox bounding_box(const Atoms& atoms) {
  BoundingBox box{};
  const std::vector<double>* axes[3] = {&atoms.x, &atoms.y, &atoms.z};
  for (int a = 0; a < 3; ++a) {
    if (axes[a]->empty()) continue;
    auto [lo, hi] = std::minmax_element(axes[a]->begin(), axes[a]->end());
    box.lo[a] = *lo;
    box.hi[a] = *hi;
  }
  return box;
}

}  // namespace espgrid
