#include "optim/lbfgsb.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "core/error.h"
#include "optim/lbfgsb_impl.h"
#include "optim/run_impl.h"

namespace adgraph::optim {
namespace {

using detail::Box;
using detail::CompactBfgs;
using detail::LbfgsState;
using detail::Reducer;
using detail::Run;
using detail::Step;
using detail::Where;

constexpr double kInf = std::numeric_limits<double>::infinity();

// The bounds filled out to x's length, or the first problem on this rank.
std::string complete_bounds(const Bounds& bounds,
                            int64_t n,
                            int rank,
                            Eigen::VectorXd* lower,
                            Eigen::VectorXd* upper) {
  const auto side = [&](const Eigen::VectorXd& given,
                        double open,
                        const char* name,
                        Eigen::VectorXd* out) -> std::string {
    if (given.size() == 0) {
      *out = Eigen::VectorXd::Constant(n, open);
      return {};
    }
    if (given.size() != n) {
      return std::string("bounds.") + name + " has " +
             std::to_string(given.size()) + " entries on rank " +
             std::to_string(rank) + ", x has " + std::to_string(n);
    }
    *out = given;
    return {};
  };
  std::string problem = side(bounds.lower, -kInf, "lower", lower);
  if (problem.empty()) problem = side(bounds.upper, kInf, "upper", upper);
  const auto given = static_cast<int64_t>(bounds.global_index.size());
  if (problem.empty() && given != 0 && given != n) {
    problem = "bounds.global_index has " + std::to_string(given) +
              " entries on rank " + std::to_string(rank) + ", x has " +
              std::to_string(n);
  }
  for (int64_t i = 0; problem.empty() && i < n; ++i) {
    const double l = (*lower)[i], u = (*upper)[i];
    if (std::isnan(l) || std::isnan(u) || l > u || l == kInf || u == -kInf) {
      char text[200];
      std::snprintf(text,
                    sizeof(text),
                    "bounds: entry %lld on rank %d has lower %.17g > upper "
                    "%.17g (or a NaN, or an empty side)",
                    static_cast<long long>(i),
                    rank,
                    l,
                    u);
      problem = text;
    }
  }
  return problem;
}

// ‖P(x − g) − x‖∞: the projected gradient's norm (zero at a KKT point).
double projected_gradient_norm(const Eigen::VectorXd& x,
                               const Eigen::VectorXd& g,
                               const Box& box,
                               const Reducer& reduce) {
  double norm = 0;
  for (int64_t i = 0; i < x.size(); ++i) {
    double gi = g[i];
    if (gi < 0) {
      if (box.has_upper(i)) gi = std::max(x[i] - box.upper[i], gi);
    } else {
      if (box.has_lower(i)) gi = std::min(x[i] - box.lower[i], gi);
    }
    norm = std::max(norm, std::fabs(gi));
  }
  return reduce.max_over_variables(norm);
}

int64_t count_active(const Eigen::VectorXd& x,
                     const Box& box,
                     const Reducer& reduce) {
  double active = 0;
  for (int64_t i = 0; i < x.size(); ++i)
    active += x[i] == box.lower[i] || x[i] == box.upper[i];
  reduce.sum_over_variables(&active, 1);
  return static_cast<int64_t>(active);
}

// The largest step along d that keeps x + α·d in the box (L-BFGS-B's
// stpmx), capped at `cap`.
double longest_step(const Eigen::VectorXd& x,
                    const Eigen::VectorXd& d,
                    const Box& box,
                    double cap,
                    const Reducer& reduce) {
  double step = cap;
  for (int64_t i = 0; i < x.size(); ++i) {
    if (d[i] < 0 && box.has_lower(i)) {
      const double room = box.lower[i] - x[i];
      if (room >= 0) {
        step = 0;
      } else if (d[i] * step < room) {
        step = room / d[i];
      }
    } else if (d[i] > 0 && box.has_upper(i)) {
      const double room = box.upper[i] - x[i];
      if (room <= 0) {
        step = 0;
      } else if (d[i] * step > room) {
        step = room / d[i];
      }
    }
  }
  return reduce.min_over_variables(step);
}

uint64_t bounds_fingerprint(const Eigen::VectorXd& lower,
                            const Eigen::VectorXd& upper) {
  std::string bytes(reinterpret_cast<const char*>(lower.data()),
                    sizeof(double) * lower.size());
  bytes.append(reinterpret_cast<const char*>(upper.data()),
               sizeof(double) * upper.size());
  return detail::fnv1a(bytes.data(), bytes.size()) | 1;  // never 0
}

// L-BFGS-B: the generalized Cauchy point, the subspace step from it, a
// Moré–Thuente search inside the box, the compact memory.
class Lbfgsb final : public detail::Method {
 public:
  explicit Lbfgsb(const Bounds& bounds) : bounds_(bounds) {}

