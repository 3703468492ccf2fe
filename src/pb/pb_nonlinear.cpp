#include "src/pb/pb_nonlinear.h"

#include <cmath>

#include "src/core/errors.h"
#include "src/core/stopwatch.h"
#include "src/core/text_format.h"
#include "src/core/thread_count.h"
#include "src/pb/pb_cuda_driver.h"
#include "src/pb/pb_hypre.h"
#include "src/pb/pb_multigrid.h"

namespace espgrid::pb {
namespace {

/// Σ f(idx) over the interior nodes, planes over threads (static schedule: the same sum for the
/// same thread count).
template <class F>
double interior_sum(const long* n, int threads, F&& f) {
  double sum = 0.0;
  const bool parallel = n[0] * n[1] * n[2] >= kParallelNodes;
#pragma omp parallel for schedule(static) reduction(+ : sum) num_threads(threads) if (parallel)
  for (long k = 1; k < n[2] - 1; ++k)
    for (long j = 1; j < n[1] - 1; ++j) {
      const long row = n[0] * (j + n[1] * k);
      for (long i = 1; i < n[0] - 1; ++i) sum += f(row + i);
    }
  return sum;
}

/// Σ f(idx) and Σ g(idx) over the interior nodes in one pass.
template <class F, class G>
void interior_sums(const long* n, int threads, F&& f, G&& g, double& sum_f, double& sum_g) {
  double a = 0.0, b = 0.0;
  const bool parallel = n[0] * n[1] * n[2] >= kParallelNodes;
#pragma omp parallel for schedule(static) reduction(+ : a, b) num_threads(threads) if (parallel)
  for (long k = 1; k < n[2] - 1; ++k)
    for (long j = 1; j < n[1] - 1; ++j) {
      const long row = n[0] * (j + n[1] * k);
      for (long i = 1; i < n[0] - 1; ++i) {
        a += f(row + i);
        b += g(row + i);
      }
    }
  sum_f = a;
  sum_g = b;
}

/// The host's vectors for pb_newton.h: the system's conductances, its mass term c (the Boltzmann
/// term's coefficient) and source b; u, A₀u, δ, A₀δ. The system itself is the Jacobian the linear
/// solvers see: residual_norm() writes F into its rhs and the Jacobian's diagonal term at the same
/// u into its c (one pass), and the destructor restores both.
class HostMachine {
 public:
  HostMachine(PbSystem& system, const BoltzmannSpecies& ions, const std::vector<double>* coulomb, PbSolver solver,
              int threads, bool across_ranks)
      : system_(system),
        ions_(ions),
        solver_(solver),
        threads_(threads),
        across_ranks_(across_ranks),
        mass_(std::move(system.c)),
        b_(std::move(system.rhs)) {
    system_.c = mass_;
    system_.rhs = b_;
    const std::size_t size = mass_.size();
    if (coulomb) {
      // Split: the linear rhs holds −c φ_C (the mass term of the Coulomb part); the Boltzmann term
      // of u + φ_C takes its place.
      offset_ = *coulomb;
      b_effective_.resize(size);
      for (std::size_t i = 0; i < size; ++i) b_effective_[i] = b_[i] + mass_[i] * offset_[i];
    }
    for (int d = 0; d < 3; ++d) n_[d] = static_cast<long>(system.grid.dims[d]);
    u_.assign(size, 0.0);
    a_u_.assign(size, 0.0);
    delta_.assign(size, 0.0);
    a_delta_.assign(size, 0.0);
  }
  ~HostMachine() {
    system_.c = std::move(mass_);
    system_.rhs = std::move(b_);
  }
  HostMachine(const HostMachine&) = delete;
  HostMachine& operator=(const HostMachine&) = delete;

  /// u = the linear equation's solution to `eta` (the split formulation's starting point; the
  /// system still holds the linear operator and source).
  void start_linear(double eta, int max_iterations) {
    const LinearStep step = linear_solve(eta, max_iterations, u_);
    linear_iterations_ += step.iterations;
  }

  double residual_norm() {
    const MgOperator a = operator_of(system_);
    const std::vector<double>& b = offset_.empty() ? b_ : b_effective_;
    double* jacobian = system_.c.data();
    double* f = system_.rhs.data();
    const double ff = interior_sum(n_, threads_, [&](long idx) {
      const double v = total(idx);
      a_u_[idx] = conductance_row(a, u_.data(), idx);
      const double r = b[idx] - a_u_[idx] - boltzmann_value(ions_, mass_[idx], v);
      f[idx] = r;
      jacobian[idx] = boltzmann_slope(ions_, mass_[idx], v);
      return r * r;
    });
    return std::sqrt(ff);
  }

  void set_jacobian() {}  // residual_norm() wrote it

  LinearStep solve_step(double eta, int max_iterations) { return linear_solve(eta, max_iterations, delta_); }

  void prepare_line(double& f_dot_delta, double& delta_a_delta) {
    const MgOperator a = operator_of(system_);
    const double* f = system_.rhs.data();
    interior_sums(
        n_, threads_, [&](long idx) { return f[idx] * delta_[idx]; },
        [&](long idx) {
          a_delta_[idx] = conductance_row(a, delta_.data(), idx);
          return delta_[idx] * a_delta_[idx];
        },
        f_dot_delta, delta_a_delta);
  }

