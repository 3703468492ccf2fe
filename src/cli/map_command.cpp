// espgrid map: a structure file in, map files out, through the library facade
// (src/pipeline/map_pipeline.h); under mpirun with several ranks, the planes are split over
// the ranks (src/scaleout/) and rank 0 writes. Longer than 500 lines because both ways share the
// JSON summary's writer, the job's checks and the printed summary, which one file keeps private.
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <future>
#include <iostream>
#include <optional>
#include <set>
#include <thread>

#include "src/cli/commands.h"
#include "src/cli/options.h"
#include "src/cli/progress.h"
#include "src/compute/cuda_driver.h"
#include "src/core/bulk_memory.h"
#include "src/core/errors.h"
#include "src/core/process_trace.h"
#include "src/core/stopwatch.h"
#include "src/core/text_format.h"
#include "src/maps/map_format_table.h"
#include "src/maps/map_stream.h"
#include "src/os/atomic_output_file.h"
#include "src/pb/pb_memory.h"
#include "src/pb/pb_pipeline.h"
#include "src/pb/pb_slabs.h"
#include "src/pipeline/map_pipeline.h"
#include "src/pipeline/map_summary.h"
#include "src/pipeline/time_estimate.h"
#include "src/scaleout/cluster.h"
#include "src/scaleout/distributed_map.h"
#include "src/scaleout/pb_ranks.h"
#include "src/view/view_page.h"

