// The inexact Newton iteration for the nonlinear PB system, written once over a "machine" that
// owns the vectors: the host's (src/pb/pb_nonlinear.cpp, hypre or the multigrid emulation for the
// linear steps) and the GPU's (kernels/pb/pb_nonlinear.cu). Every decision (when to stop, how
// tightly to solve each step, how far to step) is made here on scalars, so both machines take
// the same steps up to rounding.
//
// The system: F(u) = b − A₀u − N(u) = 0 on the interior, A₀ the conductances, N the Boltzmann term
// (pb_nonlinear_math.h). It is the gradient (with the sign flipped) of the strictly convex energy
// E(u) = ½uᵀA₀u − bᵀu + Σ cᵢB(uᵢ), so:
//  - each step solves J δ = F, J = A₀ + diag(N'(u)) (symmetric positive definite), by the linear
//    solver from δ = 0 to a relative residual η (Eisenstat–Walker's second choice, γ = 0.9,
//    α = 2, at most 0.1 and no tighter than the final tolerance needs): any such δ is a descent
//    direction of E;
//  - the step length λ satisfies Armijo's condition on E, E(u + λδ) − E(u) ≤ −10⁻⁴ λ F·δ, and
//    among such λ the residual picks one (line_search below). The change of E is summed from its
//    second-order remainder (no cancellation): ΔE(λ) = −λF·δ + ½λ²δ·A₀δ + Σ cᵢR(uᵢ, λδᵢ).
// It stops when ‖F(u)‖₂ ≤ tolerance·‖b‖₂, b the linear equation's right-hand side (the linear
// solvers' own ‖b − Au‖₂/‖b‖₂; with the direct formulation and an electroneutral salt ‖b‖₂ = ‖F(0)‖₂).
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "src/core/errors.h"
#include "src/core/text_format.h"

