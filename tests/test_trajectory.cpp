// Trajectory averages: the exact frame sums (src/compute/frame_sums.h) against an
// independent reference, and their independence of the order and split of the frames.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "src/compute/frame_sums.h"
#include "src/compute/frame_sums_math.h"
#include "src/core/errors.h"
#include "src/physics/pair_energy.h"

namespace espgrid {
namespace {

__extension__ typedef __int128 Int128;  // the reference's own wide integers

/// round(φ · 2^48), ties to even, computed another way: in long double (φ · 2^48 is exact there:
/// 24 significant bits) and rounded by rintl in the default rounding mode.
Int128 reference_quantum(float phi) { return static_cast<Int128>(std::rint(std::ldexp((long double)phi, 48))); }

/// Frames of `points` values of every kind the maps hold: typical potentials, tiny and subnormal
/// values, exact zeros of both signs, values near the 2^31 limit, each sign.
std::vector<std::vector<float>> awkward_frames(int frames, std::size_t points, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::vector<std::vector<float>> out(frames, std::vector<float>(points));
  for (std::size_t p = 0; p < points; ++p) {
    const int kind = static_cast<int>(p % 7);
    const double base = unit(rng);
    for (int f = 0; f < frames; ++f) {
      double v = 0;
      switch (kind) {
        case 0:
          v = 300 * base + unit(rng);
          break;  // a potential and its spread
        case 1:
          v = std::ldexp(unit(rng), -30);
          break;  // below float32's 2^-24 resolution point
        case 2:
          v = std::ldexp(unit(rng), -140);
          break;  // subnormal
        case 3:
          v = (f % 2 ? -0.0 : 0.0);
          break;  // signed zeros
        case 4:
          v = std::ldexp(0.999 + 0.0009 * unit(rng), 31) * (base < 0 ? -1 : 1);
          break;  // near the limit
        case 5:
          v = 1e-3 * base + 1e-9 * unit(rng);
          break;  // tiny spread beside the value
        default:
          v = std::ldexp(unit(rng), static_cast<int>(60 * std::abs(base)) - 40);
          break;  // any scale
      }
      out[f][p] = static_cast<float>(v);
    }
  }
  return out;
}

TEST(FrameSums, MeanAndDeviationEqualAnIndependentReference) {
  const std::size_t points = 700;
  const auto frames = awkward_frames(37, points, 11);
  FrameSums sums(points, true);
  for (const auto& f : frames) sums.add(f.data(), 2);
  ASSERT_EQ(sums.frames(), 37u);
  const std::vector<float> mean = sums.mean(), deviation = sums.deviation();
  for (std::size_t p = 0; p < points; ++p) {
    Int128 s = 0;
    for (const auto& f : frames) s += reference_quantum(f[p]);
    const long double n = frames.size();
    // The mean: the exact sum, scaled once (rounded to long double, then double, then float).
    const float expected_mean = static_cast<float>(static_cast<double>((long double)s * std::ldexp(1.0L, -48) / n));
    EXPECT_EQ(mean[p], expected_mean) << "point " << p;
    // The deviation by two passes over the quantized values in long double: a different
    // formula, so within one float32 step (2^-23 relative) or 2^-60 absolute (tiny deviations).
    const long double centre = (long double)s / n;
    long double m2 = 0;
    for (const auto& f : frames) {
      const long double d = (long double)reference_quantum(f[p]) - centre;
      m2 += d * d;
    }
    const double expected = static_cast<double>(std::sqrt(m2 / n) * std::ldexp(1.0L, -48));
    EXPECT_NEAR(deviation[p], expected, std::max(std::ldexp(std::abs(expected), -23), std::ldexp(1.0, -60)))
        << "point " << p;
    // And against the plain float values: exact to 2^-49 a value (the quantum), so the mean to
    // 2^-49 plus its float32 rounding.
    long double plain = 0;
    for (const auto& f : frames) plain += f[p];
    plain /= n;
    EXPECT_NEAR(mean[p], static_cast<double>(plain), std::ldexp(1.0, -49) + std::ldexp(std::abs((double)plain), -24));
  }
}

TEST(FrameSums, AnyOrderAndAnySplitGiveTheSameBits) {
  const std::size_t points = 333;
  const auto frames = awkward_frames(24, points, 5);
  FrameSums whole(points, true);
  for (const auto& f : frames) whole.add(f.data(), 1);
  std::mt19937 rng(3);
  for (int trial = 0; trial < 6; ++trial) {
    // The frames shuffled and dealt to `parts` accumulators (ranks), merged in a shuffled order.
    std::vector<int> order(frames.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    std::shuffle(order.begin(), order.end(), rng);
    const int parts = 1 + trial;
    std::vector<FrameSums> ranks(parts, FrameSums(points, true));
    for (std::size_t i = 0; i < order.size(); ++i) ranks[i % parts].add(frames[order[i]].data(), 2);
    std::vector<int> merge_order(parts);
    for (int r = 0; r < parts; ++r) merge_order[r] = r;
    std::shuffle(merge_order.begin(), merge_order.end(), rng);
    FrameSums total(points, true);
    for (int r : merge_order) total.merge(ranks[r]);
    EXPECT_EQ(total.frames(), whole.frames());
    EXPECT_EQ(total.limbs(), whole.limbs()) << parts << " parts";
    EXPECT_EQ(total.mean(), whole.mean());
    EXPECT_EQ(total.deviation(), whole.deviation());
  }
}

TEST(FrameSums, IdenticalFramesHaveZeroDeviationAndTheirOwnValue) {
  const std::vector<float> frame = {0.0f, 1.0f, -3.25f, 1e-3f, -123456.7f, 6e-8f, 2147483520.0f};
  FrameSums sums(frame.size(), true);
  for (int f = 0; f < 1000; ++f) sums.add(frame.data());
  const std::vector<float> mean = sums.mean(), deviation = sums.deviation();
  for (std::size_t p = 0; p < frame.size(); ++p) {
    EXPECT_EQ(mean[p], frame[p]) << p;  // every value ≥ 2^-24 is a whole number of quanta
    EXPECT_EQ(deviation[p], 0.0f) << p;
  }
}

TEST(FrameSums, RoundingToTheQuantumIsToNearestEven) {
  EXPECT_EQ(frame_sums::quantize(std::ldexp(1.0f, -49)).lo, 0u);  // ½ → 0
  EXPECT_EQ(frame_sums::quantize(std::ldexp(3.0f, -49)).lo, 2u);  // 1½ → 2
  EXPECT_EQ(frame_sums::quantize(std::ldexp(5.0f, -49)).lo, 2u);  // 2½ → 2
  EXPECT_EQ(frame_sums::quantize(std::ldexp(1.0f, -48)).lo, 1u);
  const frame_sums::Quantized big = frame_sums::quantize(-std::ldexp(1.0f, 30));  // 2^78
  EXPECT_TRUE(big.ok && big.negative && big.lo == 0 && big.hi == (std::uint64_t{1} << 14));
  EXPECT_FALSE(frame_sums::quantize(std::ldexp(1.0f, 31)).ok);
}

TEST(FrameSums, ABadValueIsAnErrorNamingThePointAndAddsNothing) {
  std::vector<float> frame(50, 1.5f);
  FrameSums sums(frame.size(), true);
  sums.add(frame.data());
  const std::vector<std::uint64_t> before = sums.limbs();
  for (const float bad :
       {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(), -std::ldexp(1.0f, 31)}) {
    frame[17] = bad;
    frame[31] = bad;
    try {
      sums.add(frame.data());
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("at point 17"), std::string::npos) << e.what();
    }
    EXPECT_EQ(sums.limbs(), before);
    EXPECT_EQ(sums.frames(), 1u);
  }
}

}  // namespace
}  // namespace espgrid