namespace espgrid::cli {
namespace {

/// The options `espgrid map` takes: every group of the job's table.
const JobOptionSet kMapOptions{
    {OptionGroup::Input, OptionGroup::Output, OptionGroup::Grid, OptionGroup::Physics, OptionGroup::Compute}};

void print_input(const std::string& path, const Atoms& atoms, const GridSpec& grid) {
  std::printf("input      %s: %s atoms, total charge %s e\n", path.c_str(), with_commas(atoms.size()).c_str(),
              signed_charge_text(atoms.total_charge()).c_str());
  std::printf("grid       %s, spacing %g,%g,%g Å, origin (%.3f, %.3f, %.3f) Å, map %s\n", describe(grid).c_str(),
              grid.spacing[0], grid.spacing[1], grid.spacing[2], grid.origin[0], grid.origin[1], grid.origin[2],
              human_bytes(static_cast<double>(map_bytes(grid))).c_str());
  std::fflush(stdout);
}

std::string part_line(const WorkerTiming& part) {
  return std::to_string(part.planes) + " planes in " + std::to_string(part.chunks) +
         (part.chunks == 1 ? " chunk" : " chunks") + ", kernel " + seconds_text(part.kernel_seconds) + ", wall " +
         seconds_text(part.wall_seconds);
}

/// The summary after the computation, before the files are finished: the kernel line first.
void print_summary(const MapResult& result, std::size_t atoms, const std::string& kernel_line) {
  const PotentialMap& map = result.map;
  const TimingReport& timing = result.timing;
  const double evaluations = static_cast<double>(map.grid.point_count()) * static_cast<double>(atoms);
  const auto [lo, hi] = result.value_range();
  std::printf("kernel     %s\n", kernel_line.c_str());
  if (timing.parts.size() > 1)
    for (const WorkerTiming& part : timing.parts)
      std::printf("  device %d %s: %s\n", part.device, part.device_name.c_str(), part_line(part).c_str());
  // An approximate method does not evaluate every pair: its rate is the exact sum's work over its time.
  const bool pb = map.physics.is_pb();  // a field solve, not a sum over pairs
  const bool approximate = !timing.method.empty() && !pb;
  if (!timing.method.empty()) std::printf("method     %s\n", timing.method.c_str());
  if (!timing.phases.empty()) {
    std::string phases;
    for (const PhaseTiming& phase : timing.phases)
      phases += (phases.empty() ? "" : ", ") + phase.name + " " + seconds_text(phase.seconds);
    std::printf("phases     %s\n", phases.c_str());
  }
  if (!pb) {
    std::printf("work       %s atom-evaluations%s\n", short_scientific(evaluations).c_str(),
                approximate ? " in the exact sum (the method evaluates far fewer)" : "");
    std::printf("throughput %s atom-evaluations/s%s\n",
                short_scientific(timing.kernel_seconds > 0 ? evaluations / timing.kernel_seconds : 0).c_str(),
                approximate ? " (exact-sum equivalent)" : "");
  }
  std::printf("model      %s%s\n", describe_model(map.physics).c_str(),
              pb ? "" : (", dielectric " + shortest_text(map.physics.dielectric)).c_str());
  std::printf("potential  %.4g to %.4g %s (dielectric %g%s)\n", lo, hi, unit_name(map.physics.unit).c_str(),
              map.physics.dielectric,
              map.physics.unit == PotentialUnit::KTPerE
                  ? (", T " + std::to_string(map.physics.temperature).substr(0, 6) + " K").c_str()
                  : "");
  std::fflush(stdout);
}

void print_written(const std::string& path, const std::string& what) {
  std::printf("wrote      %s%s\n", path.c_str(), what.empty() ? "" : (" (" + what + ")").c_str());
  std::fflush(stdout);
}

/// The last line: where the time went.
void print_times(const TimingReport& timing, bool any_streamed, const std::string& compute_note) {
  const std::string streamed =
      any_streamed ? " (+ " + seconds_text(timing.streamed_write_seconds) + " streamed during compute)" : "";
  std::printf("time       read %s, prepare %s, kernel %s, transfers %s, write %s%s; total %s%s\n",
              seconds_text(timing.read_seconds).c_str(), seconds_text(timing.prepare_seconds).c_str(),
              seconds_text(timing.kernel_seconds).c_str(), seconds_text(timing.transfer_seconds).c_str(),
              seconds_text(timing.write_seconds).c_str(), streamed.c_str(),
              seconds_text(timing.total_seconds()).c_str(), compute_note.c_str());
}

/// "15 s", "12 min", "2.5 h": an estimate's precision.
std::string rough_duration(double seconds) {
  char text[32];
  if (seconds < 99.5)
    std::snprintf(text, sizeof text, "%.0f s", seconds);
  else if (seconds < 2 * 3600)
    std::snprintf(text, sizeof text, "%.0f min", seconds / 60);
  else
    std::snprintf(text, sizeof text, "%.1f h", seconds / 3600);
  return text;
}

/// A map whose kernel time is predicted above this gets an estimate line before it runs, seconds.
constexpr double kEstimateAbove = 5.0;

/// `espgrid map` as the pipeline runs it: each stage's lines as it happens, a progress bar on a
/// terminal while the kernel runs.
class PrintingObserver : public MapObserver {
 public:
  explicit PrintingObserver(const MapJob& job, bool estimate = false) : job_(job), estimate_(estimate) {}
  /// What the PB solve needs, said instead of one process's plan (under mpirun: a rank's share).
  void say_memory(std::string line) { memory_line_ = std::move(line); }
  void charges_assigned(const AssignedStructure& assigned, double seconds) override {
    // The command that makes the PQR this run keeps (--keep-pqr, or its default beside the map).
    std::printf("charges    %s (%s): %s\n", assigned.describe().c_str(), seconds_text(seconds).c_str(),
                assigned.command_for(job_.input.keep_pqr).c_str());
    // What went in and what came out, and how each residue pdb2pqr's templates did not cover was charged.
    for (const auto& [tag, text] : assigned.report()) std::printf("%-10s %s\n", tag.c_str(), text.c_str());
    std::fflush(stdout);
  }
  void notice(const std::string& text) override { std::fprintf(stderr, "espgrid: note: %s\n", text.c_str()); }
  void prepared(const PreparedJob& p) override {
    print_input(job_.input.path, p.structure.atoms, p.grid);
    if (job_.physics.is_pb()) {  // before anything of the grid's size is allocated (issue 33)
      std::printf("memory     the PB solve needs %s\n",
                  memory_line_.empty() ? pb::pb_memory_plan(p.structure.atoms, p.grid, job_.physics.pb,
                                                            expected_pb_host_plan(job_.compute))
                                             .describe()
                                             .c_str()
                                       : memory_line_.c_str());
      std::fflush(stdout);
    }
    bar_.emplace(std::string(p.kernel.kernel->name));
    kernel_name_ = std::string(p.kernel.kernel->name);
    why_ = p.kernel.why;
    atoms_ = p.structure.atoms.size();
    if (estimate_) {
      // Long maps say how long first (a probe of the first planes: src/pipeline/time_estimate.h).
      estimated_ = estimate_map_time(job_, p, kEstimateAbove);
      if (estimated_) {
        std::printf("estimate   about %s for %s atom-evaluations at %s/s (the kernel's first planes, timed)\n",
                    rough_duration(estimated_->seconds).c_str(), short_scientific(estimated_->evaluations).c_str(),
                    short_scientific(estimated_->rate).c_str());
        std::fflush(stdout);
      }
    }
  }
  void progress(std::size_t done, std::size_t total) override {
    if (bar_) bar_->update(done, total);
  }
  void computed(const MapResult& result) override {
    if (bar_) bar_->finish();
    // --model pb: the solver ran, and the line names the kernel of each direct sum it made (the
    // boundary's is an exact one even where --accuracy chose MSM for the split's Coulomb part).
    const std::string& sums = result.timing.direct_sums.empty() ? kernel_name_ : result.timing.direct_sums;
    const std::string line =
        result.map.physics.is_pb()
            ? "Poisson-Boltzmann solve on " + result.timing.device + " (direct sums: " + sums + ", " + why_ + ")"
            : kernel_name_ + " on " + result.timing.device + " (" + why_ + ")";
    print_summary(result, atoms_, line);
    if (result.pb_energy)
      for (const std::string& text : pb_energy_lines(*result.pb_energy)) std::printf("%s\n", text.c_str());
    std::fflush(stdout);
    // The GPU is used no more: let it go while the files are written. Joined when this observer goes.
    std::vector<int> devices = job_.compute.run.devices;
    if (devices.empty()) devices.push_back(job_.compute.run.device);
    trace_process("summary printed");
    released_ = release_devices_beside(std::move(devices));
  }
  void written(const std::string& path, const std::string& what) override { print_written(path, what); }
  /// The estimate printed before the map, if any.
  const std::optional<TimeEstimate>& estimate() const noexcept { return estimated_; }

