#include <chrono>
#include <iostream>

#include "core/error.h"
#include "optim/run_impl.h"

namespace adgraph::optim::detail {
namespace {

using Clock = std::chrono::steady_clock;

// The trace on rank 0 (when asked for) and the time since the start.
class Trace {
 public:
  Trace(const LbfgsOptions& options, int rank)
      : options_(options),
        printing_(options.trace && rank == 0),
        out_(options.trace_stream ? *options.trace_stream : std::cout),
        start_(Clock::now()) {}

  double elapsed() const {
    return std::chrono::duration<double>(Clock::now() - start_).count();
  }
  void header(const Method& method) {
    if (printing_)
      out_ << method.trace_header() << options_.trace_columns_header << "\n";
  }
  void line(const Method& method, const Run& run, double norm) {
    if (!printing_) return;
    out_ << method.trace_columns(run, norm, elapsed());
    if (options_.trace_columns) out_ << options_.trace_columns();
    out_ << "\n" << std::flush;
  }
  void message(const std::string& text) {
    if (printing_) out_ << text << "\n";
  }

 private:
  const LbfgsOptions& options_;
  const bool printing_;
  std::ostream& out_;
  const Clock::time_point start_;
};

// The tests before each iteration, in order: a non-finite point, a small
// gradient, the iteration and evaluation limits.
bool should_stop(const LbfgsState& st,
                 double norm,
                 const LbfgsOptions& options,
                 Termination* why) {
  if (!std::isfinite(st.f) || !std::isfinite(norm)) {
    *why = Termination::kNotFinite;
  } else if (norm <= options.tolerance_gradient) {
    *why = Termination::kGradientNorm;
  } else if (st.iteration >= options.max_iterations) {
    *why = Termination::kMaxIterations;
  } else if (st.evaluations >= options.max_evaluations) {
    *why = Termination::kMaxEvaluations;
  } else {
    return false;
  }
  return true;
}

// Starts the run: from the checkpoint, or by evaluating the start point.
// Returns the gradient norm there.
double begin(Method& method, const Run& run, const Eigen::VectorXd& x) {
  LbfgsState& st = run.st;
  if (run.options.resume) {
    load_checkpoint(run.reduce,
                    run.options,
                    run.reduce.rank(),
                    run.reduce.size(),
                    x.size(),
                    method.kind(),
                    method.fingerprint(),
                    &st);
    method.resume(run);
    if (!st.gnorm_history.empty()) return st.gnorm_history.back();
    return method.gradient_norm(run);
  }
  st.x = method.start(x);
  st.f = run.evaluate(st.x, st.g);
  st.initial_f = st.f;
  st.f_history = {st.f};
  const double norm = method.gradient_norm(run);
  st.gnorm_history = {norm};
  return norm;
}

// Records an accepted step: the histories, the trace line and, when due,
// the checkpoint. Returns the new gradient norm.
double record(Method& method, const Run& run, Trace& trace) {
  LbfgsState& st = run.st;
  ++st.iteration;
  const double norm = method.gradient_norm(run);
  st.f_history.push_back(st.f);
  st.gnorm_history.push_back(norm);
  method.observe(run);
  trace.line(method, run, norm);
  const int every = run.options.checkpoint_every;
  if (every > 0 && st.iteration % every == 0) {
    st.kind = method.kind();
    st.bounds_hash = method.fingerprint();
    method.store(run);
    save_checkpoint(
        run.reduce, run.options, run.reduce.rank(), run.reduce.size(), st);
  }
  return norm;
}

}  // namespace

double Run::evaluate(const Eigen::VectorXd& at, Eigen::VectorXd& g) const {
  g.resize(at.size());
  const double f = objective(at, g);
  ++st.evaluations;
  return reduce.combine(f, g);
}

LbfgsSummary run(Method& method,
                 const Objective& objective,
                 Eigen::VectorXd& x,
                 const LbfgsOptions& options,
                 CommContext* comm,
                 Layout layout) {
  std::string error;
  if (!options.is_valid(&error))
    throw OptionsError(error, {}, {}, "LbfgsOptions");
  const Reducer reduce(comm, layout);
  LbfgsState st;
  st.problem = options.checkpoint_problem;
  const Run run{objective, options, reduce, st};
  method.prepare(run, x);
  Trace trace(options, reduce.rank());

  double norm = begin(method, run, x);
  const int resumed_at = options.resume ? st.iteration : -1;
  method.observe(run);
  trace.header(method);
  trace.line(method, run, norm);

  Termination why = Termination::kMaxIterations;
  while (!should_stop(st, norm, options, &why)) {
    const double old_f = st.f;
    const Step step = method.iterate(run);
    if (step.outcome == Step::Outcome::kRestart) continue;
    if (step.outcome == Step::Outcome::kStop) {
      why = step.why;
      break;
    }
    norm = record(method, run, trace);
    if (step.outcome == Step::Outcome::kTakenLast) {
      why = Termination::kLineSearchFailed;
      break;
    }
    if (method.converged(run, old_f, norm, &why)) break;
  }

  x = st.x;
  LbfgsSummary s;
  s.termination = why;
  s.iterations = st.iteration;
  s.evaluations = st.evaluations;
  s.initial_f = st.initial_f;
  s.final_f = st.f;
  s.gradient_norm = norm;
  s.f_history = st.f_history;
  s.gradient_norm_history = st.gnorm_history;
  s.seconds = trace.elapsed();
  s.resumed_at = resumed_at;
  method.finish(run, &s);
  trace.message(s.message);
  return s;
}

}  // namespace adgraph::optim::detail