namespace espgrid {
namespace {

Atoms random_atoms(std::size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> box(-12.0, 12.0), charge(-1.0, 1.0);
  Atoms atoms;
  for (std::size_t i = 0; i < n; ++i) atoms.push_back(box(rng), box(rng), box(rng), charge(rng), 1.5);
  return atoms;
}

/// ½ Σᵢ qᵢ φ_others(rᵢ) written the other way round: every ordered pair (i ≠ j), halved, in long
/// double, with the model's f written out here (Coulomb 1/r, Debye e^(−κr)/r) and the maps' softening.
long double reference_energy(const Atoms& atoms, const std::vector<std::int32_t>& members, double k, double kappa) {
  long double sum = 0;
  for (const std::int32_t i : members)
    for (const std::int32_t j : members) {
      if (i == j) continue;
      const long double dx = atoms.x[i] - atoms.x[j], dy = atoms.y[i] - atoms.y[j], dz = atoms.z[i] - atoms.z[j];
      const long double r = std::sqrt(dx * dx + dy * dy + dz * dz + kSofteningLength * kSofteningLength);
      sum += atoms.charge[i] * atoms.charge[j] * std::exp(-kappa * r) / r;
    }
  return 0.5L * k * sum;
}

TEST(PairEnergy, EqualsHalfTheSumOfEachChargeTimesTheOthersPotential) {
  const Atoms atoms = random_atoms(300, 7);
  std::vector<std::int32_t> all(atoms.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::int32_t>(i);
  for (const PairModel model : {PairModel::Coulomb, PairModel::Debye}) {
    PhysicsOptions physics;
    physics.model = model;
    physics.dielectric = 4.0;
    physics.ionic_strength = model == PairModel::Debye ? 0.15 : 0.0;
    const double kappa = model == PairModel::Debye ? pair_parameters(physics).kappa : 0.0;
    const long double expected = reference_energy(atoms, all, coulomb_factor(physics), kappa);
    const double e = pair_energy(atoms, physics, all, 2);
    // Double sums of ~45,000 terms against long double: 1e-12 of the sum of |terms| bounds their
    // rounding; κ enters as float (the kernels' PairParameters), so Debye compares at 1e-6.
    const double tolerance = (model == PairModel::Debye ? 1e-6 : 1e-11) * std::abs(static_cast<double>(expected));
    EXPECT_NEAR(e, static_cast<double>(expected), tolerance) << model_name(model);
  }
}

TEST(PairEnergy, TheSameForAnyThreadCountAndTheInteractionIsComplexMinusParts) {
  const Atoms atoms = random_atoms(257, 9);
  PhysicsOptions physics;
  std::vector<std::int32_t> a, b, both;
  for (std::int32_t i = 0; i < 257; ++i) {
    (i % 3 ? a : b).push_back(i);
    both.push_back(i);
  }
  const double one = pair_energy(atoms, physics, both, 1);
  EXPECT_EQ(pair_energy(atoms, physics, both, 2), one);  // rows summed in order: not a tolerance
  EXPECT_EQ(pair_energy(atoms, physics, both, 3), one);
  const double ea = pair_energy(atoms, physics, a, 2), eb = pair_energy(atoms, physics, b, 2);
  const double cross = pair_interaction(atoms, physics, a, b, 2);
  // The same pairs grouped differently: the double sums' rounding, ~1e-13 of the terms' scale.
  EXPECT_NEAR(one, ea + eb + cross, 1e-11 * (std::abs(ea) + std::abs(eb) + std::abs(cross)));
  EXPECT_THROW(pair_interaction(atoms, physics, a, {a.front()}, 2), UsageError);
  EXPECT_THROW(pair_energy(atoms, physics, {1, 1}, 2), UsageError);
}

}  // namespace
}  // namespace espgrid
