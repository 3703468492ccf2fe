// The device PB pipeline's host side (issue 33): the GPU builds the whole map from the atoms
// (src/pb/pb_pipeline_driver.h: the SAS neighbour search, the surface, the spread charges, the
// system, the hierarchy, the solve); the host reads the atoms, computes a few small tables and the
// boundary values on the faces (a direct sum on the GPU, beside), and writes the map.
//
// It runs for what it reproduces exactly: mol or smol (the default), the linear equation, the
// Direct formulation, every atom on the mesh, any chgm and bcfl. Its map is the all-on-device
// path's (kernels/pb/pb_multigrid.cu) node for node: the same surface and charges as the host's, bit
// for bit, and the same solver arithmetic. ESPGRID_PB_PIPELINE=0 turns it off (that path runs).
//
// Its CPU emulation (emulate_pipeline) runs each device step with the same per-item code
// (pb_pipeline_math.h); the tests compare it with the host's builders and solver.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "src/compute/compute_timing.h"
#include "src/core/atoms.h"
#include "src/core/grid.h"
#include "src/pb/pb_cuda_driver.h"
#include "src/pb/pb_energy.h"
#include "src/pb/pb_rank_link.h"
#include "src/pb/pb_system.h"
#include "src/pb_numerics/pb_pipeline_math.h"
#include "src/pb_surface/pb_coefficients.h"
#include "src/physics/pb_options.h"

namespace espgrid::pb {

/// Whether the pipeline's physics covers these options: mol/smol without the sampled surface, the
/// linear equation, the Direct formulation (pipeline_applies adds the medium, the atoms and the switch).
bool pipeline_options(const PbOptions& options);

/// Whether the pipeline reproduces these options (mol/smol, lpbe, Direct; a medium that is not
/// uniform) with these atoms on this grid (every atom strictly inside it), and it is not turned off.
bool pipeline_applies(const Atoms& atoms, const GridSpec& grid, const PbOptions& options, int threads = 0);
/// The same for atoms already known to lie on the mesh (atoms_on_mesh: a plan whose maps are not the
/// host's has asked it), without asking again.
bool pipeline_applies_on_mesh(const PbOptions& options);

/// The face conductances, Å, of each 9-bit face pattern (pb_pipeline_math.h node_code), axis by
/// axis (3 × kPatterns): smol's harmonic mean as pb::smooth_face computes it (mol: the face's own
/// value), times the face's area over its length, as assemble_system multiplies them.
std::vector<double> conductance_table(const GridSpec& grid, const PbOptions& options);

/// The SAS search's cell geometry: the host's (pb_coefficients.cpp CellList): the atoms' bounding
/// box, cells of r_max + probe (+ 1e-6 Å). Lists not filled.
AtomCells sas_cell_geometry(const Atoms& atoms, const PbOptions& options);

/// The boundary values of a full-grid array at the face nodes only (boundary_nodes' order).
std::vector<double> face_values(const std::vector<double>& full, const GridSpec& grid);

/// What the pipeline gives solve_pb.
struct PipelineSolve {
  SolveReport solve;
  std::vector<PhaseTiming> phases;
  std::size_t sas_points = 0;
  std::vector<double> potential;       ///< φ, kT/e (when asked for)
  std::optional<double> fixed_charge;  ///< Σ φ·q over the nodes, kT (when asked for)
  double device_peak_bytes = 0;
  long first_plane = 0;  ///< the map's first z-plane in `values` (across ranks, on ranks other than 0: theirs)
};

/// What a pipeline run is asked for.
struct PipelineRequest {
  int device = 0;
  /// Several: the grid split by z-planes, a slab per entry in order (the same device may repeat:
  /// several slabs on one GPU, as the tests run them); empty: `device` alone.
  std::vector<int> devices;
  /// The grid split over MPI ranks (`device` runs this rank's slab; `devices` empty). Rank 0's `values`
  /// get the whole map, the others' their own planes alone (PipelineSolve::first_plane); φ in double is
  /// not returned.
  const PbRankLink* ranks = nullptr;
  double unit_scale = 1;                         ///< kT/e → the map's unit
  bool potential = false;                        ///< return φ in double
  bool fixed_charge = false;                     ///< return APBS's spl2 Σ φ·q instead of φ
  std::function<std::vector<double>()> faces;    ///< the face values, kT/e (boundary_nodes' order)
  cuda::PbDeviceWorkspace* workspace = nullptr;  ///< buffers kept between frames on one grid (optional)
  /// Called after the host's preparation, before anything of the grid's size is allocated on the
  /// device (optional): the GPU's memory check, which waits for the device's context, so that a
  /// context made beside (a process's first, ~0.1 s) overlaps the host's share.
  std::function<void()> before_device;
  /// Called as runs of the map's planes land in `values` (whole-grid plane numbers, each plane once,
  /// any order, possibly from several threads at once), with the solve's report (final): for writing
  /// the map's file beside the copies. Optional; one process only (not called across ranks).
  std::function<void(const SolveReport& solve, long first_plane, long count)> planes_copied;
};

/// Runs the pipeline; `values` (the map, run.unit) is sized and written.
PipelineSolve solve_with_pipeline(const Atoms& atoms, const GridSpec& grid, const PbOptions& options,
                                  const PipelineRequest& request, std::vector<float>& values);

/// APBS's energy from the fixed-charge sum alone (the linear equation: total = ½ qf), as apbs_energy
/// gives it at `level` None or Total.
PbEnergy energy_from_fixed_charge(const PbOptions& options, PbEnergyLevel level, double fixed_charge,
                                  const PbEnergyTerms& from_coarser);

/// The pipeline's steps on the CPU, with the device's per-item code (for tests).
struct PipelineEmulation {
  SasNeighbours neighbours;          ///< the device's lists (closest first)
  std::vector<std::uint32_t> codes;  ///< every node's code
  std::vector<double> charge;        ///< gathered per node, e
  std::size_t sas_points = 0;        ///< open SAS points
  PbSystem system;                   ///< decoded from the codes: what the device solves
};
PipelineEmulation emulate_pipeline(const Atoms& atoms, const GridSpec& grid, const PbOptions& options,
                                   const std::vector<double>& faces);
/// A slab's steps (a grid split over devices): the SAS lists (empty for atoms that cannot reach its
/// planes), the open SAS points those atoms carve, and the codes and spread charges of planes
/// first_plane .. first_plane + planes − 1; `system` is left empty. The codes and charges are the
/// whole grid's there, bit for bit.
PipelineEmulation emulate_slab(const Atoms& atoms, const GridSpec& grid, const PbOptions& options, long first_plane,
                               long planes);

}  // namespace espgrid::pb