namespace espgrid::pb {

struct NewtonSettings {
  double tolerance = 1e-6;          ///< ‖F(u)‖₂/‖b‖₂ to stop at
  int max_iterations = 200;         ///< Newton steps
  int max_linear_iterations = 200;  ///< per linear solve
  double max_forcing = 0.1;         ///< the loosest relative tolerance of a linear step
  double armijo = 1e-4;             ///< sufficient decrease of the energy
  int max_backtracks = 60;          ///< step halvings (at least) before the line search gives up
};

/// What one linear solve reports.
struct LinearStep {
  int iterations = 0;
  bool converged = false;
};

/// What the iteration did.
struct NewtonOutcome {
  int iterations = 0;             ///< Newton steps taken
  int linear_iterations = 0;      ///< the linear solver's iterations, all steps together
  int unconverged_linear = 0;     ///< steps whose linear solve stopped at its iteration limit (inexact anyway)
  double initial_norm = 0;        ///< the reference ‖b‖₂ the residuals are relative to
  double relative_residual = 0;   ///< ‖F(u)‖₂/‖b‖₂ at the end
  std::vector<double> residuals;  ///< ‖F‖₂/‖b‖₂ at the start and after each step
  std::vector<double> steps;      ///< the accepted step length λ of each step
  bool converged = false;
};

/// Newton's forcing term (Eisenstat & Walker 1996, choice 2, with their safeguard), kept loose
/// enough not to solve past what the final tolerance needs.
inline double forcing_term(int step, double norm, double previous_norm, double previous_eta, double target,
                           const NewtonSettings& s) {
  constexpr double gamma = 0.9;
  double eta = s.max_forcing;
  if (step > 0) {
    const double ratio = norm / previous_norm;
    eta = gamma * ratio * ratio;
    const double safeguard = gamma * previous_eta * previous_eta;
    if (safeguard > 0.1) eta = std::max(eta, safeguard);
    eta = std::min(eta, s.max_forcing);
  }
  // Solving J δ = F to η·‖F‖ leaves ‖F(u + δ)‖ ≈ η‖F‖ (+ the quadratic term): half the target is enough.
  return std::max(eta, std::min(s.max_forcing, 0.5 * target / norm));
}

/// The step length along δ from `norm` = ‖F(u)‖₂, by halving from λ = 1. Every accepted λ satisfies
/// Armijo's condition on the energy (so the iteration converges from anywhere); among those the
/// residual decides, as in APBS's damped Newton: λ = 1 when it lowers ‖F‖, else λ is halved while
/// ‖F(u + λδ)‖ keeps falling and the λ with the smallest residual is taken. (The energy alone took
/// full steps that overshot into the exponential's steep side, from where Newton crept back about
/// 1 kT/e a step: AChBP at 1 Å took 14 steps, 8 with the residual's say; a quadratic backtracking
/// model of the energy cut the first steps to λ = 0.1 where halving finds 0.25.)
template <class Machine>
double line_search(Machine& m, double norm, double f_delta, double delta_a_delta, double reference,
                   const NewtonSettings& s) {
  const double current = norm * norm;
  double lambda = 1.0, best_lambda = 0.0, best = HUGE_VAL;
  for (int tries = 0;; ++tries) {
    double remainder = 0, residual = 0;  // Σ c R(u, λδ) and ‖F(u + λδ)‖²
    m.line_trial(lambda, remainder, residual);
    const double change = -lambda * f_delta + 0.5 * lambda * lambda * delta_a_delta + remainder;
    const bool armijo = std::isfinite(change) && change <= -s.armijo * lambda * f_delta && std::isfinite(residual);
    if (armijo) {
      if (residual >= best) break;  // the residual grew again: the previous λ was the best
      best = residual;
      best_lambda = lambda;
      if (lambda == 1.0 && residual < current) break;  // a plain Newton step
    } else if (best_lambda > 0) {
      break;
    }
    if (tries >= s.max_backtracks) {
      if (best_lambda > 0) break;
      throw Error("nonlinear PB: the Newton line search found no step that lowers the energy after " +
                  std::to_string(tries) + " reductions (relative residual " + short_scientific(norm / reference) + ")");
    }
    lambda *= 0.5;
  }
  return best_lambda;
}

/// The machine's contract (see the two implementations):
///   double residual_norm();               F = b − A₀u − N(u) at the current u; returns ‖F‖₂
///   void set_jacobian();                  J = A₀ + diag(N'(u)) for the next linear solve
///   LinearStep solve_step(double eta, int max_iterations);   δ with ‖F − Jδ‖₂ ≤ η‖F‖₂, from δ = 0
///   void prepare_line(double& f_dot_delta, double& delta_a_delta);   A₀δ, F·δ and δ·A₀δ
///   void line_trial(double lambda, double& remainder, double& residual);
///                                         Σ cᵢ R(uᵢ, λδᵢ) and ‖F(u + λδ)‖₂² (one pass)
///   void take_step(double lambda);        u += λδ
///
/// `reference` is ‖b‖₂ of the linear equation's system (the norm the residual is relative to).
/// The machine's u holds the starting point (0, or the split formulation's linear solution).
template <class Machine>
NewtonOutcome newton_solve(Machine& m, double reference, const NewtonSettings& s) {
  NewtonOutcome out;
  double norm = m.residual_norm();
  if (!std::isfinite(norm) || !std::isfinite(reference))
    throw Error("nonlinear PB: the right-hand side is not finite (charges or boundary values out of range)");
  if (reference == 0.0) reference = 1.0;  // no charges and no boundary values: the residual itself
  out.initial_norm = reference;
  out.residuals.push_back(norm / reference);
  const double target = s.tolerance * reference;
  double previous_norm = norm, eta = s.max_forcing;
  while (norm > target) {
    if (out.iterations >= s.max_iterations) {
      out.relative_residual = norm / reference;
      return out;
    }
    m.set_jacobian();
    eta = forcing_term(out.iterations, norm, previous_norm, eta, target, s);
    const LinearStep linear = m.solve_step(eta, s.max_linear_iterations);
    out.linear_iterations += linear.iterations;
    out.unconverged_linear += linear.converged ? 0 : 1;
    double f_delta = 0, delta_a_delta = 0;
    m.prepare_line(f_delta, delta_a_delta);
    if (!(f_delta > 0) || !std::isfinite(delta_a_delta))
      throw Error("nonlinear PB: the Newton step is not a descent direction (F.delta = " + number_text(f_delta) +
                  "); the linear solver failed");
    const double lambda = line_search(m, norm, f_delta, delta_a_delta, reference, s);
    m.take_step(lambda);
    previous_norm = norm;
    norm = m.residual_norm();
    if (!std::isfinite(norm)) throw Error("nonlinear PB: the residual became non-finite during the Newton iteration");
    ++out.iterations;
    out.residuals.push_back(norm / reference);
    out.steps.push_back(lambda);
  }
  out.relative_residual = norm / reference;
  out.converged = true;
  return out;
}

}  // namespace espgrid::pb
