#include "src/core/atoms.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <numeric>

#include "src/core/thread_count.h"

namespace espgrid {

ElementSymbol ElementSymbol::from(std::string_view symbol) {
  ElementSymbol e;
  if (symbol.empty()) return e;
  e.letters[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(symbol[0])));
  e.letters[1] = symbol.size() > 1 && std::isalpha(static_cast<unsigned char>(symbol[1]))
                     ? static_cast<char>(std::tolower(static_cast<unsigned char>(symbol[1])))
                     : '\0';
  if (!std::isalpha(static_cast<unsigned char>(e.letters[0]))) e = ElementSymbol{};
  return e;
}

std::string ElementSymbol::text() const {
  return letters[1] == '\0' ? std::string(1, letters[0]) : std::string(letters.data(), 2);
}

void Atoms::reserve(std::size_t n) {
  for (auto* v : {&x, &y, &z, &charge, &radius}) v->reserve(n);
  element.reserve(n);
}

void Atoms::push_back(double px, double py, double pz, double q, double r, ElementSymbol e) {
  x.push_back(px);
  y.push_back(py);
  z.push_back(pz);
  charge.push_back(q);
  radius.push_back(r);
  element.push_back(e);
}

double Atoms::total_charge() const noexcept { return std::accumulate(charge.begin(), charge.end(), 0.0); }

BoundingBox bounding_box(const Atoms& atoms, int threads) {
  BoundingBox box{};
  if (atoms.empty()) return box;
  // One pass over the three axes, on every core for a big structure (the 1.93 M-atom capsid's box
  // is asked for several times before its PB solve starts on the device).
  const auto n = static_cast<std::int64_t>(atoms.size());
  double lx = atoms.x[0], ly = atoms.y[0], lz = atoms.z[0], hx = lx, hy = ly, hz = lz;
#pragma omp parallel for schedule(static) if (n >= (1 << 18)) num_threads(threads_to_use(threads)) \
    reduction(min                                                                                  \
              : lx, ly, lz) reduction(max                                                          \
                                      : hx, hy, hz)
  for (std::int64_t i = 0; i < n; ++i) {
    const auto a = static_cast<std::size_t>(i);
    lx = std::min(lx, atoms.x[a]), ly = std::min(ly, atoms.y[a]), lz = std::min(lz, atoms.z[a]);
    hx = std::max(hx, atoms.x[a]), hy = std::max(hy, atoms.y[a]), hz = std::max(hz, atoms.z[a]);
  }
  box.lo[0] = lx, box.lo[1] = ly, box.lo[2] = lz;
  box.hi[0] = hx, box.hi[1] = hy, box.hi[2] = hz;
  return box;
}

namespace {

struct BondiEntry {
  const char* symbol;
  double radius;
};

/// The table's entry for the element, or null.
const BondiEntry* bondi_entry(ElementSymbol element);

}  // namespace

double bondi_radius(ElementSymbol element) {
  const BondiEntry* e = bondi_entry(element);
  return e ? e->radius : 1.70;
}

bool bondi_radius_known(ElementSymbol element) { return bondi_entry(element) != nullptr; }

namespace {

const BondiEntry* bondi_entry(ElementSymbol element) {
  using Entry = BondiEntry;
  // Bondi (1964) van der Waals radii, Å.
  static constexpr Entry kRadii[] = {
      {"H", 1.20},  {"He", 1.40}, {"C", 1.70},  {"N", 1.55},  {"O", 1.52},  {"F", 1.47},  {"Ne", 1.54}, {"Si", 2.10},
      {"P", 1.80},  {"S", 1.80},  {"Cl", 1.75}, {"Ar", 1.88}, {"As", 1.85}, {"Se", 1.90}, {"Br", 1.85}, {"Kr", 2.02},
      {"I", 1.98},  {"Xe", 2.16}, {"Li", 1.82}, {"Na", 2.27}, {"Mg", 1.73}, {"K", 2.75},  {"Ca", 2.31}, {"Ni", 1.63},
      {"Cu", 1.40}, {"Zn", 1.39}, {"Fe", 1.94}, {"Ga", 1.87}, {"Pd", 1.63}, {"Ag", 1.72}, {"Cd", 1.58}, {"In", 1.93},
      {"Sn", 2.17}, {"Pt", 1.75}, {"Au", 1.66}, {"Hg", 1.55}, {"Tl", 1.96}, {"Pb", 2.02}, {"U", 1.86}};
  const std::string s = element.text();
  for (const auto& e : kRadii)
    if (s == e.symbol) return &e;
  return nullptr;
}

}  // namespace

}  // namespace espgrid
