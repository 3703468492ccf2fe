#include "src/pb/pb_pipeline.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <future>
#include <limits>
#include <string>
#include <utility>

#include "src/core/bulk_memory.h"
#include "src/core/errors.h"
#include "src/core/stopwatch.h"
#include "src/core/switches.h"
#include "src/pb/pb_boundary.h"
#include "src/pb/pb_multigrid.h"
#include "src/pb/pb_pipeline_driver.h"
#include "src/pb/pb_slabs.h"
#include "src/pb/pb_solve.h"
#include "src/pb_numerics/pb_geometry.h"

namespace espgrid::pb {
namespace {

int charge_method_code(PbChargeMethod m) {
  switch (m) {
    case PbChargeMethod::Spl0:
      return 0;
    case PbChargeMethod::Spl2:
      return 1;
    case PbChargeMethod::Spl4:
      return 2;
  }
  return 1;
}

/// smol's value of a face of axis d whose 9 neighbourhood flags (node_code's order) are `pattern`:
/// smooth_face on a 3 × 3 × 3 block holding those values around its centre.
double smol_value(int d, unsigned pattern, double solute, double solvent) {
  double arrays[3][27];
  for (auto& a : arrays) std::fill(a, a + 27, solvent);
  double* own = arrays[d];
  double* a = arrays[d == 0 ? 1 : 0];
  double* b = arrays[d == 2 ? 1 : 2];
  const long sx = 1, sy = 3, sz = 9, idx = sx + sy + sz;
  const long su = d == 0 ? sx : (d == 1 ? sy : sz), sv = d == 0 ? sy : sx, sw = d == 2 ? sy : sz;
  double* at[9] = {&own[idx],    &a[idx],      &b[idx],           &a[idx - sv],     &b[idx - sw],
                   &a[idx + su], &b[idx + su], &a[idx + su - sv], &b[idx + su - sw]};
  for (unsigned bit = 0; bit < 9; ++bit) *at[bit] = (pattern >> bit) & 1u ? solute : solvent;
  const long n[3] = {3, 3, 3};
  return smooth_face(own, a, b, d, 1, 1, 1, n, sx, sy, sz);
}

/// The slabs of a grid split over request.devices (one: the whole grid) or over the ranks (this rank's
/// slab alone) and their hierarchies (pb_slabs.h), which the slabs point into.
struct SlabPlan {
  std::vector<MgLevel> global;
  SlabHierarchy hierarchy;
  std::vector<cuda::PbPipelineSlab> slabs;

  SlabPlan(const long* n, const PipelineRequest& request, const MgSettings& settings)
      : global(hierarchy_shape({n[0], n[1], n[2]}, settings)), hierarchy(slab_hierarchy(global, slab_count(request))) {
    const std::vector<long>& cuts = hierarchy.cuts;
    if (request.ranks && cuts.size() != static_cast<std::size_t>(request.ranks->ranks) + 1)
      throw Error("internal error: a PB grid of " + std::to_string(n[2]) + " z-planes split over " +
                  std::to_string(request.ranks->ranks) + " ranks has " + std::to_string(cuts.size() - 1) + " slabs");
    const std::size_t first = request.ranks ? static_cast<std::size_t>(request.ranks->rank) : 0;
    const std::size_t count = request.ranks ? 1 : cuts.size() - 1;
    for (std::size_t s = first; s < first + count; ++s) {
      cuda::PbPipelineSlab& slab = slabs.emplace_back();
      slab.device = request.devices.empty() ? request.device : request.devices[s];
      slab.first_plane = cuts[s];
      slab.end_plane = cuts[s + 1];
      slab.levels = hierarchy.levels[s].data();
      slab.level_count = static_cast<int>(hierarchy.levels[s].size());
    }
  }

