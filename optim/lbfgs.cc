#include "optim/lbfgs.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>

#include "core/comm_context.h"
#include "core/error.h"
#include "optim/checkpoint_impl.h"
#include "optim/reducer_impl.h"
#include "optim/run_impl.h"

namespace adgraph::optim {
namespace {

using Clock = std::chrono::steady_clock;
using detail::agree_or_throw;
using detail::LbfgsState;
using detail::Reducer;

void print_line(std::ostream& out,
                int iteration,
                double f,
                double gnorm,
                double seconds,
                const std::function<std::string()>& extra) {
  char line[128];
  std::snprintf(line,
                sizeof(line),
                "%6d  %22.15e  %14.6e  %9.3f",
                iteration,
                f,
                gnorm,
                seconds);
  detail::write_trace_line(out, line, extra);
}

}  // namespace

const char* termination_name(Termination t) {
  switch (t) {
    case Termination::kGradientNorm:
      return "gradient_norm";
    case Termination::kFunctionChange:
      return "function_change";
    case Termination::kMaxIterations:
      return "max_iterations";
    case Termination::kMaxEvaluations:
      return "max_evaluations";
    case Termination::kLineSearchFailed:
      return "line_search_failed";
    case Termination::kNotFinite:
      return "not_finite";
  }
  return "?";
}

bool LbfgsOptions::is_valid(std::string* error) const {
  auto bad = [&](const std::string& msg) {
    *error = msg;
    return false;
  };
  if (history < 1 || history > 1000) return bad("history must be in [1, 1000]");
  if (!(tolerance_gradient >= 0)) return bad("tolerance_gradient must be >= 0");
  if (!(tolerance_function >= 0)) return bad("tolerance_function must be >= 0");
  if (max_iterations < 0) return bad("max_iterations must be >= 0");
  if (max_evaluations < 1) return bad("max_evaluations must be >= 1");
  if (!line_search.is_valid(error)) return false;
  if (!line_search_bounded.is_valid(error)) return false;
  if (checkpoint_every < 0) return bad("checkpoint_every must be >= 0");
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
  std::string error;
  if (!options.is_valid(&error))
    throw OptionsError(error, {}, {}, "LbfgsOptions");
  const Reducer reduce(comm, layout);
  const int rank = comm ? comm->rank() : 0, size = comm ? comm->size() : 1;
  const bool printing = options.trace && rank == 0;
  std::ostream& trace =
      options.trace_stream ? *options.trace_stream : std::cout;
  const auto start = Clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(Clock::now() - start).count();
  };

  LbfgsSummary summary;
  LbfgsState st;
  st.problem = options.checkpoint_problem;
  auto evaluate = [&](const Eigen::VectorXd& at, Eigen::VectorXd& g) {
    g.resize(at.size());
    const double f = objective(at, g);
    ++st.evaluations;
    return reduce.combine(f, g);
  };

  if (options.resume) {
    detail::load_checkpoint(reduce, options, rank, size, x.size(), 0, 0, &st);
    x = st.x;
    summary.resumed_at = st.iteration;
  } else {
    st.x = x;
    st.f = evaluate(st.x, st.g);
    st.initial_f = st.f;
    st.f_history = {st.f};
  }
  double gnorm = reduce.norm_inf(st.g);
  if (!options.resume) st.gnorm_history = {gnorm};
  if (printing) {
    trace << "  Iter          Function value   Gradient norm       time"
          << options.trace_columns_header << "\n";
    print_line(
        trace, st.iteration, st.f, gnorm, elapsed(), options.trace_columns);
  }

