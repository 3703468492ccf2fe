// The pipeline: a map job (job/map_job.h) from its checks to its files, each step once, in
// calls that print nothing and time every stage. Front ends build the job and observe the run
// (MapObserver): `espgrid map` prints, the Python module checks for Ctrl-C and calls back,
// `verify` and `bench` compare and time, the MPI ranks and trajectory frames compute their part.
//
//   run_map_job = prepare_job   every check that needs no computation (outputs, kernel, an
//                               exact grid's size), then the input read (pdb2pqr for PDB/mmCIF)
//                               and the grid placed                      timing.read_seconds
//               + compute_job   PotentialMap + TimingReport              prepare, kernel, transfer
//                               (with MapFiles: MRC and .vti written plane by plane meanwhile)
//               + finish_job_outputs  the files, each replaced atomically, then pdb2pqr's PQR
//                                                                         timing.write_seconds
// ComputeSession is the same compute step for many maps on one grid (trajectory frames).
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "src/compute/frame_sums.h"
#include "src/compute/prepared_problem.h"
#include "src/job/map_job.h"
#include "src/maps/map_formats.h"
#include "src/pb/pb_cuda_driver.h"
#include "src/pb/pb_limits.h"
#include "src/pb/pb_rank_link.h"
#include "src/physics/potential_map.h"
#include "src/pipeline/pb_energy_report.h"
#include "src/registry/kernel_registry.h"
#include "src/structure/pdb2pqr_source.h"
#include "src/structure/structure_reader.h"