 private:
  const MapJob& job_;
  bool estimate_ = false;
  std::string memory_line_;
  std::optional<TimeEstimate> estimated_;
  std::optional<ProgressBar> bar_;
  std::string kernel_name_, why_;
  std::size_t atoms_ = 0;
  std::future<void> released_;  ///< the devices let go beside the files' writing
};

/// Writes all of `text` to the file descriptor; Error when it cannot.
void write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error("cannot write the JSON summary to standard output");
    done += static_cast<std::size_t>(n);
  }
}

/// --json FILE or --json -: the run's summary (src/pipeline/map_summary.h) written after the maps.
class JsonSummary {
 public:
  /// Reads the option; with "-" the JSON alone goes to standard output, so from here on every
  /// printed line goes to standard error instead (the JSON keeps the original descriptor).
  JsonSummary(const cxxopts::ParseResult& args, int argc, char** argv) {
    if (!args.count("json")) return;
    path_ = args["json"].as<std::string>();
    if (path_.empty()) throw UsageError("--json needs a file name, or - for standard output");
    command_ = {"espgrid"};  // then the verb and its words: argv[0] is "map"
    command_.insert(command_.end(), argv, argv + argc);
    if (path_ == "-") {
      std::fflush(stdout);
      fd_ = ::dup(STDOUT_FILENO);
      if (fd_ < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) throw Error("--json -: cannot set up standard output");
    }
  }
  ~JsonSummary() {
    if (fd_ >= 0) ::close(fd_);
  }
  JsonSummary(const JsonSummary&) = delete;
  JsonSummary& operator=(const JsonSummary&) = delete;