  void line_trial(double lambda, double& remainder, double& residual) {
    const std::vector<double>& b = offset_.empty() ? b_ : b_effective_;
    interior_sums(
        n_, threads_,
        [&](long idx) { return boltzmann_remainder(ions_, mass_[idx], total(idx), lambda * delta_[idx]); },
        [&](long idx) {
          const double r = b[idx] - a_u_[idx] - lambda * a_delta_[idx] -
                           boltzmann_value(ions_, mass_[idx], total(idx) + lambda * delta_[idx]);
          return r * r;
        },
        remainder, residual);
  }

  void take_step(double lambda) {
    interior_sum(n_, threads_, [&](long idx) {
      u_[idx] += lambda * delta_[idx];
      return 0.0;
    });
  }

  std::size_t clipped_nodes() const {
    return static_cast<std::size_t>(interior_sum(
        n_, threads_, [&](long idx) { return boltzmann_clipped(ions_, mass_[idx], total(idx)) ? 1.0 : 0.0; }));
  }

  std::vector<double>& solution() { return u_; }
  const SolveReport& last_linear() const { return last_; }
  int linear_iterations() const { return linear_iterations_; }
  double setup_seconds() const { return setup_seconds_; }

 private:
  double total(long idx) const { return offset_.empty() ? u_[idx] : u_[idx] + offset_[idx]; }

  LinearStep linear_solve(double eta, int max_iterations, std::vector<double>& x) {
    last_ = solver_ == PbSolver::Hypre ? solve_hypre(system_, x, eta, max_iterations, threads_, across_ranks_)
                                       : solve_multigrid_cpu(system_, x, eta, max_iterations, MgSettings{}, threads_);
    setup_seconds_ += last_.setup_seconds;
    return {last_.iterations, last_.converged};
  }