namespace espgrid {

struct KernelSelection {
  const KernelVariant* kernel = nullptr;
  std::string why;         ///< how it was chosen, for the summary: "backend auto: CUDA device found"
  double error_bound = 0;  ///< approximate kernels: the relative RMS error this run declares; 0: exact
};

/// The kernel that runs: the named one (checked against the backend and the model), the
/// backend's approximate kernel when an accuracy or method parameters are given
/// (run.method), or the backend's default. Auto takes CUDA when a usable GPU is present and
/// never switches an exact request to an approximate method: only --kernel NAME or
/// run.method asks for one. Throws UsageError for an impossible request (method parameters
/// with an exact kernel, parameters the method cannot use) and Error when the chosen kernel
/// cannot run here (no GPU), naming why.
KernelSelection select_kernel(const ComputeOptions& options, PairModel model);
/// Where --model pb will solve, as far as the options say before the solve (across MPI ranks the
/// solve then picks hypre): what the early memory check and the printed estimate count.
pb::PbHostPlan expected_pb_host_plan(const ComputeOptions& compute);

/// Where the time of one map went, seconds. Stages that did not run stay 0.
struct TimingReport {
  double read_seconds = 0;      ///< reading and checking the structure file
  double prepare_seconds = 0;   ///< the float32 problem and the output buffer
  double kernel_seconds = 0;    ///< the kernel (CUDA events on a GPU; the busiest device's)
  double transfer_seconds = 0;  ///< device set-up, allocation and copies: compute wall − kernel
  double write_seconds = 0;     ///< every output file, formatting included, after the computation
  /// Writing streamed planes during the computation (MapFiles): overlapped with the kernel, so
  /// not part of total_seconds().
  double streamed_write_seconds = 0;
  std::string device;               ///< where the kernel ran
  std::vector<WorkerTiming> parts;  ///< CUDA: one per device worker
  std::vector<PhaseTiming> phases;  ///< methods that run in phases (MSM): each phase's time
  std::string method;               ///< approximate kernels: the method, its parameters and bound
  /// --model pb: the kernel of each direct sum the solve made ("boundary cpu-simd, Coulomb part
  /// cpu-msm"); empty otherwise.
  std::string direct_sums;
  double total_seconds() const {
    return read_seconds + prepare_seconds + kernel_seconds + transfer_seconds + write_seconds;
  }
};

/// Reads a structure (format from the extension unless given); adds the time to `timing`.
Structure load_structure(const std::string& path, std::optional<StructureFormat> format = std::nullopt,
                         TimingReport* timing = nullptr);

struct MapRequest {
  GridSpec grid;
  PhysicsOptions physics;
  ComputeOptions compute;
  ProgressFn progress;  ///< (planes done, planes) from the calling thread
  std::string source;   ///< one line for the file headers: where the atoms came from
  /// When valid, the GPU contexts being created meanwhile (PreparedJob::devices_ready): waited
  /// for once the map's memory is prepared, so the two overlap.
  std::shared_future<void> devices_ready;
  /// --model pb on a GPU: device buffers kept between maps (a compute session's); null: per map.
  std::shared_ptr<cuda::PbDeviceWorkspace> pb_workspace;
  /// --model pb under mpirun: one solve by hypre over every rank of MPI_COMM_WORLD (collective:
  /// every rank calls compute_map with the same request; every rank gets the whole map).
  bool pb_across_ranks = false;
  int pb_ranks = 1;          ///< with pb_across_ranks: the ranks (PbRun::ranks)
  int pb_ranks_on_host = 1;  ///< and those sharing this host's memory (PbRun::ranks_on_host)
  /// --model pb under mpirun with a GPU each (instead of hypre): a z-slab a rank, one CG over them
  /// (PbRun::gpu_ranks; collective; rank 0 gets the whole map, the others their planes).
  const pb::PbRankLink* pb_gpu_ranks = nullptr;
  int pb_ranks_on_device = 1;  ///< the ranks sharing this rank's GPU (PbRun::ranks_on_device)
};

struct MapResult {
  PotentialMap map;
  KernelSelection kernel;  ///< --model pb: the kernel of the solve's direct sums
  TimingReport timing;
  std::optional<PbEnergyReport> pb_energy;  ///< --model pb: the energies asked for (--pb-energy, ...)
  /// What made the map, as summaries name it: the registry row, or for --model pb the solver
  /// ("pb-hypre", "pb-multigrid"), whose direct sums `kernel` ran.
  std::string kernel_name() const;
  /// Why: the selection's reason, or for --model pb the solver's method and the direct sums' kernel.
  std::string kernel_choice() const;
  /// The map's smallest and largest values (float_range), computed by the first call and kept: the
  /// summary line and the JSON share one pass (~50 ms of the capsid's 1 GB). The values must be final.
  std::pair<float, float> value_range() const;

 private:
  mutable std::optional<std::pair<float, float>> value_range_;
};

class StreamingMapWriter;

/// The files one map goes to. Formats stored x fastest and uncompressed (MRC, .vti without
/// compression; maps/map_stream.h) are opened when the computation starts and written plane by
/// plane while the kernel runs; the others (OpenDX: z fastest; compressed .vti: VTK takes the
/// whole array) are written by finish() from the finished map.
/// Destroyed without finish(), it leaves every destination untouched.
class MapFiles {
 public:
  explicit MapFiles(std::vector<std::string> paths, MapWriteOptions options = {});
  ~MapFiles();
  MapFiles(const MapFiles&) = delete;
  MapFiles& operator=(const MapFiles&) = delete;

  /// Opens the streamed files for `map` (grid, physics and source set, values sized), which
  /// must outlive this object; compute_map calls it before the kernel runs (a PB map's: once
  /// solved, at the device's first run of planes copied back, or when the solver returns it whole).
  void start(const PotentialMap& map);
  /// Planes [first, first + count) of the map are final (RunOptions::planes_done); any thread.
  void planes_ready(std::int64_t first, std::int64_t count);
  /// Completes every file in the order given, each replaced atomically: the streamed ones (the
  /// planes still queued, then the header), then the others from `map`. Calls `written` after
  /// each; adds the time to timing->write_seconds and the streamed files' writing during the
  /// computation to timing->streamed_write_seconds.
  void finish(const PotentialMap& map, TimingReport* timing = nullptr,
              const std::function<void(const std::string&)>& written = nullptr);
  /// The paths written plane by plane once start() is called.
  std::vector<std::string> streamed_paths() const;
  /// Whether start() opened any file to be written plane by plane.
  bool streaming() const noexcept { return streamed_files_ > 0; }