  static std::size_t slab_count(const PipelineRequest& request) {
    if (request.ranks) return static_cast<std::size_t>(request.ranks->ranks);
    return request.devices.empty() ? 1 : request.devices.size();
  }
};

}  // namespace

bool pipeline_options(const PbOptions& o) {
  return (o.surface == PbSurface::Mol || o.surface == PbSurface::Smol) && o.sampling < 2 &&
         o.equation == PbEquation::Linearized && o.formulation == PbFormulation::Direct;
}

bool pipeline_applies_on_mesh(const PbOptions& o) {
  return !switched_off("ESPGRID_PB_PIPELINE") && pipeline_options(o) && !uniform_medium(o);
}

bool pipeline_applies(const Atoms& atoms, const GridSpec& grid, const PbOptions& o, int threads) {
  return pipeline_applies_on_mesh(o) && atoms_on_mesh(atoms, grid, threads);
}

std::vector<double> conductance_table(const GridSpec& grid, const PbOptions& o) {
  const AssemblyArgs a = assembly_args(grid, o, false);
  const bool smooth = o.surface == PbSurface::Smol;
  std::vector<double> table(3 * kPatterns);
  for (int d = 0; d < 3; ++d)
    for (unsigned p = 0; p < kPatterns; ++p) {
      const double eps = smooth ? smol_value(d, p, o.solute_dielectric, o.solvent_dielectric)
                                : ((p & 1u) ? o.solute_dielectric : o.solvent_dielectric);
      table[d * kPatterns + p] = eps * a.geo[d];  // assemble_coefficients' product
    }
  return table;
}

AtomCells sas_cell_geometry(const Atoms& atoms, const PbOptions& o) {
  AtomCells c;
  c.cell = max_radius(atoms) + o.probe_radius + 1e-6;
  const BoundingBox box = bounding_box(atoms);
  for (int d = 0; d < 3; ++d) {
    c.lo[d] = box.lo[d];
    c.n[d] = std::max(1L, static_cast<long>(std::ceil((box.hi[d] - box.lo[d]) / c.cell)) + 1);
  }
  return c;
}

std::vector<double> face_values(const std::vector<double>& full, const GridSpec& grid) {
  const std::vector<std::size_t> nodes = boundary_nodes(grid);
  std::vector<double> out(nodes.size());
  for (std::size_t f = 0; f < nodes.size(); ++f) out[f] = full[nodes[f]];
  return out;
}

namespace {

/// The solver's report from the device's result (final once the solve is done, before the copies back).
SolveReport solve_report(const cuda::PbPipelineResult& r, const PbOptions& o) {
  SolveReport solve;
  // Short: the .dx header's source line holds the method, iterations and residual within its width.
  solve.method = std::string("espgrid multigrid-preconditioned CG (CUDA, double precision") +
                 (r.float_cycle ? ", V-cycle in float" : "") + "; the whole map built on the device)";
  solve.device = r.device;
  solve.iterations = r.iterations;
  solve.relative_residual = r.relative_residual;
  solve.setup_seconds = r.inputs_seconds + r.surface_seconds + r.assemble_seconds;
  solve.solve_seconds = r.solve_seconds;
  solve.converged = r.own_residual <= o.tolerance;
  return solve;
}

/// The device's result into `out`: the solve's report, the energy's sum, the peak, the phases (the
/// host's three measured around the device call: preparation, memory check, waiting for the map's memory).
void take_result(const cuda::PbPipelineResult& r, const PbOptions& o, const PipelineRequest& request,
                 const std::array<double, 3>& host, PipelineSolve& out) {
  out.solve = solve_report(r, o);
  out.sas_points = r.sas_points;
  if (request.fixed_charge) out.fixed_charge = r.fixed_charge;
  out.device_peak_bytes = static_cast<double>(r.peak_bytes);
  out.phases = {{"host preparation (tables, hierarchy shape)", host[0]},
                {"GPU memory check (waits for the device's context)", host[1]},
                {"device inputs (atoms, SAS neighbours)", r.inputs_seconds},
                {"device surface", r.surface_seconds},
                {"waiting for the boundary values", r.faces_wait_seconds},
                {"device charges, assembly and hierarchy", r.assemble_seconds},
                {"device solve", r.solve_seconds},
                {"device outputs (with copies)", r.output_seconds},
                {"waiting for the map's host memory (faulted in beside the device)", host[2]},
                {"device call (all, with copies)", r.wall_seconds}};
}

/// The solver's settings and what the run returns: the map's unit, the energy's sum, the map's planes
/// handed on as they land.
void ask_for_the_solve(cuda::PbPipelineInput& in, const PbOptions& o, const MgSettings& settings,
                       const PipelineRequest& request) {
  in.run.smoothing = settings.smoothing;
  in.run.coarsest_sweeps = settings.coarsest_sweeps;
  in.run.tolerance = o.tolerance;
  in.run.max_iterations = o.max_iterations;
  in.unit_scale = request.unit_scale;
  in.fixed_charge_energy = request.fixed_charge;
  if (request.planes_copied)
    in.planes_copied = [&request, &o](const cuda::PbPipelineResult& r, long first, long count) {
      request.planes_copied(solve_report(r, o), first, count);
    };
}

}  // namespace

PipelineSolve solve_with_pipeline(const Atoms& atoms, const GridSpec& grid, const PbOptions& o,
                                  const PipelineRequest& request, std::vector<float>& values) {
  const Stopwatch host_clock;  // the host's share: small tables, the hierarchy's shape
  cuda::PbPipelineInput in;
  in.atoms = {static_cast<long>(atoms.size()),
              atoms.x.data(),
              atoms.y.data(),
              atoms.z.data(),
              atoms.radius.data(),
              atoms.charge.data()};
  for (int d = 0; d < 3; ++d) {
    in.n[d] = static_cast<long>(grid.dims[d]);
    in.origin[d] = grid.origin[d];
    in.spacing[d] = grid.spacing[d];
  }
  in.smooth = o.surface == PbSurface::Smol;
  in.salt = pb_has_ions(o);
  in.probe_radius = o.probe_radius;
  in.ion_radius = pb_ion_radius(o);
  in.cells = sas_cell_geometry(atoms, o);
  ReferenceSphere reference;
  if (o.probe_radius > kNoRadius) reference = reference_sphere(reference_sphere_request(atoms, o));
  in.reference_points = static_cast<long>(reference.x.size());
  in.reference_x = reference.x.data();
  in.reference_y = reference.y.data();
  in.reference_z = reference.z.data();
  const std::vector<double> table = conductance_table(grid, o);
  in.conductances = table.data();
  const AssemblyArgs a = assembly_args(grid, o, false);
  in.mass = a.mass;
  in.zmagic = a.zmagic;
  in.charge_method = charge_method_code(o.charges);
  in.faces = request.faces;
  const MgSettings settings;
  const SlabPlan plan(in.n, request, settings);
  const std::vector<cuda::PbPipelineSlab>& slabs = plan.slabs;
  // ESPGRID_PB_POOL=0: no pool between frames (for measuring what it saves).
  in.workspace = switched_off("ESPGRID_PB_POOL") ? nullptr : request.workspace;
  in.slabs = slabs.data();
  in.slab_count = static_cast<int>(slabs.size());
  in.ranks = request.ranks;
  ask_for_the_solve(in, o, settings, request);
  PipelineSolve out;
  // The map's (and φ's) host memory: every node written, or NaN; sized and its pages faulted in by
  // several cores on a thread of its own while the device works (the 1.93 M-atom capsid's 1 GB map
  // was most of its ~0.2 s of host preparation); the copies back wait for it.
  // Across ranks, a rank other than 0 holds its own planes alone (rank 0 gathers the map).
  const std::size_t plane = grid.dims[0] * grid.dims[1];
  const bool own_planes_only = request.ranks && request.ranks->rank != 0;
  in.host_first_plane = own_planes_only ? slabs[0].first_plane : 0;
  out.first_plane = in.host_first_plane;
  const std::size_t held = own_planes_only ? plane * static_cast<std::size_t>(slabs[0].end_plane - slabs[0].first_plane)
                                           : grid.point_count();
  std::future<void> buffers = std::async(std::launch::async, [&values, &out, &grid, &request, held] {
    assign_poisoned(values, held);
    if (request.potential) assign_poisoned(out.potential, grid.point_count());
  });
  double buffers_wait = 0;
  in.output_buffers = [&buffers, &buffers_wait, &values, &out, &request] {
    const Stopwatch waiting;
    buffers.get();  // rethrows its error (out of memory), if any
    buffers_wait = waiting.seconds();
    return std::pair<float*, double*>{values.data(), request.potential ? out.potential.data() : nullptr};
  };
  const double host_seconds = host_clock.seconds();
  if (request.before_device) request.before_device();
  const double check_seconds = host_clock.seconds() - host_seconds;
  cuda::PbPipelineResult r;
  cuda::run_pb_pipeline(in, r);
  take_result(r, o, request, {host_seconds, check_seconds, buffers_wait}, out);
  return out;
}

PbEnergy energy_from_fixed_charge(const PbOptions& o, PbEnergyLevel level, double fixed_charge,
                                  const PbEnergyTerms& from_coarser) {
  PbEnergy e;
  e.level = level;
  e.temperature = o.temperature;
  if (level == PbEnergyLevel::None) return e;
  if (level != PbEnergyLevel::Total || o.equation != PbEquation::Linearized)
    throw Error("internal error: the device's fixed-charge sum gives the linear equation's total energy only");
  e.from_coarser = from_coarser;
  e.terms.fixed_charge = fixed_charge;
  e.terms += from_coarser;
  e.total = 0.5 * e.terms.fixed_charge;
  return e;
}

}  // namespace espgrid::pb
