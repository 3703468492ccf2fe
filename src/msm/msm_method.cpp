#include "src/msm/msm_method.h"

#include <cstdio>

#include "src/core/text_format.h"
#include "src/msm/msm_cpu.h"
#include "src/msm/msm_cuda_driver.h"
#include "src/msm/msm_plan.h"

namespace espgrid {
namespace {

std::string method_text(const ResolvedMsm& resolved, const msm::Plan& plan) {
  const std::string bound = number_text(resolved.error_bound);  // "%g" in any locale
  return "multilevel summation (approximate), " + describe(resolved.params) + ", " +
         std::to_string(plan.level_count()) + (plan.level_count() == 1 ? " level" : " levels") + " (" +
         resolved.origin + "); expected relative RMS error <= " + bound + " at points >= 1.4 Å from atoms";
}

}  // namespace

double msm_bound(const MethodParameters& method, PairModel model) { return resolve_msm(method, model).error_bound; }

RunTiming run_cpu_msm(const GridSumProblem& problem, const RunOptions& options) {
  const ResolvedMsm resolved = resolve_msm(options.method, problem.model);
  const msm::Plan plan = msm::make_plan(problem, resolved.params);
  RunTiming timing = msm::cpu_compute(problem, plan, options.threads, options.progress, options.planes_done);
  timing.method = method_text(resolved, plan);
  return timing;
}

RunTiming run_msm_with(Backend backend, const GridSumProblem& problem, const MsmParameters& params,
                       const RunOptions& options) {
  validate(params);
  const msm::Plan plan = msm::make_plan(problem, params);
  if (backend == Backend::Cpu)
    return msm::cpu_compute(problem, plan, options.threads, options.progress, options.planes_done);
  cuda::MsmRunOptions o;
  o.device = options.devices.size() == 1 ? options.devices.front() : options.device;
  o.max_slab_bytes = options.max_slab_bytes;
  o.progress = options.progress;
  o.planes_done = options.planes_done;
  return cuda::compute_msm(problem, plan, o);
}

RunTiming run_cuda_msm(const GridSumProblem& problem, const RunOptions& options) {
  const ResolvedMsm resolved = resolve_msm(options.method, problem.model);
  const msm::Plan plan = msm::make_plan(problem, resolved.params);
  cuda::MsmRunOptions o;
  o.device = options.devices.size() == 1 ? options.devices.front() : options.device;
  o.max_slab_bytes = options.max_slab_bytes;
  o.progress = options.progress;
  o.planes_done = options.planes_done;
  o.workspace = options.workspace.get();
  RunTiming timing = cuda::compute_msm(problem, plan, o);
  timing.method = method_text(resolved, plan);
  return timing;
}

}  // namespace espgrid