 private:
  std::vector<std::string> paths_;
  MapWriteOptions options_;
  std::size_t streamed_files_ = 0;
  std::vector<std::unique_ptr<StreamingMapWriter>> streams_;  ///< one per streamed path, in order
};

/// Computes the whole map with the selected kernel into a NaN-poisoned buffer.
MapResult compute_map(const Atoms& atoms, const MapRequest& request);
/// The same with the kernel already selected (the MPI ranks, the Python module's loops). With
/// `files`, the formats that stream are written while the kernel runs; call files->finish()
/// with the result's map to complete them and write the rest.
MapResult compute_map(const Atoms& atoms, const MapRequest& request, const KernelSelection& kernel,
                      MapFiles* files = nullptr);

/// Planes [first_plane, first_plane + planes) of `problem`'s map into `out` (planes × nx × ny
/// floats): the slab a rank of a distributed run computes, bit-identical to the same planes of
/// the whole map for every deterministic kernel.
ComputeTiming compute_planes(const KernelVariant& kernel, const PreparedProblem& problem, float* out,
                             std::int64_t first_plane, std::int64_t planes, const RunOptions& run);

/// "FILE, N atoms, total charge +Q e": the map's source line.
std::string describe_source(const std::string& path, const Atoms& atoms);

// ---- the pipeline of one job -------------------------------------------------------------------

/// A job's input as read: the atoms and where they came from.
struct JobInput {
  Structure structure;                        ///< the atoms and the readers' notices
  std::optional<AssignedStructure> assigned;  ///< PDB/mmCIF: pdb2pqr's result (its PQR until kept)
  std::string source;                         ///< the maps' header line: where the atoms came from
};

/// A job whose input is read and grid placed, ready to compute.
struct PreparedJob : JobInput {
  GridSpec grid;
  KernelSelection kernel;
  TimingReport timing;  ///< read_seconds so far
  /// The CUDA devices' contexts, created on other threads while the input was read (a GPU
  /// kernel, or --model pb on the GPU); compute_job waits for them.
  std::shared_future<void> devices_ready;
  /// The cached pages of the files the outputs replace, dropped on another thread while the input is
  /// read and the map computed (release_replaced_file_cache); done before this is destroyed.
  std::shared_future<void> replaced_files_released;
};

/// What a front end hears while a job runs. Every method has a default that does nothing; any
/// may throw to stop the run (nothing is written then).
class MapObserver {
 public:
  virtual ~MapObserver() = default;
  /// PDB/mmCIF input: pdb2pqr assigned charges and radii, in `seconds`.
  virtual void charges_assigned(const AssignedStructure& assigned, double seconds);
  /// A reader's remark about the input (never a silent guess).
  virtual void notice(const std::string& text);
  /// The input is read and the grid placed; nothing is computed yet.
  virtual void prepared(const PreparedJob& job);
  /// Planes done of the map, from the calling thread.
  virtual void progress(std::size_t done, std::size_t total);
  /// The map is computed; the files are not finished yet.
  virtual void computed(const MapResult& result);
  /// A file is written: a map, or (`what` says) pdb2pqr's PQR or log.
  virtual void written(const std::string& path, const std::string& what);
  /// Every 20 ms at most while an outside program (pdb2pqr, gemmi) runs for the input; throwing
  /// ends the program and removes its folder (Python: Ctrl-C).
  virtual void waiting();
};

/// The input step alone: the structure file read (pdb2pqr for PDB/mmCIF, reported to the
/// observer) or the job's atoms taken; adds the time to `timing`.
JobInput read_job_input(const MapJob& job, MapObserver& observer, TimingReport* timing = nullptr);
/// Every check that needs no computation (the outputs with `check_outputs`, the kernel, an
/// exact grid's size), then the input read (or the job's atoms taken) and the grid placed and
/// checked against memory and ESPGRID_MAX_GRID_POINTS.
PreparedJob prepare_job(const MapJob& job, MapObserver& observer, bool check_outputs = true);
/// The map of a prepared job, into a NaN-poisoned buffer; with `files`, the formats that stream
/// are written while the kernel runs.
MapResult compute_job(const MapJob& job, const PreparedJob& prepared, MapObserver& observer, MapFiles* files);
/// Completes every output of `files` in order, then keeps pdb2pqr's PQR where the job says
/// (only after every map is written: a failure leaves nothing). Adds the time to the result.
void finish_job_outputs(const MapJob& job, const PreparedJob& prepared, MapResult& result, MapFiles& files,
                        MapObserver& observer);
/// The whole job: prepare, compute (streaming what streams), finish the outputs.
MapResult run_map_job(const MapJob& job, MapObserver& observer);

/// The compute step of many maps on one exact grid with the same physics and kernel (the frames
/// of a trajectory): the kernel is chosen once and every map is computed from new atoms.
class ComputeSession {
 public:
  /// `job` must give an exact grid (origin and dims); its input and outputs are not used.
  explicit ComputeSession(const MapJob& job);
  const KernelSelection& kernel() const noexcept { return kernel_; }
  const GridSpec& grid() const noexcept { return grid_; }
  /// The map of `atoms` (charges in e), reporting planes to `observer`.
  MapResult compute(const Atoms& atoms, MapObserver& observer) const;
  /// The same into `values` (grid().point_count() floats, poisoned by the caller: a buffer it
  /// reuses between maps, so no map is allocated per frame); the map's timing. --model pb: its
  /// solve's summary in timing.method. One call at a time.
  TimingReport compute_into(const Atoms& atoms, std::vector<float>& values, MapObserver& observer) const;