  Termination why = Termination::kMaxIterations;
  // The trial point of the last evaluation, and the line search's result.
  Eigen::VectorXd d, trial_x, trial_g, kept_x, kept_g;
  while (true) {
    if (!std::isfinite(st.f) || !std::isfinite(gnorm)) {
      why = Termination::kNotFinite;
      break;
    }
    if (gnorm <= options.tolerance_gradient) {
      why = Termination::kGradientNorm;
      break;
    }
    if (st.iteration >= options.max_iterations) {
      why = Termination::kMaxIterations;
      break;
    }
    if (st.evaluations >= options.max_evaluations) {
      why = Termination::kMaxEvaluations;
      break;
    }

    // Two-loop recursion: d = −H·g.
    const int k = static_cast<int>(st.s.size());
    std::vector<double> alpha(k);
    d = -st.g;
    for (int i = k - 1; i >= 0; --i) {
      alpha[i] = st.rho[i] * reduce.dot(st.s[i], d);
      d -= alpha[i] * st.y[i];
    }
    d *= st.gamma;
    for (int i = 0; i < k; ++i) {
      const double beta = st.rho[i] * reduce.dot(st.y[i], d);
      d += (alpha[i] - beta) * st.s[i];
    }
    double dphi0 = reduce.dot(st.g, d);
    if (!(dphi0 < 0)) {  // not a descent direction: restart from −g
      st.s.clear(), st.y.clear(), st.rho.clear();
      st.gamma = 1.0;
      d = -st.g;
      dphi0 = reduce.dot(st.g, d);
      if (!(dphi0 < 0)) {  // |g|² underflows: no direction descends
        why = Termination::kLineSearchFailed;
        break;
      }
    }
    const double initial = st.iteration == 0 && st.s.empty()
                               ? std::min(1.0, 1.0 / std::sqrt(-dphi0))
                               : 1.0;

    auto line = [&](double a, double* phi, double* dphi) {
      trial_x = st.x + a * d;
      *phi = evaluate(trial_x, trial_g);
      *dphi = reduce.dot(trial_g, d);
    };
    auto keep = [&] { kept_x = trial_x, kept_g = trial_g; };
    LineSearchOptions ls = options.line_search;
    ls.max_evaluations =
        std::min(ls.max_evaluations, options.max_evaluations - st.evaluations);
    const LineSearchResult found =
        line_search_strong_wolfe(line, st.f, dphi0, initial, ls, keep);

    // Not found: the best point seen, if it decreased f.
    const bool accepted = found.found;
    if (!accepted && !(found.phi < st.f)) {
      why = Termination::kLineSearchFailed;
      break;
    }
    Eigen::VectorXd new_x = std::move(kept_x);
    Eigen::VectorXd new_g = std::move(kept_g);
    const double new_f = found.phi;

    Eigen::VectorXd s = new_x - st.x, y = new_g - st.g;
    const double sy = reduce.dot(s, y), yy = reduce.dot(y, y);
    if (sy > std::numeric_limits<double>::epsilon() * yy) {
      st.s.push_back(std::move(s));
      st.y.push_back(std::move(y));
      st.rho.push_back(1.0 / sy);
      st.gamma = sy / yy;
      if (static_cast<int>(st.s.size()) > options.history) {
        st.s.erase(st.s.begin());
        st.y.erase(st.y.begin());
        st.rho.erase(st.rho.begin());
      }
    }
    const double old_f = st.f;
    st.x = std::move(new_x);
    st.g = std::move(new_g);
    st.f = new_f;
    ++st.iteration;
    st.f_history.push_back(st.f);
    gnorm = reduce.norm_inf(st.g);
    st.gnorm_history.push_back(gnorm);
    if (printing)
      print_line(
          trace, st.iteration, st.f, gnorm, elapsed(), options.trace_columns);
    if (options.checkpoint_every > 0 &&
        st.iteration % options.checkpoint_every == 0) {
      detail::save_checkpoint(reduce, options, rank, size, st);
    }
    if (!accepted) {
      why = Termination::kLineSearchFailed;
      break;
    }
    if (options.tolerance_function > 0 &&
        (old_f - st.f) / std::max({std::fabs(old_f), std::fabs(st.f), 1.0}) <=
            options.tolerance_function) {
      why = Termination::kFunctionChange;
      break;
    }
  }

  x = st.x;
  summary = detail::summarize(st, why, gnorm, elapsed(), summary.resumed_at);
  char message[200];
  std::snprintf(
      message,
      sizeof(message),
      "%s after %d iterations and %d evaluations: f = %.17g, |g|inf = %.3e",
      termination_name(why),
      st.iteration,
      st.evaluations,
      st.f,
      gnorm);
  summary.message = message;
  if (printing) trace << summary.message << "\n";
  return summary;
}

}  // namespace adgraph::optim