  PbSystem& system_;
  const BoltzmannSpecies ions_;
  const PbSolver solver_;
  const int threads_;
  const bool across_ranks_;
  long n_[3] = {0, 0, 0};
  std::vector<double> mass_, b_, offset_, b_effective_, u_, a_u_, delta_, a_delta_;
  SolveReport last_;
  int linear_iterations_ = 0;
  double setup_seconds_ = 0;
};

double interior_norm(const PbSystem& system, const std::vector<double>& v, int threads) {
  const long n[3] = {static_cast<long>(system.grid.dims[0]), static_cast<long>(system.grid.dims[1]),
                     static_cast<long>(system.grid.dims[2])};
  return std::sqrt(interior_sum(n, threads, [&](long idx) { return v[idx] * v[idx]; }));
}

/// Without ions the equation is linear: one step solved to the tolerance is the answer.
NewtonSettings linear_when_ionless(NewtonSettings s, const BoltzmannSpecies& ions) {
  if (ions.count == 0) s.max_forcing = s.tolerance;
  return s;
}

NonlinearReport solve_on_device(PbSystem& system, std::vector<double>& u, const BoltzmannSpecies& ions,
                                const std::vector<double>* coulomb, const NewtonSettings& settings, int threads,
                                int device);

}  // namespace

BoltzmannSpecies boltzmann_species(const PbOptions& options) {
  BoltzmannSpecies ions;
  if (!pb_has_ions(options)) return ions;
  // αₛ = cₛ / (2I), so that Σ αₛ zₛ² = 1 and κ² carries the strength (a 1:1 salt: ½ each).
  const double strength = pb_ionic_strength(options);
  for (const PbIon& ion : ion_species(options)) {
    if (ions.count == kMaxIonSpecies) throw Error("internal error: more ion species than the Newton kernels hold");
    ions.charge[ions.count] = ion.charge;
    ions.weight[ions.count] = ion.concentration / (2 * strength);
    ++ions.count;
  }
  return ions;
}

NonlinearReport solve_nonlinear(PbSystem& system, std::vector<double>& u, const BoltzmannSpecies& ions,
                                const std::vector<double>* coulomb, PbSolver solver, const NewtonSettings& settings,
                                int threads, bool across_ranks, int device) {
  threads = threads_to_use(threads);
  if (solver == PbSolver::CudaMultigrid) return solve_on_device(system, u, ions, coulomb, settings, threads, device);
  if (solver != PbSolver::Hypre && solver != PbSolver::CpuMultigrid)
    throw Error("internal error: solve_nonlinear needs a chosen solver");
  NonlinearReport report;
  const Stopwatch clock;
  const double reference = interior_norm(system, system.rhs, threads);
  {
    HostMachine machine(system, ions, coulomb, solver, threads, across_ranks);
    if (coulomb) machine.start_linear(settings.max_forcing, settings.max_linear_iterations);
    report.newton = newton_solve(machine, reference, linear_when_ionless(settings, ions));
    report.newton.linear_iterations += machine.linear_iterations();
    report.clipped_nodes = machine.clipped_nodes();
    report.solve.method = machine.last_linear().method;  // empty when no step was needed
    if (report.solve.method.empty())
      report.solve.method = solver == PbSolver::Hypre ? "hypre PCG + PFMG" : "espgrid multigrid-preconditioned CG";
    report.solve.device = machine.last_linear().device;
    u = std::move(machine.solution());
    report.solve.setup_seconds = machine.setup_seconds();
  }
  // "solve": the linear solves and the Newton iteration's own passes (residuals, line searches), and
  // MPI's start in the first hypre call (outside the phases for lpbe).
  report.solve.solve_seconds = clock.seconds() - report.solve.setup_seconds;
  report.solve.iterations = report.newton.linear_iterations;
  report.solve.converged = report.newton.converged;
  report.solve.relative_residual = nonlinear_residual(system, u, ions, coulomb, threads);
  return report;
}

NewtonSettings newton_settings(const PbOptions& o) {
  NewtonSettings s;
  s.tolerance = o.tolerance;
  s.max_iterations = o.max_iterations;
  s.max_linear_iterations = o.max_iterations;
  return linear_when_ionless(s, boltzmann_species(o));
}

std::string newton_method(const std::string& linear_method, const NewtonOutcome& newton, std::size_t clipped_nodes) {
  std::string text = "inexact Newton, " + std::to_string(newton.iterations) +
                     (newton.iterations == 1 ? " step" : " steps") + ", over " + linear_method;
  if (clipped_nodes > 0)
    text += "; exponent clipped at 85 (APBS's limit) at " + std::to_string(clipped_nodes) + " nodes";
  return text;
}

SolveReport solve_nonlinear(PbSystem& system, std::vector<double>& u, const PbOptions& options,
                            const std::vector<double>* coulomb, PbSolver solver, int threads, bool across_ranks,
                            int device) {
  NonlinearReport r = solve_nonlinear(system, u, boltzmann_species(options), coulomb, solver, newton_settings(options),
                                      threads, across_ranks, device);
  r.solve.method = newton_method(r.solve.method, r.newton, r.clipped_nodes);
  return r.solve;
}

double nonlinear_residual(const PbSystem& system, const std::vector<double>& u, const BoltzmannSpecies& ions,
                          const std::vector<double>* coulomb, int threads) {
  threads = threads_to_use(threads);
  const MgOperator a = operator_of(system);
  const double* offset = coulomb ? coulomb->data() : nullptr;
  const double rr = interior_sum(a.n, threads, [&](long idx) {
    const double off = offset ? offset[idx] : 0.0;
    // The linear rhs of the split formulation holds −c φ_C; the Boltzmann term replaces it.
    const double b = system.rhs[idx] + system.c[idx] * off;
    const double r = b - conductance_row(a, u.data(), idx) - boltzmann_value(ions, system.c[idx], u[idx] + off);
    return r * r;
  });
  const double bb = interior_sum(a.n, threads, [&](long idx) { return system.rhs[idx] * system.rhs[idx]; });
  return bb > 0 ? std::sqrt(rr / bb) : std::sqrt(rr);
}

namespace {

NonlinearReport solve_on_device(PbSystem& system, std::vector<double>& u, const BoltzmannSpecies& ions,
                                const std::vector<double>* coulomb, const NewtonSettings& settings, int threads,
                                int device) {
  // The hierarchy's shape from the host; level 0's operator and the whole iteration on the device.
  const MgSettings mg;
  const std::vector<MgLevel> shape =
      hierarchy_shape({static_cast<long>(system.grid.dims[0]), static_cast<long>(system.grid.dims[1]),
                       static_cast<long>(system.grid.dims[2])},
                      mg);
  std::vector<cuda::PbMgLevel> levels = device_levels(shape);  // level 0 takes the operator below
  levels[0].wx = system.wx.data();
  levels[0].wy = system.wy.data();
  levels[0].wz = system.wz.data();
  levels[0].c = system.c.data();
  cuda::PbMgRun run;
  run.smoothing = mg.smoothing;
  run.coarsest_sweeps = mg.coarsest_sweeps;
  run.tolerance = settings.tolerance;
  run.max_iterations = settings.max_linear_iterations;
  run.device = device;
  cuda::PbNewtonInput newton;
  newton.ions = ions;
  newton.settings = linear_when_ionless(settings, ions);
  u.assign(system.size(), 0.0);
  NonlinearReport report;
  const cuda::PbMgResult r = cuda::solve_pb_newton(levels.data(), static_cast<int>(levels.size()), system.rhs.data(),
                                                   coulomb ? coulomb->data() : nullptr, u.data(), run, newton,
                                                   report.newton, report.clipped_nodes);
  report.solve.method =
      "espgrid multigrid-preconditioned CG (CUDA, double precision; the Newton iteration on the device)";
  report.solve.device = r.device;
  report.solve.iterations = report.newton.linear_iterations;
  report.solve.setup_seconds = r.upload_seconds;
  report.solve.solve_seconds = r.solve_seconds + r.download_seconds;
  report.solve.converged = report.newton.converged;
  report.solve.relative_residual = nonlinear_residual(system, u, ions, coulomb, threads);
  return report;
}

}  // namespace
}  // namespace espgrid::pb
