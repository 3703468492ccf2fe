// A PB grid split over devices by z-planes (issue 33; kernels/pb/pb_pipeline.cu's slabs): where the
// grid is cut, a slab's face values, and a slab's codes and spread charges against the whole
// grid's, bit for bit, by the pipeline's CPU emulation; on a GPU, the map of several slabs (on one
// device, and on two where there are two) against the one-slab map, and the refusal of what the
// slabs do not run; the map's planes handed on as they are copied back (for writing the file beside).
// The CUDA cases skip without a GPU (ESPGRID_REQUIRE_GPU=1 makes them fail).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "src/core/errors.h"
#include "src/pb/pb_boundary.h"
#include "src/pb/pb_multigrid.h"
#include "src/pb/pb_pipeline.h"
#include "src/pb/pb_slabs.h"
#include "src/pb/pb_solve.h"
#include "src/pipeline/map_pipeline.h"
#include "src/registry/kernel_registry.h"
#include "tests/pb_test_support.h"
#include "tests/test_support.h"

namespace espgrid {
namespace {

using testing::grid_around;

TEST(PbSlabs, CutsShareThePlanesEquallyAndKeepSlabsThick) {
  EXPECT_EQ(pb::slab_cuts(100, 1), (std::vector<long>{0, 100}));
  EXPECT_EQ(pb::slab_cuts(100, 2), (std::vector<long>{0, 50, 100}));
  EXPECT_EQ(pb::slab_cuts(101, 3), (std::vector<long>{0, 33, 67, 101}));
  // Thinner than kMinSlabPlanes a slab: fewer slabs.
  EXPECT_EQ(pb::slab_cuts(2 * pb::kMinSlabPlanes - 1, 4).size(), 2u);
  EXPECT_EQ(pb::slab_cuts(2 * pb::kMinSlabPlanes, 4).size(), 3u);
  for (const long planes : {5L, 33L, 161L, 629L})
    for (std::size_t devices = 1; devices <= 8; ++devices) {
      const std::vector<long> cuts = pb::slab_cuts(planes, devices);
      ASSERT_GE(cuts.size(), 2u);
      EXPECT_EQ(cuts.front(), 0);
      EXPECT_EQ(cuts.back(), planes);
      for (std::size_t s = 0; s + 1 < cuts.size(); ++s)
        if (cuts.size() > 2) EXPECT_GE(cuts[s + 1] - cuts[s], pb::kMinSlabPlanes) << planes << " / " << devices;
    }
}

TEST(PbSlabs, EverySlabsLevelsHoldWhatItsCycleReads) {
  // What kernels/pb/pb_slab_solver.cuh relies on, for every level of every slab: the owned planes
  // partition the level; a split level's slab owns enough planes; the z maps in the slab's plane
  // numbers are the whole grid's; and every fine plane an owned coarse plane's restriction and
  // operator read (fine_of[K] − 1 .. fine_of[K + 1] − 1, and fine_of[K] + 1), and every coarse plane an owned fine
  // plane's prolongation reads, is in the slab's arrays (its planes or its halo).
  const pb::MgSettings settings;
  for (const long planes : {33L, 64L, 97L, 161L, 250L, 629L})
    for (std::size_t devices = 2; devices <= 4; ++devices) {
      const std::vector<pb::MgLevel> global = pb::hierarchy_shape({5, 6, planes}, settings);
      const pb::SlabHierarchy h = pb::slab_hierarchy(global, devices);
      const std::size_t slabs = h.cuts.size() - 1, levels = global.size();
      const std::string what = std::to_string(planes) + " planes, " + std::to_string(slabs) + " slabs";
      if (slabs < 2) continue;
      ASSERT_GE(h.gathered_level, 1u) << what;
      ASSERT_LT(h.gathered_level, levels) << what;
      for (std::size_t l = 0; l < levels; ++l) {
        EXPECT_EQ(h.own_first[l][0], 0) << what;
        EXPECT_EQ(h.own_end[l][slabs - 1], global[l].n[2]) << what;
        for (std::size_t s = 0; s + 1 < slabs; ++s) EXPECT_EQ(h.own_end[l][s], h.own_first[l][s + 1]) << what;
      }
      for (std::size_t s = 0; s < slabs; ++s)
        for (std::size_t l = 1; l <= h.gathered_level; ++l) {
          const cuda::PbMgLevel &v = h.levels[s][l], &up = h.levels[s][l - 1];
          const pb::MgAxis& z = global[l].axes[2];
          ASSERT_TRUE(v.coarsened[2]) << what << ", level " << l;
          if (l < h.gathered_level) EXPECT_GE(h.own_end[l][s] - h.own_first[l][s], pb::kMinSlabLevelPlanes) << what;
          const auto in_fine = [&](long f) { return f >= up.plane_offset && f < up.plane_offset + up.n[2]; };
          const auto in_coarse = [&](long k) { return k >= v.plane_offset && k < v.plane_offset + v.n[2]; };
          for (long k = h.own_first[l][s]; k < h.own_end[l][s]; ++k) {
            const long f = z.fine_of[static_cast<std::size_t>(k)];
            EXPECT_EQ(v.fine_of[2][k - v.plane_offset] + up.plane_offset, f) << what;
            // The faces in series up to the next coarse plane's fine plane (not included), and f ± 1.
            const long next = k + 1 < global[l].n[2] ? z.fine_of[static_cast<std::size_t>(k) + 1] : f + 1;
            const long last = std::max(f + 1, next - 1);
            for (long g = std::max(f - 1, 0L); g <= std::min(last, global[l - 1].n[2] - 1); ++g)
              EXPECT_TRUE(in_fine(g)) << what << ", slab " << s << " level " << l << " plane " << k << " reads " << g;
          }
          for (long f = h.own_first[l - 1][s]; f < h.own_end[l - 1][s]; ++f) {
            if (f == 0 || f == global[l - 1].n[2] - 1) continue;  // the faces: not prolonged to
            const long k = z.coarse_lo[static_cast<std::size_t>(f)];
            EXPECT_EQ(v.coarse_lo[2][f - up.plane_offset] + v.plane_offset, k) << what;
            EXPECT_TRUE(in_coarse(k)) << what << ", slab " << s << " level " << l << " plane " << f;
            if (z.mid[static_cast<std::size_t>(f)]) EXPECT_TRUE(in_coarse(k + 1)) << what << ", plane " << f;
          }
        }
    }
}

TEST(PbSlabs, FaceValuesAreTheWholeGridsAndZeroOnTheCuts) {
  const long whole[3] = {6, 7, 40};
  std::vector<double> faces(static_cast<std::size_t>(pb::face_node_count(whole)));
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> value(0.5, 2.0);  // never 0: a copied value cannot pass as a cut's
  for (double& v : faces) v = value(rng);
  struct Slab {
    long first, planes;
  };
  for (const Slab s : {Slab{0, 40}, Slab{0, 21}, Slab{19, 21}, Slab{11, 13}}) {
    const long n[3] = {whole[0], whole[1], s.planes};
    std::vector<double> mine(static_cast<std::size_t>(pb::face_node_count(n)), -1.0);
    pb::slab_face_values(faces.data(), whole[2], n, s.first, mine.data());
    for (long k = 0; k < n[2]; ++k)
      for (long j = 0; j < n[1]; ++j)
        for (long i = 0; i < n[0]; ++i) {
          if (!pb::on_faces(n, i, j, k)) continue;
          const double got = mine[static_cast<std::size_t>(pb::face_index(n, i, j, k))];
          const long kk = k + s.first;
          if (pb::on_faces(whole, i, j, kk))
            EXPECT_EQ(got, faces[static_cast<std::size_t>(pb::face_index(whole, i, j, kk))])
                << i << "," << j << "," << kk;
          else
            EXPECT_EQ(got, 0.0) << "cut plane " << kk;
        }
  }
}

/// Every window's codes and charges are the whole grid's planes, bit for bit.
void expect_slabs_are_the_whole_grids(const Atoms& atoms, const GridSpec& g, const PbOptions& o,
                                      const std::string& what) {
  const long n2 = static_cast<long>(g.dims[2]);
  const std::size_t plane = g.dims[0] * g.dims[1];
  const pb::PipelineEmulation whole = pb::emulate_slab(atoms, g, o, 0, n2);
  struct Window {
    long first, planes;
  };
  // The first and last planes (a slab with the grid's face), the middle, one plane, a cut through the molecule.
  for (const Window w :
       {Window{0, 9}, Window{n2 - 8, 8}, Window{n2 / 2 - 5, 11}, Window{n2 / 2, 1}, Window{3, n2 - 6}}) {
    const pb::PipelineEmulation slab = pb::emulate_slab(atoms, g, o, w.first, w.planes);
    const std::size_t begin = plane * static_cast<std::size_t>(w.first),
                      count = plane * static_cast<std::size_t>(w.planes);
    ASSERT_EQ(slab.codes.size(), count);
    const std::vector<std::uint32_t> codes(whole.codes.begin() + begin, whole.codes.begin() + begin + count);
    const std::vector<double> charge(whole.charge.begin() + begin, whole.charge.begin() + begin + count);
    EXPECT_EQ(slab.codes, codes) << what << ", planes " << w.first << " + " << w.planes;
    EXPECT_EQ(slab.charge, charge) << what << ", planes " << w.first << " + " << w.planes;
    // Only atoms that reach the window keep their SAS lists.
    EXPECT_LE(slab.neighbours.atoms.size(), whole.neighbours.atoms.size()) << what;
  }
  std::size_t mass = 0;
  for (const std::uint32_t c : whole.codes) mass += (c >> pb::kMassBit) & 1u;
  EXPECT_GT(mass, 0u) << what << ": no ion-accessible node";
  EXPECT_GT(whole.sas_points, 0u) << what << ": no open SAS point";
}

TEST(PbSlabs, ASlabsCodesAndChargesAreTheWholeGridsPlanes) {
  const Atoms fas = testing::load_molecule("fasciculin2.pqr");
  const GridSpec g = grid_around(fas, 1.0, 6);
  for (const PbSurface s : {PbSurface::Smol, PbSurface::Mol})
    for (const PbChargeMethod m : {PbChargeMethod::Spl2, PbChargeMethod::Spl0, PbChargeMethod::Spl4}) {
      PbOptions o;
      o.surface = s;
      o.charges = m;
      expect_slabs_are_the_whole_grids(fas, g, o, surface_name(s) + " " + charge_method_name(m));
    }
  // Unequal spacings and a wide probe: a window's reach test has to hold on the longest axis.
  GridSpec skew = grid_around(fas, 0.9, 5, 1);
  skew.spacing = {0.9, 0.8, 1.1};
  PbOptions o;
  o.probe_radius = 2.0;
  expect_slabs_are_the_whole_grids(fas, skew, o, "skewed spacings, probe 2 A");
}

TEST(PbSlabs, WhatTheSlabsDoNotRunIsRefusedNamingTheRemedy) {
  const Atoms fas = testing::load_molecule("fasciculin2.pqr");
  MapRequest request;
  request.grid = grid_around(fas, 1.2, 7);
  request.physics.method = MapMethod::PoissonBoltzmann;
  request.physics.pb.equation = PbEquation::Nonlinear;  // the pipeline solves the linear equation only
  request.compute.run.devices = {0, 1};
  const KernelSelection kernel{&default_kernel(Backend::Cpu), "test", 0};
  try {
    compute_map(fas, request, kernel);
    FAIL() << "--model pb --pb-equation npbe over two devices was not refused";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("device pipeline only"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--device N"), std::string::npos) << e.what();
  }
}

// ---- on a GPU: several slabs against one -------------------------------------------------------------

/// The relative RMS difference of two potentials.
double relative_rms(const std::vector<double>& a, const std::vector<double>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return std::sqrt(num / den);
}

/// The map on `devices` (a slab each) against the one-slab map, both solved to 1e-10: the two
/// CGs stop at residuals ≤ 1e-10 of ‖b‖ and the operator's condition number on these grids is
/// ~1e3, so their solutions differ by ≲ 1e-7 relative (allowed: 1e-6; measured with block Jacobi
/// across the cuts, 7e-11 – 9.5e-11).
void expect_slabs_give_the_one_slab_map(const std::vector<int>& devices) {
  const Atoms fas = testing::load_molecule("fasciculin2.pqr");
  const GridSpec g = grid_around(fas, 0.6, 8, 1);  // odd plane count, cuts through the protein
  for (const PbChargeMethod m : {PbChargeMethod::Spl2, PbChargeMethod::Spl4}) {
    PbOptions o;
    o.charges = m;
    o.tolerance = 1e-10;
    o.max_iterations = 500;
    PbRun run;
    run.solver = PbSolver::CudaMultigrid;
    run.keep_potential = true;
    const PbResult one = solve_pb(fas, g, o, run);
    run.devices = devices;
    const PbResult split = solve_pb(fas, g, o, run);
    const std::string what = std::to_string(devices.size()) + " slabs, " + charge_method_name(m);
    ASSERT_NE(split.solve.device.find(std::to_string(devices.size()) + " slabs"), std::string::npos)
        << what << ": " << split.solve.device;
    ASSERT_EQ(split.values.size(), one.values.size());
    std::size_t bad = 0;
    for (const float v : split.values) bad += !std::isfinite(v);  // every plane written (poisoned first)
    EXPECT_EQ(bad, 0u) << what;
    EXPECT_LE(relative_rms(split.potential, one.potential), 1e-6) << what;
    EXPECT_LE(split.solve.relative_residual, 1e-10) << what;  // recomputed across the cuts
    EXPECT_EQ(split.sas_points, one.sas_points) << what;      // each atom's points counted once
    // The slabs' V-cycle is the whole grid's, node for node (kernels/pb/pb_slab_solver.cuh); only the
    // dot products add in another order, so CG takes the same iterations, give or take one.
    EXPECT_NEAR(split.solve.iterations, one.solve.iterations, 1) << what;
    std::cout << "[ slabs    ] " << what << ": " << one.solve.iterations << " -> " << split.solve.iterations
              << " iterations, relative RMS " << relative_rms(split.potential, one.potential) << "\n";
  }
  // The energy the device sums itself (spl2 total: Σ φ·q over each slab's own planes).
  PbOptions o;
  o.energy.level = PbEnergyLevel::Total;
  o.tolerance = 1e-10;
  o.max_iterations = 500;
  PbRun run;
  run.solver = PbSolver::CudaMultigrid;
  const PbResult one = solve_pb(fas, g, o, run);
  run.devices = devices;
  const PbResult split = solve_pb(fas, g, o, run);
  EXPECT_NEAR(split.energy.total, one.energy.total, 1e-7 * std::fabs(one.energy.total));
}

/// The map's planes handed on as the device copies them back (PbRun::planes_solved, the device
/// pipeline): every plane once, in more runs than slabs (a quarter of a slab at most), each run
/// holding its final values when handed on, with the solve's final report; the map the same bits as
/// the same solve into PbResult::values (the pipeline is deterministic: its dot products in fixed
/// blocks, no atomics in the values). An unconverged solve's runs say so, and it throws.
void expect_planes_handed_on_final(const std::vector<int>& devices) {
  const Atoms fas = testing::load_molecule("fasciculin2.pqr");
  const GridSpec g = grid_around(fas, 0.6, 8, 1);
  const std::string what = std::to_string(std::max<std::size_t>(devices.size(), 1)) + " slab(s)";
  PbOptions o;
  PbRun run;
  run.solver = PbSolver::CudaMultigrid;
  run.devices = devices;
  const PbResult whole = solve_pb(fas, g, o, run);
  const std::size_t plane = g.dims[0] * g.dims[1], planes = g.dims[2];
  std::vector<float> map;
  std::mutex mutex;
  std::vector<int> reported(planes, 0);
  std::vector<std::vector<float>> seen(planes);
  std::vector<pb::SolveReport> reports;
  run.map_values = &map;
  run.planes_solved = [&](const pb::SolveReport& solve, long first, long count) {
    const std::lock_guard<std::mutex> lock(mutex);
    reports.push_back(solve);
    if (map.size() != g.point_count() || first < 0 || count < 1 || static_cast<std::size_t>(first + count) > planes) {
      ADD_FAILURE() << what << ": planes " << first << "+" << count << " handed on, the map holding " << map.size();
      return;
    }
    for (long k = first; k < first + count; ++k) {
      ++reported[static_cast<std::size_t>(k)];
      seen[static_cast<std::size_t>(k)].assign(map.begin() + static_cast<std::ptrdiff_t>(k * plane),
                                               map.begin() + static_cast<std::ptrdiff_t>((k + 1) * plane));
    }
  };
  const PbResult streamed = solve_pb(fas, g, o, run);
  EXPECT_TRUE(streamed.values.empty()) << what;
  ASSERT_EQ(map.size(), whole.values.size()) << what;
  EXPECT_TRUE(std::memcmp(map.data(), whole.values.data(), map.size() * sizeof(float)) == 0) << what;
  EXPECT_GT(reports.size(), std::max<std::size_t>(devices.size(), 1)) << what;
  for (std::size_t k = 0; k < planes; ++k) {
    ASSERT_EQ(reported[k], 1) << what << ": plane " << k;
    EXPECT_TRUE(std::memcmp(seen[k].data(), map.data() + k * plane, plane * sizeof(float)) == 0)
        << what << ": plane " << k << " changed after it was handed on";
  }
  for (const pb::SolveReport& r : reports) {
    EXPECT_TRUE(r.converged) << what;
    EXPECT_EQ(r.method, streamed.solve.method) << what;
    EXPECT_EQ(r.iterations, streamed.solve.iterations) << what;
    EXPECT_EQ(r.relative_residual, streamed.solve.relative_residual) << what;
  }
  // Two iterations cannot reach 1e-12: the runs are handed on unconverged, and the solve throws.
  o.tolerance = 1e-12;
  o.max_iterations = 2;
  reports.clear();
  std::fill(reported.begin(), reported.end(), 0);
  map.clear();
  EXPECT_THROW(solve_pb(fas, g, o, run), Error) << what;
  EXPECT_FALSE(reports.empty()) << what;
  for (const pb::SolveReport& r : reports) EXPECT_FALSE(r.converged) << what;
}

TEST(PbSlabsGpu, TheMapsPlanesAreHandedOnFinalAsTheyAreCopiedBack) {
  ESPGRID_REQUIRE_CUDA_OR_SKIP();
  expect_planes_handed_on_final({});
  expect_planes_handed_on_final({0, 0});
}

TEST(PbSlabsGpu, SlabsOnOneDeviceGiveTheOneSlabMap) {
  ESPGRID_REQUIRE_CUDA_OR_SKIP();
  expect_slabs_give_the_one_slab_map({0, 0});
  expect_slabs_give_the_one_slab_map({0, 0, 0});
}

TEST(PbSlabsGpu, SlabsOnTwoDevicesGiveTheOneSlabMap) {
  std::vector<int> devices;
  ESPGRID_REQUIRE_GPUS_OR_SKIP(2, devices);
  expect_slabs_give_the_one_slab_map({devices[0], devices[1]});
}

}  // namespace
}  // namespace espgrid