  bool wanted() const noexcept { return !path_.empty(); }
  /// Before anything is read: the file is writable and neither an output map nor the input.
  void check(const MapJob& job) const {
    if (!wanted() || fd_ >= 0) return;
    std::vector<std::string> others = job.outputs;
    others.push_back(job.input.path);
    if (!job.input.keep_pqr.empty()) others.push_back(job.input.keep_pqr);
    for (const std::string& other : others) {
      std::error_code ec;
      const bool same = std::filesystem::weakly_canonical(path_, ec) == std::filesystem::weakly_canonical(other, ec);
      if (same && !ec) throw UsageError("--json " + path_ + " is also " + other + "; name another file");
    }
    check_output_path(path_);
  }
  /// After the maps are written.
  void write(const MapJob& job, const MapResult& result, MapProvenance provenance,
             const std::vector<std::string>& outputs, const std::optional<TimeEstimate>& estimate) const {
    if (!wanted()) return;
    provenance.command = command_;
    provenance.input = job.input.path;
    trace_process("JSON summary: building");
    const std::string text =
        map_summary(result.map, result.kernel_name(), result.kernel_choice(), result.timing, provenance, outputs,
                    estimate, result.pb_energy ? &*result.pb_energy : nullptr, result.value_range())
            .dump();
    if (fd_ >= 0) {
      std::fflush(stdout);
      write_all(fd_, text);
    } else {
      write_text_file_atomically(path_, text);
      print_written(path_, "the summary as JSON");
    }
  }

 private:
  std::string path_;
  std::vector<std::string> command_;
  int fd_ = -1;  ///< --json -: the original standard output
};

/// Rank 0, once every rank has read the input: its notices, the input and how the ranks share it.
/// A PB solve's input is printed by its recorder, as one process prints it.
void print_distributed_input(const MapJob& job, const PreparedJob& prepared, int ranks, SummaryRecorder* pb_recorder,
                             bool pb_on_gpus) {
  for (const auto& notice : prepared.structure.notices) std::fprintf(stderr, "espgrid: note: %s\n", notice.c_str());
  if (pb_recorder && pb_on_gpus) {
    pb_recorder->prepared(prepared);
    std::printf(
        "ranks      %d MPI ranks: one PB solve over their GPUs, a z-slab a rank (one multigrid-preconditioned CG, "
        "halo planes through MPI); each rank builds its slab's surface, charges and system; rank 0 gathers the map "
        "and writes it\n",
        ranks);
  } else if (pb_recorder) {
    pb_recorder->prepared(prepared);
    std::printf(
        "ranks      %d MPI ranks: one PB solve by hypre over all of them (z-planes in contiguous blocks); each "
        "rank builds the coefficient maps of its planes (all of them for npbe, energy components and coefficient "
        "maps) and holds them alone; rank 0 gets the solution and writes the map\n",
        ranks);
  } else {
    print_input(job.input.path, prepared.structure.atoms, prepared.grid);
    std::printf(
        "ranks      %d MPI ranks: z-planes in contiguous blocks, one per rank; the map is gathered to "
        "rank 0\n",
        ranks);
  }
  std::fflush(stdout);
}

/// Rank 0, once the PB map is solved over every rank: the files and the times, as one process
/// writes them.
void write_distributed_pb_map(const MapJob& job, const PreparedJob& prepared, MapResult& result,
                              SummaryRecorder& recorder, const JsonSummary& json) {
  recorder.computed(result);
  MapFiles files(job.outputs, job.write);
  finish_job_outputs(job, prepared, result, files, recorder);
  print_times(result.timing, false, " (the solve: on every rank at once)");
  json.write(job, result, recorder.provenance, recorder.outputs, std::nullopt);
}

