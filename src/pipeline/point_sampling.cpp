#include "src/pipeline/point_sampling.h"

#include <algorithm>
#include <cmath>

#include "src/compute/point_sum_inputs.h"
#include "src/compute/points_cuda_driver.h"
#include "src/core/errors.h"
#include "src/core/stopwatch.h"
#include "src/core/text_format.h"
#include "src/core/thread_count.h"
#include "src/registry/kernel_registry.h"
#include "src/view/vertex_potential.h"

namespace espgrid {

void check_point_job(const MapJob& job) {
  if (job.physics.is_pb())
    throw UsageError(
        "--model pb is a field solve with no sum at a point: compute its map and sample that (espgrid "
        "map STRUCTURE --model pb -o pb.dx, then espgrid sample --map pb.dx --points FILE; in Python "
        "compute_map(..., model='pb').sample(points))");
  const MethodParameters& method = job.compute.run.method;
  if (method.accuracy != 0 || !method.msm.empty())
    throw UsageError(
        "--accuracy and --msm-* choose an approximate map method; the potential at points is summed "
        "exactly over every atom");
  if (!job.compute.kernel.empty())
    throw UsageError(
        "--kernel names a map kernel; points are summed by the point evaluators: --backend cpu (double "
        "precision) or --backend cuda (float32 on a GPU)");
  if (job.compute.run.devices.size() > 1)
    throw UsageError("the potential at points runs on one GPU; give --device N instead of --devices");
  if (job.compute.backend == BackendChoice::Cuda) {
    std::string reason;
    if (!cuda_available(&reason)) throw Error("--backend cuda: " + reason);
  }
}

namespace {

PointValues on_cpu(const MapJob& job, const Atoms& atoms, const std::vector<double>& points,
                   const ProgressFn& progress) {
  PointValues out;
  const int threads = threads_to_use(job.compute.run.threads);
  const std::size_t n = points.size() / 3;
  // In chunks of about 2^28 pair terms (a fraction of a second), so that progress is reported
  // and a Python caller's Ctrl-C is noticed between them; each point's sum is the same either way.
  const std::size_t chunk = std::max<std::size_t>(256, (std::size_t{1} << 28) / std::max<std::size_t>(atoms.size(), 1));
  const Stopwatch clock;
  out.values.reserve(n);
  for (std::size_t first = 0; first < n; first += chunk) {
    const std::size_t count = std::min(chunk, n - first);
    const std::vector<double> part(points.begin() + static_cast<std::ptrdiff_t>(3 * first),
                                   points.begin() + static_cast<std::ptrdiff_t>(3 * (first + count)));
    const std::vector<float> values = surface::potential_at(atoms, job.physics, part, threads);
    out.values.insert(out.values.end(), values.begin(), values.end());
    if (progress) progress(first + count, n);
  }
  out.seconds = out.kernel_seconds = clock.seconds();
  out.device = "CPU, " + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
  out.method = "exact direct sum over " + with_commas(atoms.size()) + " atoms, double precision";
  return out;
}

PointValues on_gpu(const MapJob& job, const Atoms& atoms, const std::vector<double>& points,
                   const ProgressFn& progress) {
  const std::size_t n = points.size() / 3;
  // Positions relative to the centre of the atoms' box: float32 then resolves them to ~1e-6 of
  // the molecule's size, wherever it lies.
  double centre[3] = {0, 0, 0};
  if (atoms.size() > 0) {
    const std::vector<double>* axes[3] = {&atoms.x, &atoms.y, &atoms.z};
    for (int a = 0; a < 3; ++a) {
      const auto [lo, hi] = std::minmax_element(axes[a]->begin(), axes[a]->end());
      centre[a] = 0.5 * (*lo + *hi);
    }
  }
  const PointSumInputs inputs(atoms.x, atoms.y, atoms.z, atoms.charge, coulomb_factor(job.physics), points,
                              {centre[0], centre[1], centre[2]});
  PointValues out;
  out.values.assign(n, 0.0f);
  const cuda::PointSumProblem problem =
      inputs.problem(job.physics.model, pair_parameters(job.physics), out.values.data());
  const ComputeTiming t = cuda::potential_at_points(problem, job.compute.run.device, progress);
  out.seconds = t.wall_seconds;
  out.kernel_seconds = t.kernel_seconds;
  out.device = t.device;
  out.method = "exact direct sum over " + with_commas(atoms.size()) + " atoms, float32 on the GPU";
  return out;
}

}  // namespace

PointValues sample_points(const MapJob& job, const Atoms& atoms, const std::vector<double>& points,
                          const ProgressFn& progress) {
  check_point_job(job);
  validate(job.physics);
  if (points.size() % 3 != 0) throw Error("internal error: points must hold x, y, z for each point");
  std::string reason;
  const bool have_cuda = cuda_available(&reason);
  std::string why;
  bool gpu = false;
  switch (job.compute.backend) {
    case BackendChoice::Cpu:
      why = "backend cpu";
      break;
    case BackendChoice::Cuda:
      gpu = true;
      why = "backend cuda";
      break;
    case BackendChoice::Auto:
      gpu = have_cuda;
      why = have_cuda ? "backend auto: CUDA device found" : "backend auto: no GPU (" + reason + ")";
      break;
  }
  if (gpu && !have_cuda) throw Error("--backend cuda: " + reason);
  PointValues out = gpu ? on_gpu(job, atoms, points, progress) : on_cpu(job, atoms, points, progress);
  out.why = why;
  return out;
}

PointValues interpolate_points(const PotentialMap& map, const std::vector<double>& points,
                               std::vector<std::size_t>& outside, std::vector<std::size_t>& not_finite) {
  PointValues out;
  const Stopwatch clock;
  out.values = surface::interpolate(map, points);
  out.seconds = out.kernel_seconds = clock.seconds();
  outside.clear();
  not_finite.clear();
  for (std::size_t i = 0; i < out.values.size(); ++i) {
    if (!surface::inside_box(map.grid, points[3 * i], points[3 * i + 1], points[3 * i + 2]))
      outside.push_back(i);
    else if (!std::isfinite(out.values[i]))
      not_finite.push_back(i);
  }
  out.device = "CPU, 1 thread";
  out.method = "trilinear interpolation of the map (" + describe(map.grid) + ", spacing " +
               shortest_text(map.grid.spacing[0]) + "," + shortest_text(map.grid.spacing[1]) + "," +
               shortest_text(map.grid.spacing[2]) + " Å)";
  return out;
}

std::string box_text(const GridSpec& g) {
  std::string text = "(";
  for (int a = 0; a < 3; ++a) {
    const double hi = g.origin[a] + g.spacing[a] * static_cast<double>(g.dims[a] - 1);
    text += (a ? ", " : "") + std::string(1, static_cast<char>('x' + a)) + " " + number_text(g.origin[a]) + " to " +
            number_text(hi);
  }
  return text + " Å)";
}

}  // namespace espgrid
