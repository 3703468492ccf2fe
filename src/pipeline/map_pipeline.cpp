#include "src/pipeline/map_pipeline.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <memory>
#include <sys/stat.h>
#include <vector>

#include "src/core/bulk_memory.h"
#include "src/core/errors.h"
#include "src/core/stopwatch.h"
#include "src/core/text_format.h"
#include "src/maps/map_formats.h"
#include "src/maps/map_stream.h"
#include "src/os/atomic_output_file.h"
#include "src/pb/pb_limits.h"
#include "src/pipeline/pb_map.h"

namespace espgrid {

KernelSelection select_kernel(const ComputeOptions& options, PairModel model) {
  // CUDA is asked only where the choice depends on it: --backend cpu never starts the driver, whose
  // start maps ~13 GB of address space on a GPU host (a CPU run under ulimit -v could not start
  // its threads) and takes ~0.15 s.
  std::string reason;
  std::optional<bool> cuda;
  const auto have_cuda = [&] {
    if (!cuda) cuda = cuda_available(&reason);
    return *cuda;
  };
  const MethodParameters& method = options.run.method;
  const bool approximate_asked = method.accuracy != 0 || !method.msm.empty();
  KernelSelection out;
  if (!options.kernel.empty()) {
    const KernelVariant& k = find_kernel(options.kernel);
    const Backend wanted = options.backend == BackendChoice::Cuda ? Backend::Cuda : Backend::Cpu;
    if (options.backend != BackendChoice::Auto && wanted != k.backend)
      throw UsageError("kernel " + std::string(k.name) + " runs on " + std::string(backend_name(k.backend)) +
                       ", not on --backend " + std::string(backend_name(wanted)));
    if (!k.supports(model))
      throw UsageError("kernel " + std::string(k.name) + " does not compute the " + model_name(model) +
                       " model; use one of: " + variants_supporting(model));
    if (approximate_asked && !k.approximate())
      throw UsageError("--accuracy and --msm-* choose an approximate method, but kernel " + std::string(k.name) +
                       " computes the exact sum; leave them out, or name an approximate kernel");
    if (k.backend == Backend::Cuda && !have_cuda())
      throw Error("kernel " + std::string(k.name) + " needs a CUDA device: " + reason);
    out = {&k, "chosen with --kernel"};
  } else if (approximate_asked) {
    // Asked for by name of the method's parameters, never by --backend auto alone.
    if (options.backend == BackendChoice::Cuda && !have_cuda()) throw Error("--backend cuda: " + reason);
    const bool on_gpu =
        options.backend == BackendChoice::Cuda || (options.backend == BackendChoice::Auto && have_cuda());
    out = {&approximate_kernel(on_gpu ? Backend::Cuda : Backend::Cpu, model),
           std::string(method.accuracy != 0 ? "--accuracy" : "--msm-* parameters") + ": approximate method, " +
               (options.backend == BackendChoice::Auto ? (have_cuda() ? "CUDA device found" : "no GPU (" + reason + ")")
                                                       : "backend " + std::string(on_gpu ? "cuda" : "cpu"))};
  } else if (options.backend == BackendChoice::Cuda) {
    if (!have_cuda()) throw Error("--backend cuda: " + reason);
    out = {&default_kernel(Backend::Cuda), "backend cuda"};
  } else if (options.backend == BackendChoice::Cpu) {
    out = {&default_kernel(Backend::Cpu), "backend cpu"};
  } else if (have_cuda()) {
    out = {&default_kernel(Backend::Cuda), "backend auto: CUDA device found"};
  } else {
    out = {&default_kernel(Backend::Cpu), "backend auto: no GPU (" + reason + ")"};
  }
  if (!out.kernel->supports(model))
    throw UsageError("the default kernel " + std::string(out.kernel->name) + " does not compute the " +
                     model_name(model) + " model; choose one with --kernel: " + variants_supporting(model));
  if (!options.run.devices.empty() && out.kernel->backend != Backend::Cuda)
    throw UsageError("--devices applies to the CUDA kernels; " + std::string(out.kernel->name) + " runs on the CPU");
  if (options.run.devices.size() > 1 && out.kernel->backend == Backend::Cuda && !out.kernel->uses_plane_driver())
    throw UsageError(std::string(out.kernel->name) + " runs on one GPU; give --device N instead of --devices");
  if (out.kernel->approximate()) out.error_bound = out.kernel->bound_for(method, model);  // checks the parameters
  return out;
}

Structure load_structure(const std::string& path, std::optional<StructureFormat> format, TimingReport* timing) {
  const Stopwatch clock;
  Structure s = read_structure(path, format ? *format : format_from_extension(path));
  if (timing) timing->read_seconds += clock.seconds();
  return s;
}

std::string describe_source(const std::string& path, const Atoms& atoms) {
  return path + ", " + std::to_string(atoms.size()) + " atoms, total charge " +
         signed_charge_text(atoms.total_charge()) + " e";
}

MapResult compute_map(const Atoms& atoms, const MapRequest& request) {
  return compute_map(atoms, request, select_kernel(request.compute, request.physics.model));
}

std::string MapResult::kernel_name() const {
  if (!map.physics.is_pb()) return kernel.kernel ? std::string(kernel.kernel->name) : std::string();
  return timing.method.find("hypre") != std::string::npos ? "pb-hypre" : "pb-multigrid";
}

std::pair<float, float> MapResult::value_range() const {
  if (!value_range_) value_range_ = float_range(map.values.data(), map.values.size());
  return *value_range_;
}

std::string MapResult::kernel_choice() const {
  if (!map.physics.is_pb()) return kernel.why;
  return "--model pb: a Poisson-Boltzmann solve on " + timing.device + "; its direct sums: " +
         (timing.direct_sums.empty() && kernel.kernel ? std::string(kernel.kernel->name) : timing.direct_sums) + " (" +
         kernel.why + ")";
}

MapResult compute_map(const Atoms& atoms, const MapRequest& request, const KernelSelection& kernel, MapFiles* files) {
  validate(request.physics);
  MapResult result;               // returned by this one name on every path: the streamed files refer to result.map
  if (request.physics.is_pb()) {  // a field solve, not a sum over pairs
    compute_pb_map(result, atoms, request, kernel, files);
    return result;
  }
  result.kernel = kernel;
  const Stopwatch prepare;
  const PreparedProblem problem = PreparedProblem::for_physics(atoms, request.grid, request.physics);
  result.map.grid = request.grid;
  result.map.physics = request.physics;
  result.map.source = request.source;
  assign_poisoned(result.map.values, request.grid.point_count());  // every point NaN until computed
  result.timing.prepare_seconds = prepare.seconds();
  if (request.devices_ready.valid()) request.devices_ready.wait();
  RunOptions run = request.compute.run;
  run.progress = request.progress;
  if (files) {
    files->start(result.map);
    run.planes_done = [files, also = request.compute.run.planes_done](std::int64_t first, std::int64_t count) {
      files->planes_ready(first, count);
      if (also) also(first, count);
    };
  }
  const ComputeTiming t = kernel.kernel->run(problem.view(result.map.values.data()), run);
  result.timing.kernel_seconds = t.kernel_seconds;
  result.timing.transfer_seconds = std::max(0.0, t.wall_seconds - t.kernel_seconds);
  result.timing.device = t.device;
  result.timing.parts = t.parts;
  result.timing.phases = t.phases;
  result.timing.method = t.method;
  return result;
}

ComputeTiming compute_planes(const KernelVariant& kernel, const PreparedProblem& problem, float* out,
                             std::int64_t first_plane, std::int64_t planes, const RunOptions& run) {
  GridSumProblem part = problem.view(out);
  if (first_plane < 0 || planes < 0 || first_plane + planes > part.nz)
    throw Error("internal error: planes " + std::to_string(first_plane) + "+" + std::to_string(planes) +
                " outside the map's " + std::to_string(part.nz));
  part.nz = planes;
  part.z_offset += first_plane;
  return kernel.run(part, run);
}

// ---- the pipeline of one job -------------------------------------------------------------------

void MapObserver::charges_assigned(const AssignedStructure&, double) {}
void MapObserver::notice(const std::string&) {}
void MapObserver::prepared(const PreparedJob&) {}
void MapObserver::progress(std::size_t, std::size_t) {}
void MapObserver::computed(const MapResult&) {}
void MapObserver::written(const std::string&, const std::string&) {}
void MapObserver::waiting() {}

JobInput read_job_input(const MapJob& job, MapObserver& observer, TimingReport* timing) {
  const StructureSource& input = job.input;
  JobInput in;
  if (!input.from_file()) {
    in.structure.atoms = *input.atoms;
    in.source = input.description;
  } else if (!needs_charge_assignment(input.file_format())) {
    in.structure = load_structure(input.path, input.file_format(), timing);
    in.source = describe_source(input.path, in.structure.atoms);
  } else {
    const Stopwatch clock;
    in.assigned.emplace(
        assign_charges(input.path, input.file_format(), input.charges, [&observer] { observer.waiting(); }));
    if (timing) timing->read_seconds += clock.seconds();
    observer.charges_assigned(*in.assigned, clock.seconds());
    in.structure = in.assigned->structure;
    in.source = describe_source(input.path + " (charges: " + in.assigned->describe() + ")", in.structure.atoms);
  }
  for (const std::string& notice : in.structure.notices) observer.notice(notice);
  return in;
}

namespace {

/// check_grid_fits, and for --model pb what the solve needs beyond the map (pb/pb_limits.h).
void check_job_grid_fits(const MapJob& job, const GridSpec& grid) {
  check_grid_fits(grid);
  if (!job.physics.is_pb()) return;
  pb::check_pb_fits(grid, job.physics.pb, expected_pb_host_plan(job.compute));
}

}  // namespace

PreparedJob prepare_job(const MapJob& job, MapObserver& observer, bool check_outputs) {
  const StructureSource& input = job.input;
  if (check_outputs) {
    check_output_paths(
        job.outputs, input.from_file() ? std::vector<std::string>{input.path} : std::vector<std::string>{}, job.write);
    if (!input.keep_pqr.empty()) {
      check_output_path(input.keep_pqr);
      check_output_path(AssignedStructure::log_path_for(input.keep_pqr));
    }
  }
  PreparedJob p;
  if (check_outputs && !job.outputs.empty())
    p.replaced_files_released = release_replaced_file_caches_beside(job.outputs).share();
  if (const std::optional<GridSpec> grid = explicit_grid(job.grid)) check_job_grid_fits(job, *grid);  // before reading
  // The kernel's choice may start CUDA's driver (0.23-0.33 s on a GPU host: every visible GPU) and a
  // GPU kernel's context takes ~0.1 s more: both on a thread while the input is read (--backend cpu
  // never asks CUDA: select_kernel). The thread owns its promise (shared): this function may leave
  // by an exception before the thread is done.
  if (!job.compute.kernel.empty()) find_kernel(job.compute.kernel);  // an unknown name before the read
  const auto chosen = std::make_shared<std::promise<KernelSelection>>();
  std::future<KernelSelection> kernel = chosen->get_future();
  p.devices_ready = std::async(std::launch::async, [compute = job.compute, model = job.physics.model, chosen] {
                      KernelSelection k;
                      try {
                        k = select_kernel(compute, model);
                      } catch (...) {
                        chosen->set_exception(std::current_exception());
                        return;
                      }
                      chosen->set_value(k);
                      if (k.kernel->backend != Backend::Cuda) return;
                      std::vector<int> devices = compute.run.devices;
                      if (devices.empty()) devices.push_back(compute.run.device);
                      // Each GPU's context on a thread of its own: made one after another, the second
                      // GPU's waited on the path (the capsid on 2 × H200, 2026-11-29: a 159 ms memory check).
                      std::vector<std::future<void>> contexts;
                      for (std::size_t d = 1; d < devices.size(); ++d)
                        contexts.push_back(std::async(std::launch::async, cuda::warm_up_device, devices[d]));
                      cuda::warm_up_device(devices[0]);
                      for (auto& c : contexts) c.wait();
                    }).share();
  static_cast<JobInput&>(p) = read_job_input(job, observer, &p.timing);
  p.kernel = kernel.get();  // the choice's error, if any, here
  p.grid = make_grid(job.grid, p.structure.atoms);
  check_job_grid_fits(job, p.grid);
  if (job.physics.is_pb()) check_pb_input(job, p, observer);
  observer.prepared(p);
  return p;
}

namespace {

MapRequest request_of(const MapJob& job, const GridSpec& grid, const std::string& source, MapObserver& observer) {
  MapRequest request;
  request.grid = grid;
  request.physics = job.physics;
  request.compute = job.compute;
  request.source = source;
  request.progress = [&observer](std::size_t done, std::size_t total) { observer.progress(done, total); };
  return request;
}

}  // namespace

MapResult compute_job(const MapJob& job, const PreparedJob& prepared, MapObserver& observer, MapFiles* files) {
  MapRequest request = request_of(job, prepared.grid, prepared.source, observer);
  request.devices_ready = prepared.devices_ready;
  MapResult result = compute_map(prepared.structure.atoms, request, prepared.kernel, files);
  result.timing.read_seconds = prepared.timing.read_seconds;
  observer.computed(result);
  return result;
}

void finish_job_outputs(const MapJob& job, const PreparedJob& prepared, MapResult& result, MapFiles& files,
                        MapObserver& observer) {
  files.finish(result.map, &result.timing, [&observer](const std::string& path) { observer.written(path, ""); });
  if (prepared.assigned && !job.input.keep_pqr.empty()) {
    const Stopwatch clock;
    prepared.assigned->keep(job.input.keep_pqr);
    result.timing.write_seconds += clock.seconds();
    observer.written(job.input.keep_pqr, prepared.assigned->charging.empty() ? "the PQR pdb2pqr made"
                                                                             : "the map's atoms: pdb2pqr's PQR, then "
                                                                               "what was charged here");
    observer.written(AssignedStructure::log_path_for(job.input.keep_pqr), "pdb2pqr's whole log");
  }
}

MapResult run_map_job(const MapJob& job, MapObserver& observer) {
  const PreparedJob prepared = prepare_job(job, observer);
  MapFiles files(job.outputs, job.write);
  MapResult result = compute_job(job, prepared, observer, &files);
  finish_job_outputs(job, prepared, result, files, observer);
  return result;
}

ComputeSession::ComputeSession(const MapJob& job) : job_(job) {
  const std::optional<GridSpec> grid = explicit_grid(job.grid);
  if (!grid) throw Error("internal error: a compute session needs an exact grid (origin and dims)");
  grid_ = *grid;
  check_grid_fits(grid_);
  validate(job_.physics);
  kernel_ = select_kernel(job_.compute, job_.physics.model);
  if (kernel_.kernel->backend == Backend::Cuda && job_.compute.run.devices.size() <= 1)
    workspace_ = std::make_shared<cuda::DeviceWorkspace>();
  if (model_label(job_.physics) == "pb" && job_.compute.backend != BackendChoice::Cpu)
    pb_workspace_ = std::make_shared<cuda::PbDeviceWorkspace>();
}

MapResult ComputeSession::compute(const Atoms& atoms, MapObserver& observer) const {
  MapRequest request = request_of(job_, grid_, job_.input.description, observer);
  request.compute.run.workspace = workspace_;
  request.pb_workspace = pb_workspace_;
  MapResult result = compute_map(atoms, request, kernel_);
  observer.computed(result);
  return result;
}

bool ComputeSession::sums_on_device() const noexcept {
  return workspace_ && kernel_.kernel->backend == Backend::Cuda && kernel_.kernel->accuracy == Accuracy::Exact &&
         model_label(job_.physics) != "pb";
}

TimingReport ComputeSession::sum_into_device(const Atoms& atoms, bool squares, MapObserver& observer) const {
  if (!sums_on_device()) throw Error("internal error: this session cannot sum its maps on the device");
  MapRequest request = request_of(job_, grid_, job_.input.description, observer);
  RunOptions run = request.compute.run;
  run.workspace = workspace_;
  run.progress = request.progress;
  run.sum_on_device = true;
  run.sum_squares = squares;
  const Stopwatch prepare;
  const PreparedProblem problem = PreparedProblem::for_physics(atoms, grid_, job_.physics);
  TimingReport timing;
  timing.prepare_seconds = prepare.seconds();
  // The map is never written to the host: the output pointer only satisfies the driver's checks.
  float unused = 0;
  const ComputeTiming t = kernel_.kernel->run(problem.view(&unused), run);
  timing.kernel_seconds = t.kernel_seconds;
  timing.transfer_seconds = std::max(0.0, t.wall_seconds - t.kernel_seconds);
  timing.device = t.device;
  return timing;
}

void ComputeSession::take_device_sums(FrameSums& sums) const {
  if (!workspace_) return;
  std::vector<std::uint64_t> limbs(sums.limbs().size());
  const std::uint64_t frames = cuda::take_frame_sums(*workspace_, limbs.data(), limbs.size());
  if (frames > 0) sums.merge(limbs.data(), limbs.size(), frames, job_.compute.run.threads);
}

TimingReport ComputeSession::compute_into(const Atoms& atoms, std::vector<float>& values, MapObserver& observer) const {
  if (values.size() != grid_.point_count()) throw Error("internal error: a frame buffer of the wrong size");
  if (model_label(job_.physics) == "pb") {
    MapResult result = compute(atoms, observer);
    values.swap(result.map.values);  // solve_pb makes its own buffer
    return result.timing;
  }
  MapRequest request = request_of(job_, grid_, job_.input.description, observer);
  RunOptions run = request.compute.run;
  run.workspace = workspace_;
  run.progress = request.progress;
  const Stopwatch prepare;
  const PreparedProblem problem = PreparedProblem::for_physics(atoms, grid_, job_.physics);
  TimingReport timing;
  timing.prepare_seconds = prepare.seconds();
  const ComputeTiming t = kernel_.kernel->run(problem.view(values.data()), run);
  timing.kernel_seconds = t.kernel_seconds;
  timing.transfer_seconds = std::max(0.0, t.wall_seconds - t.kernel_seconds);
  timing.device = t.device;
  timing.parts = t.parts;
  timing.phases = t.phases;
  timing.method = t.method;
  return timing;
}

}  // namespace espgrid