/// Rank 0, once the map is gathered: each rank's share, the summary, the files, the times.
void write_distributed_map(const MapJob& job, const PreparedJob& prepared, std::size_t atom_count,
                           const scaleout::DistributedRun& run, MapResult& result, const JsonSummary& json) {
  for (const scaleout::RankReport& r : run.ranks) {
    const std::string planes = r.planes.count() == 0 ? std::string("no planes")
                                                     : "planes " + std::to_string(r.planes.begin) + "-" +
                                                           std::to_string(r.planes.end - 1) + " (" +
                                                           std::to_string(r.planes.count()) + ")";
    std::printf("rank %-5d %s: %s, %s on %s: kernel %s, wall %s\n", r.rank, r.host.c_str(), planes.c_str(),
                r.kernel.c_str(), r.device.c_str(), seconds_text(r.kernel_seconds).c_str(),
                seconds_text(r.wall_seconds).c_str());
  }
  std::set<std::string> kernels;
  for (const scaleout::RankReport& r : run.ranks) kernels.insert(r.kernel);
  std::string kernel_names;
  for (const std::string& k : kernels) kernel_names += (kernel_names.empty() ? "" : ", ") + k;
  TimingReport& timing = result.timing;
  timing.read_seconds = prepared.timing.read_seconds;
  timing.kernel_seconds = run.timing.kernel_seconds;
  timing.transfer_seconds = std::max(0.0, run.timing.wall_seconds - run.timing.kernel_seconds);
  timing.parts = run.timing.parts;
  if (prepared.kernel.error_bound > 0)
    timing.method = "approximate, expected relative RMS error <= " + short_scientific(prepared.kernel.error_bound) +
                    " at points >= 1.4 Å from atoms";
  print_summary(result, atom_count, kernel_names + " on " + run.timing.device + " (" + prepared.kernel.why + ")");
  MapFiles files(job.outputs, job.write);  // rank 0 has the whole map only now: nothing streams
  PrintingObserver printing(job);
  SummaryRecorder observer(printing);
  // The atoms, for the summary: rank 0 prepared with a quiet observer.
  observer.provenance.atoms = prepared.structure.atoms.size();
  observer.provenance.total_charge = prepared.structure.atoms.total_charge();
  observer.provenance.created = utc_timestamp();
  finish_job_outputs(job, prepared, result, files, observer);
  print_times(timing, false,
              " (kernel: the slowest rank; transfers: all ranks and the gather, " + seconds_text(run.gather_seconds) +
                  " gathering)");
  json.write(job, result, observer.provenance, observer.outputs, std::nullopt);
}

/// The job of `espgrid map` under mpirun: what every rank can read (a file, not standard input; a
/// PQR, not a structure for pdb2pqr); --model pb is one solve over the ranks (pb_on_gpus chooses how).
MapJob distributed_job(const cxxopts::ParseResult& args) {
  MapJob job = job_from_args(args, kMapOptions, JobUse::Map);
  if (is_standard_input(job.input.path))
    throw UsageError("under mpirun, give a file: every rank reads the input, and only one has standard input");
  if (needs_charge_assignment(job.input.file_format()))
    throw UsageError("under mpirun, give a PQR file: run `espgrid map " + job.input.path +
                     " --keep-pqr FILE.pqr ...` once without mpirun (or pdb2pqr30 yourself)");
  return job;
}

/// CPU threads: a rank that mpirun did not pin to a part of the node shares the node's cores with
/// the other ranks on it instead of each taking every core (0: not shared, every core).
int shared_thread_count(const scaleout::Cluster& cluster) {
  if (cluster.local_size() < 2 || omp_get_num_procs() < static_cast<int>(std::thread::hardware_concurrency())) return 0;
  return std::max(1, omp_get_num_procs() / cluster.local_size());
}

