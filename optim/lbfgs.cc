#include "optim/lbfgs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/error.h"
#include "optim/run_impl.h"

namespace adgraph::optim {
namespace {

using detail::LbfgsState;
using detail::Run;
using detail::Step;

// L-BFGS: the two-loop recursion's direction, a strong-Wolfe step, the
// memory (s, y, ρ, γ) kept in the run's state.
class Lbfgs final : public detail::Method {
 public:
  detail::SolverKind kind() const override {
    return detail::SolverKind::kLbfgs;
  }
  void prepare(const Run&, const Eigen::VectorXd&) override {}
  double gradient_norm(const Run& run) const override {
    return run.reduce.norm_inf(run.st.g);
  }
  Step iterate(const Run& run) override;
  bool converged(const Run& run,
                 double old_f,
                 double /*norm*/,
                 Termination* why) const override {
    const double f = run.st.f, tolerance = run.options.tolerance_function;
    if (tolerance > 0 &&
        (old_f - f) / std::max({std::fabs(old_f), std::fabs(f), 1.0}) <=
            tolerance) {
      *why = Termination::kFunctionChange;
      return true;
    }
    return false;
  }
  std::string trace_header() const override {
    return "  Iter          Function value   Gradient norm       time";
  }
  std::string trace_columns(const Run& run,
                            double norm,
                            double seconds) const override {
    char line[128];
    std::snprintf(line,
                  sizeof(line),
                  "%6d  %22.15e  %14.6e  %9.3f",
                  run.st.iteration,
                  run.st.f,
                  norm,
                  seconds);
    return line;
  }
  void finish(const Run& run, LbfgsSummary* s) const override {
    char message[200];
    std::snprintf(
        message,
        sizeof(message),
        "%s after %d iterations and %d evaluations: f = %.17g, |g|inf = %.3e",
        termination_name(s->termination),
        run.st.iteration,
        run.st.evaluations,
        run.st.f,
        s->gradient_norm);
    s->message = message;
  }

 private:
  // d = −H·g by the two-loop recursion.
  void direction(const Run& run);
  // Adds the pair (s, y) unless sᵀy is not safely positive.
  void remember(const Run& run, Eigen::VectorXd s, Eigen::VectorXd y);

