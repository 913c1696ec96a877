#include "optim/lbfgsb.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>

#include "core/error.h"
#include "optim/checkpoint_impl.h"
#include "optim/lbfgsb_impl.h"
#include "optim/run_impl.h"

namespace adgraph::optim {
namespace {

using Clock = std::chrono::steady_clock;
using detail::Box;
using detail::CompactBfgs;
using detail::LbfgsState;
using detail::Reducer;
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

void print_line(std::ostream& out,
                int iteration,
                double f,
                double pgnorm,
                int64_t active,
                double seconds,
                const std::function<std::string()>& extra) {
  char line[128];
  std::snprintf(line,
                sizeof(line),
                "%6d  %22.15e  %14.6e  %8lld  %9.3f",
                iteration,
                f,
                pgnorm,
                static_cast<long long>(active),
                seconds);
  detail::write_trace_line(out, line, extra);
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
  std::string error;
  if (!options.is_valid(&error))
    throw OptionsError(error, {}, {}, "LbfgsOptions");
  const Reducer reduce(comm, layout);
  const int rank = reduce.rank(), size = reduce.size();
  Eigen::VectorXd lower, upper;
  detail::agree_or_throw(
      reduce,
      complete_bounds(bounds, x.size(), rank, &lower, &upper),
      [](const std::string& m) { throw OptionsError(m, {}, {}, "bounds"); });
  const Box box{lower, upper, bounds.global_index};
  const int64_t n = x.size();
  const bool printing = options.trace && rank == 0;
  std::ostream& trace =
      options.trace_stream ? *options.trace_stream : std::cout;
  const auto start = Clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(Clock::now() - start).count();
  };

  // What the box holds fixed, and whether every variable is bounded on
  // both sides (then the first step is 1) or any at all.
  std::vector<Where> where(n, Where::kFree);
  double kinds[2] = {0, 0};  // variables without both bounds, with any
  for (int64_t i = 0; i < n; ++i) {
    const bool l = box.has_lower(i), u = box.has_upper(i);
    if (!l && !u) where[i] = Where::kUnbounded;
    if (l && u && upper[i] - lower[i] <= 0) where[i] = Where::kFixed;
    kinds[0] += !(l && u);
    kinds[1] += l || u;
  }
  reduce.sum_over_variables(kinds, 2);
  const bool boxed = kinds[0] == 0, constrained = kinds[1] > 0;
  const uint64_t fingerprint = bounds_fingerprint(lower, upper);

  LbfgsSummary summary;
  LbfgsState st;
  st.problem = options.checkpoint_problem;
  CompactBfgs bfgs;
  auto evaluate = [&](const Eigen::VectorXd& at, Eigen::VectorXd& g) {
    g.resize(at.size());
    const double f = objective(at, g);
    ++st.evaluations;
    return reduce.combine(f, g);
  };
  if (options.resume) {
    detail::load_checkpoint(
        reduce, options, rank, size, n, 1, fingerprint, &st);
    bfgs.assign(st.s, st.y, st.sy, st.ss, st.gamma, reduce);
    summary.resumed_at = st.iteration;
  } else {
    st.x = x.cwiseMax(lower).cwiseMin(upper);
    st.f = evaluate(st.x, st.g);
    st.initial_f = st.f;
    st.f_history = {st.f};
    st.gnorm_history = {projected_gradient_norm(st.x, st.g, box, reduce)};
  }
  double pgnorm = st.gnorm_history.back();
  // Collective: every rank counts, rank 0 prints.
  int64_t active = count_active(st.x, box, reduce);
  auto print_state = [&] {
    print_line(trace,
               st.iteration,
               st.f,
               pgnorm,
               active,
               elapsed(),
               options.trace_columns);
  };
  if (printing) {
    trace << "  Iter          Function value  Proj. gradient    Active       "
             "time"
          << options.trace_columns_header << "\n";
    print_state();
  }