/// --model pb under mpirun: whether the grid is split over the ranks' GPUs, a z-slab a rank (--backend
/// cuda; auto when every rank has a GPU and the device pipeline runs the options and their energies),
/// rather than solved by hypre over their CPUs (scaleout::pb_on_rank_gpus); `sharing`: the ranks on this
/// host that use this rank's GPU. Collective.
bool pb_on_gpus(scaleout::Cluster& cluster, const MapJob& job, const PreparedJob& prepared, int& sharing) {
  scaleout::PbRankChoice choice;
  choice.gpus_asked = job.compute.backend == BackendChoice::Cuda;
  choice.gpus_refused = job.compute.backend == BackendChoice::Cpu || job.compute.pb_solver == PbSolverChoice::Hypre;
  std::vector<int> usable;
  if (!choice.gpus_refused) usable = cuda::usable_devices(&choice.no_gpu_reason);
  choice.has_gpu = !usable.empty();
  const PbOptions& pb = job.physics.pb;
  choice.pipeline_runs = pb::pipeline_applies(prepared.structure.atoms, prepared.grid, pb);
  choice.energies_on_devices = !pb.energy.solvation && pb.energy.binding_parts.empty() &&
                               (pb.energy.level == PbEnergyLevel::None ||
                                (pb.energy.level == PbEnergyLevel::Total && pb.charges == PbChargeMethod::Spl2));
  sharing = scaleout::ranks_sharing_device(cluster, usable.size(), job.compute.device_given);
  return scaleout::pb_on_rank_gpus(cluster, choice);
}

/// Under mpirun, what the PB solve needs on each rank: its slab's share of the GPU's plan (the ranks'
/// GPUs; rank 0's, the largest) or, with hypre, its share of hypre's structures and of the coefficient
/// maps and rows beside the arrays that stay whole (rank 0's).
std::string rank_memory_line(int ranks, const MapJob& job, const PreparedJob& p, bool gpus) {
  const pb::PbMemoryPlan plan = pb::pb_memory_plan(
      p.structure.atoms, p.grid, job.physics.pb, gpus ? pb::PbHostPlan::Gpu : pb::PbHostPlan::Hypre, gpus ? 1 : ranks);
  return (gpus ? pb::rank_slab_share(plan, p.grid, ranks, 0) : plan).describe() + " on each of the " +
         std::to_string(ranks) + " ranks" + (gpus ? " (its slab's share of the device's part)" : "");
}

/// Every rank's share of the work: one PB solve over all the ranks (their GPUs, `gpu_ranks`, or hypre
/// over their CPUs), or the rank's block of z-planes (rank 0 gathers the map into `result`).
void compute_across_ranks(scaleout::Cluster& cluster, const MapJob& job, const PreparedJob& prepared,
                          const std::optional<PreparedProblem>& problem, MapResult& result,
                          scaleout::DistributedRun& run, scaleout::PbRanks* gpu_ranks, int ranks_on_device) {
  const bool root = cluster.is_root();
  if (job.physics.is_pb()) {
    MapRequest request;
    request.grid = prepared.grid;
    request.physics = job.physics;
    request.compute = job.compute;
    request.source = prepared.source;
    request.pb_ranks = cluster.size();
    request.pb_ranks_on_host = cluster.local_size();
    if (gpu_ranks) {
      request.compute.backend = BackendChoice::Cuda;
      request.pb_gpu_ranks = &gpu_ranks->link();
      request.pb_ranks_on_device = ranks_on_device;
    } else {
      request.pb_across_ranks = true;
      request.compute.backend = BackendChoice::Cpu;
      if (request.compute.run.threads == 0) request.compute.run.threads = shared_thread_count(cluster);
    }
    cluster.agree("solving the PB map across the ranks", [&] {
      try {
        if (gpu_ranks && scaleout::failure_injected(cluster.rank()))  // the vote's test: before the solve
          throw Error("injected failure before the PB solve (ESPGRID_TEST_FAIL_RANK=" + std::to_string(cluster.rank()) +
                      ")");
        result = compute_map(prepared.structure.atoms, request, prepared.kernel);
      } catch (const std::exception& e) {
        if (gpu_ranks) gpu_ranks->failed(e.what());  // the other ranks must not wait for this one
        throw;
      }
    });
    result.timing.read_seconds = prepared.timing.read_seconds;
    return;
  }
  ProgressBar bar(std::string(prepared.kernel.kernel->name));
  RunOptions options = job.compute.run;
  if (root) options.progress = [&bar](std::size_t done, std::size_t total) { bar.update(done, total); };
  try {
    run = scaleout::compute_distributed(cluster, *prepared.kernel.kernel, *problem,
                                        root ? result.map.values.data() : nullptr, options);
  } catch (const scaleout::PeerFailure&) {
    throw;
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + "; no map written");
  }
}