  // The direction, and the trial point of the last evaluation and the
  // line search's result.
  Eigen::VectorXd d_, trial_x_, trial_g_, kept_x_, kept_g_;
};

void Lbfgs::direction(const Run& run) {
  LbfgsState& st = run.st;
  const int k = static_cast<int>(st.s.size());
  std::vector<double> alpha(k);
  d_ = -st.g;
  for (int i = k - 1; i >= 0; --i) {
    alpha[i] = st.rho[i] * run.reduce.dot(st.s[i], d_);
    d_ -= alpha[i] * st.y[i];
  }
  d_ *= st.gamma;
  for (int i = 0; i < k; ++i) {
    const double beta = st.rho[i] * run.reduce.dot(st.y[i], d_);
    d_ += (alpha[i] - beta) * st.s[i];
  }
}

void Lbfgs::remember(const Run& run, Eigen::VectorXd s, Eigen::VectorXd y) {
  LbfgsState& st = run.st;
  const double sy = run.reduce.dot(s, y), yy = run.reduce.dot(y, y);
  if (!(sy > std::numeric_limits<double>::epsilon() * yy)) return;
  st.s.push_back(std::move(s));
  st.y.push_back(std::move(y));
  st.rho.push_back(1.0 / sy);
  st.gamma = sy / yy;
  if (static_cast<int>(st.s.size()) > run.options.history) {
    st.s.erase(st.s.begin());
    st.y.erase(st.y.begin());
    st.rho.erase(st.rho.begin());
  }
}

Step Lbfgs::iterate(const Run& run) {
  LbfgsState& st = run.st;
  direction(run);
  double dphi0 = run.reduce.dot(st.g, d_);
  if (!(dphi0 < 0)) {  // not a descent direction: restart from −g
    st.s.clear(), st.y.clear(), st.rho.clear();
    st.gamma = 1.0;
    d_ = -st.g;
    dphi0 = run.reduce.dot(st.g, d_);
    // |g|² underflows: no direction descends
    if (!(dphi0 < 0)) return Step::stop(Termination::kLineSearchFailed);
  }
  const double initial = st.iteration == 0 && st.s.empty()
                             ? std::min(1.0, 1.0 / std::sqrt(-dphi0))
                             : 1.0;
  auto line = [&](double a, double* phi, double* dphi) {
    trial_x_ = st.x + a * d_;
    *phi = run.evaluate(trial_x_, trial_g_);
    *dphi = run.reduce.dot(trial_g_, d_);
  };
  auto keep = [&] { kept_x_ = trial_x_, kept_g_ = trial_g_; };
  LineSearchOptions ls = run.options.line_search;
  ls.max_evaluations = std::min(ls.max_evaluations, run.evaluations_left());
  const LineSearchResult found =
      line_search_strong_wolfe(line, st.f, dphi0, initial, ls, keep);

  // Not found: the best point seen, if it decreased f.
  if (!found.found && !(found.phi < st.f))
    return Step::stop(Termination::kLineSearchFailed);
  remember(run, kept_x_ - st.x, kept_g_ - st.g);
  st.x = std::move(kept_x_);
  st.g = std::move(kept_g_);
  st.f = found.phi;
  return {found.found ? Step::Outcome::kTaken : Step::Outcome::kTakenLast};
}

}  // namespace

const char* termination_name(Termination t) { return name_of(t).data(); }

const FieldTable<LbfgsOptions>& LbfgsOptions::fields() {
  using O = LbfgsOptions;
  static const FieldTable<O> table = {
      field("history", &O::history, Range::closed(1, 1000), "history size m"),
      field("tolerance_gradient",
            &O::tolerance_gradient,
            Range::at_least(0).finite_only(),
            "stop when the gradient's infinity norm is at most this"),
      field("tolerance_function",
            &O::tolerance_function,
            Range::at_least(0).finite_only(),
            "stop when f's relative change is at most this (0: never)"),
      field("max_iterations",
            &O::max_iterations,
            Range::at_least(0),
            "iteration limit"),
      field("max_evaluations",
            &O::max_evaluations,
            Range::at_least(1),
            "objective evaluation limit"),
      field("trace", &O::trace, {}, "print one line per iteration on rank 0"),
      field("checkpoint_every",
            &O::checkpoint_every,
            Range::at_least(0),
            "write a checkpoint every this many iterations (0: never)"),
      field("checkpoint_path",
            &O::checkpoint_path,
            {},
            "checkpoint path prefix (rank r writes <path>.rank<r>of<P>)"),
      field("resume",
            &O::resume,
            {},
            "continue from the checkpoint at checkpoint_path"),
      field("checkpoint_problem",
            &O::checkpoint_problem,
            {},
            "the objective as a flat JSON object, checked when resuming"),
  };
  return table;
}

bool LbfgsOptions::is_valid(std::string* error) const {
  auto bad = [&](const std::string& msg) {
    *error = msg;
    return false;
  };
  std::string why, name;
  if (!check_fields(fields(), *this, &why, &name))
    return bad(name + ": " + why);
  if (!line_search.is_valid(error)) return false;
  if (!line_search_bounded.is_valid(error)) return false;
  if ((checkpoint_every > 0 || resume) && checkpoint_path.empty()) {
    return bad(
        "checkpoint_path is required with checkpoint_every > 0 or resume");
  }
  return true;
}

LbfgsSummary lbfgs(const Objective& objective,
                   Eigen::VectorXd& x,
                   const LbfgsOptions& options,
                   CommContext* comm,
                   Layout layout) {
  Lbfgs method;
  return detail::run(method, objective, x, options, comm, layout);
}

}  // namespace adgraph::optim
