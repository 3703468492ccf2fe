// The device PB pipeline's entry, declared in plain C++ (no CUDA headers) and implemented by
// kernels/pb/pb_pipeline.cu; a build without CUDA links kernels/pb/pb_pipeline_unavailable.cpp.
//
// The host gives the atoms and a few small tables (the reference sphere, the 3 × 512 face
// conductances, the hierarchy's shape); the device bins the atoms, finds the SAS neighbours, builds
// the mol/smol surface as bytes and then as 4-byte node codes, gathers the spread charges, assembles
// the right-hand side, builds the multigrid hierarchy and solves; the float map (and on request φ in
// double, or only the fixed-charge energy Σ φ·q) comes back. src/pb/pb_pipeline.h is its host side.
// A grid may be split over several devices (or several slabs of one, for tests) by z-planes: each
// builds its planes' inputs from all the atoms, and one CG runs over the slabs.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "src/core/switches.h"
#include "src/pb/pb_cuda_driver.h"
#include "src/pb/pb_rank_link.h"
#include "src/pb_numerics/pb_pipeline_math.h"

namespace espgrid::cuda {

/// The V-cycle stored in float (kernels/pb/pb_lean_solver.cuh), as the pipeline runs it and the memory
/// plan counts it: ESPGRID_PB_FLOAT_CYCLE=0 stores it in double, pb_multigrid.cu's arithmetic bit for bit
/// (for measuring what float saves, and the tests' reference). Read at each solve (tests switch it).
inline bool pb_float_cycle() { return !switched_off("ESPGRID_PB_FLOAT_CYCLE"); }

/// One device's share of a grid split over devices by z-planes (a single slab: the whole grid).
/// Its own grid is its planes and, at each cut, the neighbour's first plane: a face of its V-cycle,
/// a halo for the CG (kernels/pb/pb_pipeline.cu).
struct PbPipelineSlab {
  int device = 0;
  long first_plane = 0;               ///< the first z-plane of the map it holds
  long end_plane = 0;                 ///< one past its last
  const PbMgLevel* levels = nullptr;  ///< its own grid's hierarchy shape (operators ignored)
  int level_count = 0;
};

struct PbPipelineResult;

struct PbPipelineInput {
  pb::AtomArrays atoms;  ///< host arrays; radius and charge required
  long n[3] = {0, 0, 0};
  double origin[3] = {0, 0, 0};               ///< Å
  double spacing[3] = {0, 0, 0};              ///< Å
  bool smooth = true;                         ///< smol (else mol)
  bool salt = true;                           ///< ionic strength > 0
  double probe_radius = 1.4, ion_radius = 2;  ///< Å
  pb::AtomCells cells;                        ///< the SAS search's cell geometry (start/atoms unused)
  long reference_points = 0;                  ///< the reference sphere (host)
  const double* reference_x = nullptr;
  const double* reference_y = nullptr;
  const double* reference_z = nullptr;
  const double* conductances = nullptr;  ///< host, 3 × pb::kPatterns: w of each face pattern, Å
  double mass = 0;                       ///< ε_w κ² · cell volume, Å
  double zmagic = 0;                     ///< the source's scale
  int charge_method = 1;                 ///< 0 spl0, 1 spl2, 2 spl4
  /// The boundary values on the six faces (pb::boundary_nodes' order), kT/e: called once the
  /// surface's kernels are queued, so a direct sum running on another thread overlaps them.
  std::function<std::vector<double>()> faces;
  const PbPipelineSlab* slabs = nullptr;  ///< z-ordered, covering every plane once (across ranks: this rank's one)
  int slab_count = 0;
  /// The grid split over MPI ranks, slab `ranks->rank` of `ranks->ranks` here (null: every slab here).
  const pb::PbRankLink* ranks = nullptr;
  PbMgRun run;  ///< run.device unused: each slab names its device
  /// Buffers kept between solves on one grid (a trajectory's frames: no cudaMalloc or cudaFree, whose
  /// device-wide waits would also hold back another frame's solve on the same GPU); one slab only.
  PbDeviceWorkspace* workspace = nullptr;
  double unit_scale = 1;  ///< kT/e → the map's unit
  /// Called once the solve is done, before the copies back; returns the host's buffers for the map
  /// (required) and φ in double kT/e (optional, may be null), so that the host can size them and
  /// fault their pages in while the device works.
  std::function<std::pair<float*, double*>()> output_buffers;
  /// Called as runs of the map's planes land in output_buffers' map (whole-grid plane numbers, each
  /// plane once, in any order; from the slabs' threads, so possibly at once), with the result so far
  /// (the solve's iterations and residuals final): the map's file is written beside the copies.
  /// Optional; one process only (across ranks rank 0 gathers the others' planes after the copies).
  std::function<void(const PbPipelineResult& solved, long first_plane, long count)> planes_copied;
  /// The map's first plane in output_buffers' map: 0 (the whole map), or across ranks on ranks other than
  /// 0 this rank's first plane (it holds its planes alone).
  long host_first_plane = 0;
  bool fixed_charge_energy = false;  ///< compute Σ_nodes φ·(spread charge) (APBS's spl2 qf)
};

struct PbPipelineResult {
  int iterations = 0;
  double own_residual = 0;       ///< the CG recursion's relative residual at the end
  double relative_residual = 0;  ///< ‖b − Au‖₂/‖b‖₂ recomputed on the device
  double fixed_charge = 0;       ///< Σ φ·q over the nodes, kT (with fixed_charge_energy)
  std::size_t sas_points = 0;
  std::size_t neighbour_pairs = 0;  ///< SAS neighbour-list entries
  double inputs_seconds = 0;        ///< upload, binning, neighbour lists (CUDA events)
  double surface_seconds = 0;       ///< surface bytes, SAS carving, codes
  double assemble_seconds = 0;      ///< charges, right-hand side, hierarchy
  double solve_seconds = 0;
  double output_seconds = 0;      ///< residual, combination, energy, copies back
  double faces_wait_seconds = 0;  ///< the host waiting for the boundary values (wall)
  double wall_seconds = 0;
  std::size_t peak_bytes = 0;  ///< the most device memory the pipeline held at once on one device
  std::string device;          ///< the device, or "N × device" for several
  bool float_cycle = true;     ///< the V-cycle stored in float (ESPGRID_PB_FLOAT_CYCLE=0: in double)
};

void run_pb_pipeline(const PbPipelineInput& in, PbPipelineResult& out);

/// Free and total memory of `device`, bytes (makes the device's context).
void pb_device_memory(int device, std::size_t& free_bytes, std::size_t& total_bytes);
/// Total memory of `device`, bytes, without making its context (the driver's device query).
std::size_t pb_device_total_memory(int device);

}  // namespace espgrid::cuda