/// `espgrid map` under mpirun with more than one rank: every rank reads the input and computes
/// a contiguous block of z-planes (its rank-local GPU, or the CPU); rank 0 gathers the map,
/// prints the summary with every rank's timing, and writes the outputs. --model pb is one solve:
/// hypre over every rank (z-planes in contiguous blocks), each rank building the coefficient maps,
/// rank 0 writing the map. Any rank's failure stops every rank before anything is written (rank 0
/// reports it; see Cluster::agree).
int run_map_distributed(const cxxopts::ParseResult& args, scaleout::Cluster& cluster, const JsonSummary& json) {
  const bool root = cluster.is_root();
  MapJob job;
  std::optional<PreparedJob> prepared;
  std::optional<PreparedProblem> problem;
  MapResult result;
  scaleout::DistributedRun run;
  MapObserver quiet;                         // rank 0 prints once every rank has read the input
  std::optional<PrintingObserver> printing;  // --model pb: rank 0's, as one process prints
  std::optional<SummaryRecorder> recorder;
  std::optional<scaleout::PbRanks> gpu_ranks;  // --model pb over the ranks' GPUs (pb_on_gpus)
  // Every rank passes the same agreement points, so a failure anywhere reaches all of them:
  // rank 0 prints it, everyone waits for that, then rank 0 exits non-zero and the rest 0.
  int status = 0;
  std::string error;
  try {
    cluster.agree("checking the command line and reading the input", [&] {
      job = distributed_job(args);
      if (root) json.check(job);
      prepared.emplace(prepare_job(job, quiet, /*check_outputs=*/root));  // only rank 0 writes
      RunOptions& options = job.compute.run;
      if (prepared->kernel.kernel->backend == Backend::Cuda && !job.compute.device_given && options.devices.empty()) {
        options.device = scaleout::rank_local_device(cluster, cuda::usable_devices());
        prepared->kernel.why += "; rank-local GPU: local rank mod GPUs";
      }
      if (prepared->kernel.kernel->backend == Backend::Cpu && options.threads == 0)
        options.threads = shared_thread_count(cluster);
      if (!job.physics.is_pb())
        problem.emplace(PreparedProblem::for_physics(prepared->structure.atoms, prepared->grid, job.physics));
      if (root) {
        result.map.grid = prepared->grid;
        result.map.physics = job.physics;
        result.map.source = prepared->source;
        result.map.values.assign(prepared->grid.point_count(), std::numeric_limits<float>::quiet_NaN());
        result.kernel = prepared->kernel;
      }
    });
    if (root && job.physics.is_pb()) {
      printing.emplace(job);
      recorder.emplace(*printing);
    }
    int ranks_on_device = 1;
    if (job.physics.is_pb() && pb_on_gpus(cluster, job, *prepared, ranks_on_device)) gpu_ranks.emplace(cluster);
    if (printing) printing->say_memory(rank_memory_line(cluster.size(), job, *prepared, gpu_ranks.has_value()));
    if (root)
      print_distributed_input(job, *prepared, cluster.size(), recorder ? &*recorder : nullptr, gpu_ranks.has_value());
    compute_across_ranks(cluster, job, *prepared, problem, result, run, gpu_ranks ? &*gpu_ranks : nullptr,
                         ranks_on_device);
  } catch (const scaleout::PeerFailure&) {
    status = 1;
  } catch (const UsageError& e) {
    status = 2;
    error = e.what();
  } catch (const std::exception& e) {
    status = 1;
    error = e.what();
  }
  if (status != 0) {
    if (root) {
      std::fprintf(stderr, "espgrid: error: %s\n", error.c_str());
      std::fflush(stderr);
    }
    cluster.barrier();
    return root ? status : 0;
  }
  if (!root) return 0;
  if (job.physics.is_pb())
    write_distributed_pb_map(job, *prepared, result, *recorder, json);
  else
    write_distributed_map(job, *prepared, problem->atom_count(), run, result, json);
  return 0;
}

}  // namespace