  Termination why = Termination::kMaxIterations;
  auto stop = [&](Termination t) {
    why = t;
    return true;
  };
  Eigen::VectorXd d, trial_x, trial_g;
  while (true) {
    if ((!std::isfinite(st.f) || !std::isfinite(pgnorm)) &&
        stop(Termination::kNotFinite))
      break;
    if (pgnorm <= options.tolerance_gradient &&
        stop(Termination::kGradientNorm))
      break;
    if (st.iteration >= options.max_iterations &&
        stop(Termination::kMaxIterations))
      break;
    if (st.evaluations >= options.max_evaluations &&
        stop(Termination::kMaxEvaluations))
      break;

    // The Cauchy point z, then the subspace step from it (skipped without
    // bounds once there is curvature: the step is then plain L-BFGS).
    // A memory that breaks down is dropped and the iteration restarted.
    detail::CauchyPoint z;
    if (!constrained && bfgs.k() > 0) {
      z.x = st.x;  // with c = 0 the subspace step's residual is −g
      z.c = Eigen::VectorXd::Zero(2 * bfgs.k());
    } else {
      z = detail::cauchy_point(st.x, st.g, box, where, bfgs, reduce);
    }
    bool usable = z.ok;
    if (usable && bfgs.k() > 0) {
      double free = 0;
      for (Where w : where) free += detail::is_free(w);
      reduce.sum_over_variables(&free, 1);
      if (free > 0)
        usable = detail::subspace_minimization(
            st.x, st.g, box, where, bfgs, reduce, z);
    }

    // Search along d = z − x.
    double gd = 0, dtd = 0, step = 1.0;
    MoreThuenteResult found;
    if (usable) {
      d = z.x - st.x;
      ExactSum sums[2];
      sums[0].add_products(st.g.data(), d.data(), n);
      sums[1].add_products(d.data(), d.data(), n);
      double dots[2];
      reduce.round_over_variables(sums, dots, 2);
      gd = dots[0], dtd = dots[1];
      usable = gd < 0;  // the projection can make an ascent direction
    }
    if (usable) {
      const double stpmax = !constrained ? 1e10
                            : st.iteration == 0
                                ? 1.0
                                : longest_step(st.x, d, box, 1e10, reduce);
      step = st.iteration == 0 && !boxed
                 ? std::min(1.0 / std::sqrt(dtd), stpmax)
                 : 1.0;
      auto line = [&](double a, double* phi, double* dphi) {
        trial_x = a == 1.0 ? z.x : Eigen::VectorXd(st.x + a * d);
        *phi = evaluate(trial_x, trial_g);
        *dphi = reduce.dot(trial_g, d);
      };
      MoreThuenteOptions ls = options.line_search_bounded;
      ls.max_evaluations = std::min(ls.max_evaluations,
                                    options.max_evaluations - st.evaluations);
      found = line_search_more_thuente(line, st.f, gd, step, 0.0, stpmax, ls);
      usable = found.status == MoreThuenteStatus::kConverged ||
               found.status == MoreThuenteStatus::kWarning;
    }
    if (!usable) {
      // x stays; with curvature pairs, restart from steepest descent.
      if (bfgs.k() == 0 || st.evaluations >= options.max_evaluations) {
        stop(st.evaluations >= options.max_evaluations
                 ? Termination::kMaxEvaluations
                 : Termination::kLineSearchFailed);
        break;
      }
      bfgs.clear();
      continue;
    }

    // Accept the step, then update the memory with s = α·d, y = Δg
    // (skipped when sᵀy is not safely positive).
    const double alpha = found.alpha;
    const double gd_new = found.dphi;
    Eigen::VectorXd y = trial_g - st.g;
    const double old_f = st.f;
    st.x = std::move(trial_x);
    st.g = std::move(trial_g);
    st.f = found.phi;
    ++st.iteration;
    const double sy = (gd_new - gd) * alpha, minus_gd = -gd * alpha;
    if (sy > std::numeric_limits<double>::epsilon() * minus_gd) {
      Eigen::VectorXd s = alpha == 1.0 ? d : Eigen::VectorXd(alpha * d);
      const double ss = alpha == 1.0 ? dtd : alpha * alpha * dtd;
      if (!bfgs.push(
              std::move(s), std::move(y), sy, ss, options.history, reduce))
        bfgs.clear();
    }
    pgnorm = projected_gradient_norm(st.x, st.g, box, reduce);
    st.f_history.push_back(st.f);
    st.gnorm_history.push_back(pgnorm);
    active = count_active(st.x, box, reduce);
    if (printing) print_state();
    if (options.checkpoint_every > 0 &&
        st.iteration % options.checkpoint_every == 0) {
      st.kind = 1;
      st.bounds_hash = fingerprint;
      st.s = bfgs.s(), st.y = bfgs.y();
      st.sy = bfgs.sy(), st.ss = bfgs.ss();
      st.gamma = bfgs.theta();
      st.rho.clear();
      detail::save_checkpoint(reduce, options, rank, size, st);
    }
    if (pgnorm <= options.tolerance_gradient &&
        stop(Termination::kGradientNorm))
      break;
    if (options.tolerance_function > 0 &&
        (old_f - st.f) <=
            options.tolerance_function *
                std::max({std::fabs(old_f), std::fabs(st.f), 1.0}) &&
        stop(Termination::kFunctionChange))
      break;
  }

  x = st.x;
  summary = detail::summarize(st, why, pgnorm, elapsed(), summary.resumed_at);
  summary.active_bounds = active;
  char message[300];
  std::snprintf(message,
                sizeof(message),
                "%s after %d iterations and %d evaluations: f = %.17g, "
                "|proj g|inf = %.3e, %lld active bounds",
                lbfgsb_message(why),
                st.iteration,
                st.evaluations,
                st.f,
                pgnorm,
                static_cast<long long>(summary.active_bounds));
  summary.message = message;
  if (printing) trace << summary.message << "\n";
  return summary;
}

}  // namespace adgraph::optim
