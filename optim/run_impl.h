// The run both optimizers share (optim::lbfgs and optim::lbfgsb): option
// checks, the first evaluation or the resume from a checkpoint, the stop
// tests, the histories, the trace, the checkpoints and the summary are
// written once here; a Method supplies only its direction, its step and
// its memory. Internal to optim/.
//
// Shared by optim/run.cc (the run), optim/lbfgs.cc and optim/lbfgsb.cc
// (their Methods); tests/optim/run_test.cc drives the run with a Method
// of its own.
#pragma once

#include <Eigen/Core>
#include <string>

#include "optim/checkpoint_impl.h"
#include "optim/lbfgs.h"
#include "optim/reducer_impl.h"

namespace adgraph::optim::detail {

// What a method sees of the run it takes part in.
struct Run {
  const Objective& objective;
  const LbfgsOptions& options;
  const Reducer& reduce;
  LbfgsState& st;

  // f at `at`, summed over ranks per the layout, and ∇f into `g` (resized
  // to at's length); counts the evaluation.
  double evaluate(const Eigen::VectorXd& at, Eigen::VectorXd& g) const;
  // Evaluations the options still allow.
  int evaluations_left() const {
    return options.max_evaluations - st.evaluations;
  }
};

// What one iteration of a method did.
struct Step {
  enum class Outcome {
    kTaken,      // st holds the new point
    kTakenLast,  // st holds a better point, but the search failed: stop
    kRestart,    // x stays, the memory was dropped: iterate again
    kStop,       // x stays: the run ends with `why`
  };
  Outcome outcome = Outcome::kTaken;
  Termination why = Termination::kLineSearchFailed;

  static Step stop(Termination t) { return {Outcome::kStop, t}; }
};

// An L-BFGS method: the direction, the step and the memory, and what the
// trace and the summary say of them. Every call is collective.
class Method {
 public:
  virtual ~Method() = default;
  virtual SolverKind kind() const = 0;
  // Checks what the method adds to the options against x (bounds); throws
  // the same error on every rank.
  virtual void prepare(const Run& run, const Eigen::VectorXd& x) = 0;
  // What a checkpoint must have been written with besides the options (a
  // fingerprint of the bounds); 0 for nothing.
  virtual uint64_t fingerprint() const { return 0; }
  // The point the run starts from, given x0.
  virtual Eigen::VectorXd start(const Eigen::VectorXd& x) const { return x; }
  // Takes the memory from a resumed state.
  virtual void resume(const Run& /*run*/) {}
  // The norm the stop tests and the history use (‖∇f‖∞, or projected).
  virtual double gradient_norm(const Run& run) const = 0;
  // One iteration from run.st.
  virtual Step iterate(const Run& run) = 0;
  // Called at the start point and after each step (e.g. counts the active
  // bounds for the trace).
  virtual void observe(const Run& /*run*/) {}
  // Writes the method's memory into run.st before a checkpoint.
  virtual void store(const Run& /*run*/) const {}
  // After a step from f = old_f: whether the run has converged, and why.
  virtual bool converged(const Run& run,
                         double old_f,
                         double norm,
                         Termination* why) const = 0;
  // The trace's header line and one iteration's columns.
  virtual std::string trace_header() const = 0;
  virtual std::string trace_columns(const Run& run,
                                    double norm,
                                    double seconds) const = 0;
  // The summary's message (and anything else the method reports).
  virtual void finish(const Run& run, LbfgsSummary* summary) const = 0;
};

// Minimises from x (overwritten with the result) with `method`.
LbfgsSummary run(Method& method,
                 const Objective& objective,
                 Eigen::VectorXd& x,
                 const LbfgsOptions& options,
                 CommContext* comm,
                 Layout layout);

}  // namespace adgraph::optim::detail