int run_map(int argc, char** argv) {
  cxxopts::Options options("espgrid map", "Compute the electrostatic potential of a charged structure on a grid.\n");
  options.custom_help("INPUT -o OUTPUT." + map_format_words(false, "|OUTPUT.") + " [-o ...] [options]");
  options.positional_help("");
  add_job_options(options, kMapOptions, "structure file (.pqr, .xyz; .pdb or .cif: charges from pdb2pqr)");
  options.add_options("Output")(
      "json",
      "also write the run's summary as JSON (grid, kernel, device, timings, range, model and its parameters, "
      "provenance, files written; the keys of Python's Map.summary()): a file, or - for standard output (the "
      "printed summary then goes to standard error)",
      cxxopts::value<std::string>());
  options.add_options()("h,help", "show this help");
  const auto args = parse_args(options, argc, argv, {"output", "ion"});
  if (args.count("help")) {
    std::cout
        << options.help({"Input", "Output", "Grid", "Physics", "Compute", ""}) << "\n"
        << model_help()
        << "\nExamples:\n  espgrid map data/fasciculin2.pqr -o fas2.vti -o fas2.dx --spacing 0.5\n"
           "  espgrid map data/fasciculin2.pqr -o fas2.dx --model distance --dielectric 4 --units kcal/mol/e\n"
           "  espgrid map data/fasciculin2.pqr -o fas2.dx --model debye --dielectric 78.54 --ionic-strength 0.15\n"
        << "\nPDB or mmCIF input (.pdb, .ent, .cif): pdb2pqr30 assigns charges and radii (AMBER unless\n"
           "--forcefield says otherwise); the PQR it made is kept beside the map (or at --keep-pqr).\n"
        << "\nSeveral GPUs: --devices all (or 0,1,...). Under mpirun the z-planes are split over the ranks\n"
           "(each on its rank-local GPU, or the CPU) and rank 0 writes the map; see README, Scale-out.\n";
    return 0;
  }
  scaleout::Cluster& cluster = scaleout::Cluster::world();  // MPI starts here when launched by mpirun
  const JsonSummary json(args, argc, argv);
  if (cluster.distributed()) return run_map_distributed(args, cluster, json);

  const MapJob job = job_from_args(args, kMapOptions, JobUse::Map);
  json.check(job);
  PrintingObserver printing(job, /*estimate=*/true);
  SummaryRecorder observer(printing);
  const MapResult result = run_map_job(job, observer);
  const bool any_streamed = std::any_of(job.outputs.begin(), job.outputs.end(), [&](const std::string& path) {
    return streams_planes(map_format_from_extension(path), job.write);
  });
  print_times(result.timing, any_streamed, "");
  json.write(job, result, observer.provenance, observer.outputs, printing.estimate());
  return 0;
}

}  // namespace espgrid::cli