  detail::SolverKind kind() const override {
    return detail::SolverKind::kLbfgsb;
  }
  void prepare(const Run& run, const Eigen::VectorXd& x) override;
  uint64_t fingerprint() const override { return fingerprint_; }
  Eigen::VectorXd start(const Eigen::VectorXd& x) const override {
    return x.cwiseMax(lower_).cwiseMin(upper_);
  }
  void resume(const Run& run) override {
    const LbfgsState& st = run.st;
    bfgs_.assign(st.s, st.y, st.sy, st.ss, st.gamma, run.reduce);
  }
  double gradient_norm(const Run& run) const override {
    return projected_gradient_norm(run.st.x, run.st.g, box(), run.reduce);
  }
  Step iterate(const Run& run) override;
  void observe(const Run& run) override {
    active_ = count_active(run.st.x, box(), run.reduce);
  }
  void store(const Run& run) const override {
    LbfgsState& st = run.st;
    st.s = bfgs_.s(), st.y = bfgs_.y();
    st.sy = bfgs_.sy(), st.ss = bfgs_.ss();
    st.gamma = bfgs_.theta();
    st.rho.clear();
  }
  bool converged(const Run& run,
                 double old_f,
                 double norm,
                 Termination* why) const override;
  std::string trace_header() const override {
    return "  Iter          Function value  Proj. gradient    Active       "
           "time";
  }
  std::string trace_columns(const Run& run,
                            double norm,
                            double seconds) const override;
  void finish(const Run& run, LbfgsSummary* s) const override;

 private:
  // The Cauchy point z and the subspace step from it, in z; false when the
  // memory broke down.
  bool step_point(const Run& run, detail::CauchyPoint* z);
  // The search along d = z − x; false when it found no step.
  bool search(const Run& run, const detail::CauchyPoint& z);

  Box box() const { return {lower_, upper_, bounds_.global_index}; }

