// The run both optimizers share (optim/run.cc), driven by a toy method
// whose every iterate is known by hand: x ← x/2 on f(x) = x² (∇f = 2x), so
// after k steps f = 4^-k·x0² and ‖∇f‖∞ = 2^(1−k)·|x0|. Each test checks one
// duty of the skeleton: the stop tests and their order, the histories and
// counts, restarts, stops a method asks for, the trace, and checkpoints
// with resume.
#include <gtest/gtest.h>

#include <Eigen/Core>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>

#include "core/error.h"
#include "optim/run_impl.h"

namespace adgraph::optim::detail {
namespace {

// x ← x/2 on each iteration; `restart_at` makes iteration k (counted by
// calls) a restart, `stop_at` a stop with kLineSearchFailed.
class Halving final : public Method {
 public:
  int calls = 0, restart_at = -1, stop_at = -1;
  int observed = 0;

  SolverKind kind() const override { return SolverKind::kLbfgs; }
  void prepare(const Run&, const Eigen::VectorXd&) override {}
  double gradient_norm(const Run& run) const override {
    return run.reduce.norm_inf(run.st.g);
  }
  Step iterate(const Run& run) override {
    const int call = calls++;
    if (call == restart_at) return {Step::Outcome::kRestart};
    if (call == stop_at) return Step::stop(Termination::kLineSearchFailed);
    LbfgsState& st = run.st;
    st.x = st.x / 2;
    st.f = run.evaluate(st.x, st.g);
    return {Step::Outcome::kTaken};
  }
  void observe(const Run&) override { ++observed; }
  bool converged(const Run&, double, double, Termination*) const override {
    return false;
  }
  std::string trace_header() const override { return "head"; }
  std::string trace_columns(const Run& run,
                            double norm,
                            double) const override {
    char line[80];
    std::snprintf(line, sizeof(line), "%d %g", run.st.iteration, norm);
    return line;
  }
  void finish(const Run&, LbfgsSummary* s) const override {
    s->message = termination_name(s->termination);
  }
};

double square(const Eigen::VectorXd& x, Eigen::VectorXd& g) {
  g = 2 * x;
  return x.squaredNorm();
}

LbfgsSummary minimise(Halving& method,
                      const LbfgsOptions& options,
                      double x0 = 1.0) {
  Eigen::VectorXd x = Eigen::VectorXd::Constant(1, x0);
  return run(method, square, x, options, nullptr, Layout::kReplicated);
}

// ‖∇f‖ = 2^(1−k) ≤ 1e-3 first at k = 11 (2^-10 = 9.8e-4).
TEST(LbfgsRun, StopsOnTheGradientWithEveryIterateRecorded) {
  Halving method;
  LbfgsOptions o;
  o.tolerance_gradient = 1e-3;
  const LbfgsSummary s = minimise(method, o);
  EXPECT_EQ(s.termination, Termination::kGradientNorm);
  EXPECT_EQ(s.message, "gradient_norm");
  EXPECT_EQ(s.iterations, 11);
  EXPECT_EQ(s.evaluations, 12);
  ASSERT_EQ(s.f_history.size(), 12u);
  ASSERT_EQ(s.gradient_norm_history.size(), 12u);
  for (int k = 0; k < 12; ++k) {
    EXPECT_EQ(s.f_history[k], std::ldexp(1.0, -2 * k));
    EXPECT_EQ(s.gradient_norm_history[k], std::ldexp(1.0, 1 - k));
  }
  EXPECT_EQ(s.initial_f, 1.0);
  EXPECT_EQ(s.final_f, std::ldexp(1.0, -22));
  EXPECT_EQ(s.gradient_norm, std::ldexp(1.0, -10));
  EXPECT_EQ(s.resumed_at, -1);
  EXPECT_EQ(method.observed, 12);  // the start point and each step
}

TEST(LbfgsRun, StopTestsComeInTheirOrder) {
  LbfgsOptions o;
  o.tolerance_gradient = 0;
  o.max_iterations = 3;
  Halving a;
  EXPECT_EQ(minimise(a, o).termination, Termination::kMaxIterations);
  // Both limits reached together: iterations are tested first.
  o.max_evaluations = 4;
  Halving b;
  const LbfgsSummary both = minimise(b, o);
  EXPECT_EQ(both.termination, Termination::kMaxIterations);
  EXPECT_EQ(both.evaluations, 4);
  o.max_iterations = 10;
  Halving c;
  const LbfgsSummary evals = minimise(c, o);
  EXPECT_EQ(evals.termination, Termination::kMaxEvaluations);
  EXPECT_EQ(evals.iterations, 3);
  // A non-finite start comes before everything.
  Halving d;
  EXPECT_EQ(minimise(d, o, INFINITY).termination, Termination::kNotFinite);
  EXPECT_EQ(d.calls, 0);
}

TEST(LbfgsRun, ARestartIsNoIterationAndAStopEndsTheRun) {
  LbfgsOptions o;
  o.tolerance_gradient = 0;
  o.max_iterations = 2;
  Halving restarting;
  restarting.restart_at = 1;
  const LbfgsSummary r = minimise(restarting, o);
  EXPECT_EQ(r.iterations, 2);
  EXPECT_EQ(restarting.calls, 3);
  EXPECT_EQ(r.f_history.size(), 3u);
  Halving stopping;
  stopping.stop_at = 1;
  const LbfgsSummary s = minimise(stopping, o);
  EXPECT_EQ(s.termination, Termination::kLineSearchFailed);
  EXPECT_EQ(s.iterations, 1);
  EXPECT_EQ(s.final_f, 0.25);
}

TEST(LbfgsRun, TracesTheMethodsColumnsAndTheCallersOnRankZero) {
  std::ostringstream out;
  LbfgsOptions o;
  o.tolerance_gradient = 0;
  o.max_iterations = 2;
  o.trace = true;
  o.trace_stream = &out;
  o.trace_columns_header = " extra";
  o.trace_columns = [] { return std::string(" +"); };
  Halving method;
  minimise(method, o);
  EXPECT_EQ(out.str(), "head extra\n0 2 +\n1 1 +\n2 0.5 +\nmax_iterations\n");
}

TEST(LbfgsRun, ResumesWhereTheUninterruptedRunWouldBe) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "adgraph_run_test").string();
  LbfgsOptions o;
  o.tolerance_gradient = 0;
  o.max_iterations = 3;
  o.checkpoint_every = 1;
  o.checkpoint_path = path;
  Halving first;
  minimise(first, o);
  o.max_iterations = 6;
  o.resume = true;
  Halving second;
  const LbfgsSummary resumed = minimise(second, o, 123.0);  // x0 unused
  EXPECT_EQ(resumed.resumed_at, 3);
  EXPECT_EQ(second.calls, 3);
  EXPECT_EQ(resumed.iterations, 6);
  EXPECT_EQ(resumed.evaluations, 7);
  EXPECT_EQ(resumed.final_f, std::ldexp(1.0, -12));
  ASSERT_EQ(resumed.f_history.size(), 7u);
  EXPECT_EQ(resumed.f_history[0], 1.0);
  std::filesystem::remove(checkpoint_file(path, 0, 1));
}

TEST(LbfgsRun, RefusesInvalidOptionsBeforeEvaluating) {
  LbfgsOptions o;
  o.history = 0;
  Halving method;
  EXPECT_THROW(minimise(method, o), OptionsError);
  EXPECT_EQ(method.calls, 0);
}

}  // namespace
}  // namespace adgraph::optim::detail