  /// Whether maps can be summed where they are computed (an exact CUDA kernel on one device):
  /// then sum_into_device adds a map to exact frame sums on the device (compute/frame_sums.h, with
  /// Σp² when `squares`) and no map comes back to the host; take_device_sums fetches them.
  bool sums_on_device() const noexcept;
  TimingReport sum_into_device(const Atoms& atoms, bool squares, MapObserver& observer) const;
  /// Adds the device's sums to `sums` and zeroes them there (nothing when none were added).
  void take_device_sums(FrameSums& sums) const;

 private:
  MapJob job_;
  GridSpec grid_;
  KernelSelection kernel_;
  /// A CUDA kernel on one device: the atoms', slabs' and staging buffers kept between frames
  /// (--model pb: its direct sums' buffers).
  std::shared_ptr<cuda::DeviceWorkspace> workspace_;
  /// --model pb on a GPU: the solve's device buffers, kept between frames.
  std::shared_ptr<cuda::PbDeviceWorkspace> pb_workspace_;
};

// ---- the steps --------------------------------------------------------------------------------------

/// Checks every output path before anything is read or computed: a known format this build can
/// write with `options`, a file that may be replaced in a directory that accepts a new one
/// (os/atomic_output_file.h), and neither one of `inputs` (same device and inode: the map would
/// replace its own input) nor an output named twice (UsageError / Error naming the path).
void check_output_paths(const std::vector<std::string>& paths, const std::vector<std::string>& inputs = {},
                        const MapWriteOptions& options = {});
/// Writes the map to every path in turn, each atomically; `written` (if set) is called after
/// each file; adds the time to `timing`.
void write_map_files(const PotentialMap& map, const std::vector<std::string>& paths, TimingReport* timing = nullptr,
                     const std::function<void(const std::string&)>& written = nullptr,
                     const MapWriteOptions& options = {});

}  // namespace espgrid