  const Bounds& bounds_;
  Eigen::VectorXd lower_, upper_;  // filled out to x's length
  std::vector<Where> where_;
  bool boxed_ = false, constrained_ = false;
  uint64_t fingerprint_ = 0;
  int64_t active_ = 0;
  CompactBfgs bfgs_;
  // The search direction, gᵀd and dᵀd, the search's result and its point.
  Eigen::VectorXd d_, trial_x_, trial_g_;
  double gd_ = 0, dtd_ = 0;
  MoreThuenteResult found_;
};

void Lbfgsb::prepare(const Run& run, const Eigen::VectorXd& x) {
  const Reducer& reduce = run.reduce;
  Eigen::VectorXd lower, upper;
  detail::agree_or_throw(
      reduce,
      complete_bounds(bounds_, x.size(), reduce.rank(), &lower, &upper),
      [](const std::string& m) { throw OptionsError(m, {}, {}, "bounds"); });
  fingerprint_ = bounds_fingerprint(lower, upper);
  lower_ = std::move(lower), upper_ = std::move(upper);
  const Box b = box();

  // What the box holds fixed, and whether every variable is bounded on
  // both sides (then the first step is 1) or any at all.
  const int64_t n = x.size();
  where_.assign(n, Where::kFree);
  double kinds[2] = {0, 0};  // variables without both bounds, with any
  for (int64_t i = 0; i < n; ++i) {
    const bool l = b.has_lower(i), u = b.has_upper(i);
    if (!l && !u) where_[i] = Where::kUnbounded;
    if (l && u && b.upper[i] - b.lower[i] <= 0) where_[i] = Where::kFixed;
    kinds[0] += !(l && u);
    kinds[1] += l || u;
  }
  reduce.sum_over_variables(kinds, 2);
  boxed_ = kinds[0] == 0, constrained_ = kinds[1] > 0;
}

bool Lbfgsb::step_point(const Run& run, detail::CauchyPoint* z) {
  // Without bounds, once there is curvature, the step is plain L-BFGS.
  if (!constrained_ && bfgs_.k() > 0) {
    z->x = run.st.x;  // with c = 0 the subspace step's residual is −g
    z->c = Eigen::VectorXd::Zero(2 * bfgs_.k());
  } else {
    *z = detail::cauchy_point(
        run.st.x, run.st.g, box(), where_, bfgs_, run.reduce);
  }
  if (!z->ok || bfgs_.k() == 0) return z->ok;
  double free = 0;
  for (Where w : where_) free += detail::is_free(w);
  run.reduce.sum_over_variables(&free, 1);
  return free == 0 ||
         detail::subspace_minimization(
             run.st.x, run.st.g, box(), where_, bfgs_, run.reduce, *z);
}

bool Lbfgsb::search(const Run& run, const detail::CauchyPoint& z) {
  const LbfgsState& st = run.st;
  const int64_t n = st.x.size();
  d_ = z.x - st.x;
  ExactSum sums[2];
  sums[0].add_products(st.g.data(), d_.data(), n);
  sums[1].add_products(d_.data(), d_.data(), n);
  double dots[2];
  run.reduce.round_over_variables(sums, dots, 2);
  gd_ = dots[0], dtd_ = dots[1];
  if (!(gd_ < 0)) return false;  // the projection can make an ascent direction

  const double stpmax = !constrained_ ? 1e10
                        : st.iteration == 0
                            ? 1.0
                            : longest_step(st.x, d_, box(), 1e10, run.reduce);
  const double step = st.iteration == 0 && !boxed_
                          ? std::min(1.0 / std::sqrt(dtd_), stpmax)
                          : 1.0;
  auto line = [&](double a, double* phi, double* dphi) {
    trial_x_ = a == 1.0 ? z.x : Eigen::VectorXd(st.x + a * d_);
    *phi = run.evaluate(trial_x_, trial_g_);
    *dphi = run.reduce.dot(trial_g_, d_);
  };
  MoreThuenteOptions ls = run.options.line_search_bounded;
  ls.max_evaluations = std::min(ls.max_evaluations, run.evaluations_left());
  found_ = line_search_more_thuente(line, st.f, gd_, step, 0.0, stpmax, ls);
  return found_.status == MoreThuenteStatus::kConverged ||
         found_.status == MoreThuenteStatus::kWarning;
}

Step Lbfgsb::iterate(const Run& run) {
  LbfgsState& st = run.st;
  // A memory that breaks down is dropped and the iteration restarted.
  detail::CauchyPoint z;
  if (!step_point(run, &z) || !search(run, z)) {
    // x stays; with curvature pairs, restart from steepest descent.
    if (run.evaluations_left() <= 0)
      return Step::stop(Termination::kMaxEvaluations);
    if (bfgs_.k() == 0) return Step::stop(Termination::kLineSearchFailed);
    bfgs_.clear();
    return {Step::Outcome::kRestart};
  }

  // Accept the step, then update the memory with s = α·d, y = Δg
  // (skipped when sᵀy is not safely positive).
  const double alpha = found_.alpha;
  Eigen::VectorXd y = trial_g_ - st.g;
  st.x = std::move(trial_x_);
  st.g = std::move(trial_g_);
  st.f = found_.phi;
  const double sy = (found_.dphi - gd_) * alpha, minus_gd = -gd_ * alpha;
  if (sy > std::numeric_limits<double>::epsilon() * minus_gd) {
    Eigen::VectorXd s = alpha == 1.0 ? d_ : Eigen::VectorXd(alpha * d_);
    const double ss = alpha == 1.0 ? dtd_ : alpha * alpha * dtd_;
    if (!bfgs_.push(std::move(s),
                    std::move(y),
                    sy,
                    ss,
                    run.options.history,
                    run.reduce))
      bfgs_.clear();
  }
  return {Step::Outcome::kTaken};
}

bool Lbfgsb::converged(const Run& run,
                       double old_f,
                       double norm,
                       Termination* why) const {
  const LbfgsOptions& options = run.options;
  const double f = run.st.f;
  if (norm <= options.tolerance_gradient) {
    *why = Termination::kGradientNorm;
    return true;
  }
  if (options.tolerance_function > 0 &&
      (old_f - f) <= options.tolerance_function *
                         std::max({std::fabs(old_f), std::fabs(f), 1.0})) {
    *why = Termination::kFunctionChange;
    return true;
  }
  return false;
}

std::string Lbfgsb::trace_columns(const Run& run,
                                  double norm,
                                  double seconds) const {
  char line[128];
  std::snprintf(line,
                sizeof(line),
                "%6d  %22.15e  %14.6e  %8lld  %9.3f",
                run.st.iteration,
                run.st.f,
                norm,
                static_cast<long long>(active_),
                seconds);
  return line;
}

void Lbfgsb::finish(const Run& run, LbfgsSummary* s) const {
  s->active_bounds = active_;
  char message[300];
  std::snprintf(message,
                sizeof(message),
                "%s after %d iterations and %d evaluations: f = %.17g, "
                "|proj g|inf = %.3e, %lld active bounds",
                lbfgsb_message(s->termination),
                run.st.iteration,
                run.st.evaluations,
                run.st.f,
                s->gradient_norm,
                static_cast<long long>(active_));
  s->message = message;
}

}  // namespace

const char* lbfgsb_message(Termination t) {
  switch (t) {
    case Termination::kGradientNorm:
      return "CONVERGENCE: NORM_OF_PROJECTED_GRADIENT_<=_PGTOL";
    case Termination::kFunctionChange:
      return "CONVERGENCE: REL_REDUCTION_OF_F_<=_FACTR*EPSMCH";
    case Termination::kMaxIterations:
      return "STOP: TOTAL NO. of ITERATIONS REACHED LIMIT";
    case Termination::kMaxEvaluations:
      return "STOP: TOTAL NO. of f AND g EVALUATIONS EXCEEDS LIMIT";
    case Termination::kLineSearchFailed:
      return "ABNORMAL_TERMINATION_IN_LNSRCH";
    case Termination::kNotFinite:
      return "ABNORMAL: F OR G IS NOT FINITE";
  }
  return "?";
}

LbfgsSummary lbfgsb(const Objective& objective,
                    Eigen::VectorXd& x,
                    const Bounds& bounds,
                    const LbfgsOptions& options,
                    CommContext* comm,
                    Layout layout) {
  Lbfgsb method(bounds);
  return detail::run(method, objective, x, options, comm, layout);
}

}  // namespace adgraph::optim
