#include "src/physics/pair_energy.h"

#include <algorithm>
#include <iterator>
#include <string>

#include "src/core/errors.h"
#include "src/core/thread_count.h"

namespace espgrid {
namespace {

/// Σ_rows Σ_cols qᵢ qⱼ k f(rᵢⱼ), with `upper`: only the columns after the row's own place (the
/// pairs of one group). Rows in parallel, each summed in order, then the rows added in order.
double pair_sum(const Atoms& atoms, const PhysicsOptions& physics, const std::vector<std::int32_t>& rows,
                const std::vector<std::int32_t>& cols, bool upper, int threads) {
  for (const std::vector<std::int32_t>* list : {&rows, &cols})
    for (const std::int32_t i : *list)
      if (i < 0 || static_cast<std::size_t>(i) >= atoms.size())
        throw UsageError("atom index " + std::to_string(i) + " is outside the " + std::to_string(atoms.size()) +
                         " atoms");
  const double k = coulomb_factor(physics);
  const PairParameters pair = pair_parameters(physics);
  const double softening2 = kSofteningLength * kSofteningLength;
  std::vector<double> row_sums(rows.size(), 0.0);
  with_pair_potential(physics.model, [&](auto potential) {
    using Potential = decltype(potential);
    const auto count = static_cast<std::int64_t>(rows.size());
#pragma omp parallel for schedule(dynamic, 16) num_threads(threads_to_use(threads))
    for (std::int64_t r = 0; r < count; ++r) {
      const auto i = static_cast<std::size_t>(rows[static_cast<std::size_t>(r)]);
      const double x = atoms.x[i], y = atoms.y[i], z = atoms.z[i];
      double sum = 0;
      for (std::size_t c = upper ? static_cast<std::size_t>(r) + 1 : 0; c < cols.size(); ++c) {
        const auto j = static_cast<std::size_t>(cols[c]);
        const double dx = x - atoms.x[j], dy = y - atoms.y[j], dz = z - atoms.z[j];
        sum +=
            Potential::template term<HostMath, double>(atoms.charge[j], dx * dx + dy * dy + dz * dz + softening2, pair);
      }
      row_sums[static_cast<std::size_t>(r)] = atoms.charge[i] * sum;
    }
  });
  double total = 0;
  for (const double s : row_sums) total += s;
  return k * total;
}

}  // namespace

double pair_energy(const Atoms& atoms, const PhysicsOptions& physics, const std::vector<std::int32_t>& members,
                   int threads) {
  std::vector<std::int32_t> sorted = members;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    throw UsageError("an atom is listed twice in the group whose energy is asked for");
  return pair_sum(atoms, physics, members, members, true, threads);
}

double pair_interaction(const Atoms& atoms, const PhysicsOptions& physics, const std::vector<std::int32_t>& a,
                        const std::vector<std::int32_t>& b, int threads) {
  std::vector<std::int32_t> sa = a, sb = b;
  std::sort(sa.begin(), sa.end());
  std::sort(sb.begin(), sb.end());
  std::vector<std::int32_t> both;
  std::set_intersection(sa.begin(), sa.end(), sb.begin(), sb.end(), std::back_inserter(both));
  if (!both.empty())
    throw UsageError("the two groups of a binding energy share " + std::to_string(both.size()) +
                     (both.size() == 1 ? " atom" : " atoms") + " (atom " + std::to_string(both.front()) +
                     " first): they must be disjoint");
  return pair_sum(atoms, physics, a, b, false, threads);
}

}  // namespace espgrid
