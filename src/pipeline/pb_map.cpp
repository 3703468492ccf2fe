#include "src/pipeline/pb_map.h"

#include <algorithm>
#include <limits>
#include <mutex>
#include <string>
#include <utility>

#include "src/core/errors.h"
#include "src/core/process_trace.h"
#include "src/core/text_format.h"
#include "src/os/temporary_folder.h"
#include "src/pb/pb_solve.h"
#include "src/pipeline/pb_energy_report.h"

namespace espgrid {

namespace {

/// --backend and --pb-solver as a PbSolver (pb_solve.cpp's resolve_solver decides Auto).
PbSolver pb_solver_for(const ComputeOptions& compute, bool across_ranks) {
  const BackendChoice backend = compute.backend;
  switch (compute.pb_solver) {
    case PbSolverChoice::Hypre:  // with --backend cuda refused by the job's options (finish_pb)
      return PbSolver::Hypre;
    case PbSolverChoice::Multigrid:
      if (across_ranks)
        throw UsageError("--pb-solver multigrid solves in one process; across MPI ranks the solver is hypre");
      break;
    case PbSolverChoice::Auto:
      break;
  }
  if (backend == BackendChoice::Cuda) return PbSolver::CudaMultigrid;
  if (backend == BackendChoice::Cpu) return across_ranks ? PbSolver::Hypre : PbSolver::CpuMultigrid;
  return PbSolver::Auto;  // the GPU's multigrid where there is one, else the CPU's (hypre across ranks)
}

/// --model pb: atoms closer than this to a face get a notice, Å. The default padding; APBS's psize
/// pads the fine grid by as much (20 Å over the molecule's extent).
constexpr double kPbFaceDistance = 10.0;

}  // namespace

void compute_pb_map(MapResult& result, const Atoms& atoms, const MapRequest& request, const KernelSelection& kernel,
                    MapFiles* files) {
  result.kernel = kernel;
  result.map.grid = request.grid;
  result.map.physics = request.physics;
  result.map.source = request.source;
  // The solve fills the map's own values (run.map_values; poisoned by the solve, its pages faulted in
  // beside the device): a map poisoned here and a copy into it would cost a serial pass each (the
  // capsid's 1 GB: benchmarks/NOTES.md).
  PbRun run;
  run.device_ready = request.devices_ready;  // waited after the solve's checks
  run.solver = pb_solver_for(request.compute, request.pb_across_ranks);
  run.threads = request.compute.run.threads;
  run.device = request.compute.run.device;
  if (request.compute.run.devices.size() > 1) {  // the grid split over them (pb_pipeline.h), or refused
    run.devices = request.compute.run.devices;
    run.device = run.devices.front();
  }
  run.direct_sum = kernel.kernel;
  run.unit = request.physics.unit;
  run.workspace = request.compute.run.workspace;
  run.device_workspace = request.pb_workspace;
  run.across_ranks = request.pb_across_ranks;
  run.ranks = request.pb_ranks;
  run.ranks_on_host = request.pb_ranks_on_host;
  run.gpu_ranks = request.pb_gpu_ranks;  // then --backend cuda (the CLI's distributed job)
  run.ranks_on_device = request.pb_ranks_on_device;
  if (request.progress) request.progress(0, 1);
  if (run.solver != PbSolver::CudaMultigrid) keep_open_mpi_session_files_in_a_private_folder();
  // The files record how the map was solved (their source line), beside the physics.
  const std::string source = result.map.source;
  const auto solved_source = [&source](const pb::SolveReport& solve) {
    return source + "; " + solve.method + ", " + std::to_string(solve.iterations) + " iterations, relative residual " +
           short_scientific(solve.relative_residual);
  };
  // The device pipeline hands the map's planes on as they are copied back: the streamed files (MRC, raw
  // .vti) are opened at the first run and written beside the copies (the capsid's 949 MB: the write no
  // longer waits for the whole copy; benchmarks/NOTES.md).
  run.map_values = &result.map.values;
  std::once_flag opened;
  bool streamed = false;
  if (files && !request.pb_gpu_ranks)
    run.planes_solved = [&](const pb::SolveReport& solve, long first, long count) {
      if (!solve.converged) return;  // solve_pb throws: nothing is written
      std::call_once(opened, [&] {
        result.map.source = solved_source(solve);
        files->start(result.map);
        streamed = true;
      });
      files->planes_ready(first, count);
    };
  PbResult pb = solve_pb(atoms, request.grid, request.physics.pb, run);
  trace_process("PB solve: returned");
  const std::size_t plane = request.grid.dims[0] * request.grid.dims[1], count = request.grid.point_count();
  const std::vector<float>& values = result.map.values;
  if (values.size() % plane != 0 || pb.first_plane * plane + values.size() > count ||
      (values.size() != count && !pb.share_only))  // ranks other than 0: their planes, or none
    throw Error("internal error: the PB solve returned " + std::to_string(values.size()) + " values for " +
                std::to_string(count) + " points");
  if (streamed && result.map.source != solved_source(pb.solve))
    throw Error("internal error: the PB map's files were opened with another solve's report");
  result.map.source = solved_source(pb.solve);
  if (request.progress) request.progress(1, 1);
  if (files && !streamed) {  // opened once the map has its values: the solver gave it whole
    files->start(result.map);
    files->planes_ready(0, request.grid.dims[2]);
  }
  trace_process("PB map: queued to its files");
  if (request.compute.run.planes_done) request.compute.run.planes_done(0, request.grid.dims[2]);
  result.timing.kernel_seconds = pb.seconds;
  result.timing.device = pb.solve.device;
  result.timing.phases = pb.phases;
  result.timing.method = pb.summary + "; direct sums: " + pb.direct_sum;
  result.timing.direct_sums = pb.direct_sum;
  if (request.physics.pb.energy.any())
    result.pb_energy = pb_energy_report(atoms, request.grid, request.physics.pb, run, pb);
}

pb::PbHostPlan expected_pb_host_plan(const ComputeOptions& compute) {
  const PbSolver solver = pb_solver_for(compute, false);
  if (solver != PbSolver::Auto) return pb_host_plan(solver);
  return cuda_available() ? pb::PbHostPlan::Gpu : pb::PbHostPlan::CpuMultigrid;  // as resolve_solver decides
}

void check_pb_input(const MapJob& job, const PreparedJob& p, MapObserver& observer) {
  const Atoms& atoms = p.structure.atoms;
  if (job.input.from_file() && job.input.file_format() == StructureFormat::Xyz) {
    for (std::size_t i = 0; i < atoms.size(); ++i)
      if (!bondi_radius_known(atoms.element[i]))
        throw UsageError("--model pb needs every atom's radius (they draw the molecular surface); " + job.input.path +
                         " is an XYZ file, which has none, and Bondi's table has no radius for its atom " +
                         std::to_string(i + 1) + " (" + atoms.element[i].text() +
                         "): give a PQR with the radii to use");
    observer.notice("--model pb: " + job.input.path +
                    " is an XYZ file, which has no radii: the molecular surface is drawn with Bondi's radii by element "
                    "(C 1.70, N 1.55, O 1.52, S 1.80, H 1.20 Å, ...; README, Inputs); give a PQR for other radii");
  }
  // The nearest atom centre to a face, Å.
  const BoundingBox box = bounding_box(atoms);
  double nearest = std::numeric_limits<double>::infinity();
  for (int a = 0; a < 3; ++a) {
    const double hi = p.grid.origin[a] + p.grid.spacing[a] * static_cast<double>(p.grid.dims[a] - 1);
    nearest = std::min({nearest, box.lo[a] - p.grid.origin[a], hi - box.hi[a]});
  }
  // An atom outside the grid is refused by the solver, with its own message. The padded grid's
  // origin is rounded to 1e-6 Å.
  if (nearest >= 0 && nearest < kPbFaceDistance - 1e-3)
    observer.notice(
        "--model pb: an atom lies " + short_fixed(nearest, 1) +
        " Å from the grid's face, where the boundary values (--boundary " + boundary_name(job.physics.pb.boundary) +
        ") hold only far from the molecule: the potential near it is then off by several percent (measured "
        "with mdh on fasciculin-2 at 0.5 Å against 15 Å of padding: 20% relative RMS at 1 Å of padding, 12% at "
        "3, 6.5% at 5, 2.5% at 8, 1.2% at 10; docs/pb.md). --padding " +
        shortest_text(kPbFaceDistance) + " or more keeps it near 1%");
}

}  // namespace espgrid
