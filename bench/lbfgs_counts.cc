// Iteration and evaluation counts of optim::lbfgs and optim::lbfgsb on the
// problems SciPy's L-BFGS-B reference counts are quoted for
// (docs/PERFORMANCE.md; bench/scipy_lbfgsb_reference.py prints SciPy's side
// of the bounded rows). Counts, not times.
// Run: mpirun -n 4 build/bench/lbfgs_counts
#include <cstdio>

#include "adgraph.h"

using namespace adgraph;

namespace {

double rosenbrock(const Eigen::VectorXd& x, Eigen::VectorXd& g) {
  double f = 0;
  g.setZero();
  for (int64_t i = 0; i + 1 < x.size(); ++i) {
    const double a = x[i + 1] - x[i] * x[i], b = 1 - x[i];
    f += 100 * a * a + b * b;
    g[i] += -400 * a * x[i] - 2 * b;
    g[i + 1] += 200 * a;
  }
  return f;
}

// The L-BFGS-B distribution's driver1: f = (x₁ − 1)²/4 + 4 Σ (xᵢ − xᵢ₋₁²)².
double driver1(const Eigen::VectorXd& x, Eigen::VectorXd& g) {
  double f = 0.25 * (x[0] - 1) * (x[0] - 1);
  g.setZero();
  g[0] = 0.5 * (x[0] - 1);
  for (int64_t i = 1; i < x.size(); ++i) {
    const double t = x[i] - x[i - 1] * x[i - 1];
    f += 4 * t * t;
    g[i] += 8 * t;
    g[i - 1] += -16 * x[i - 1] * t;
  }
  return f;
}

void report(const char* name, const optim::LbfgsSummary& s) {
  std::printf(
      "RESULT bench=lbfgs problem=%s iterations=%d evaluations=%d "
      "termination=%s f=%.6e\n",
      name,
      s.iterations,
      s.evaluations,
      optim::termination_name(s.termination),
      s.final_f);
}

}  // namespace

int main(int argc, char** argv) {
  MpiEnvironment env(&argc, &argv);
  auto comm = Communicator::world();

  // The ADCME polynomial with SciPy's defaults (gtol 1e-5, ftol 2.22e-9).
  Graph g;
  Value theta = g.placeholder("theta", {1});
  Value loss = square(sum(mpi_sum(pow(mpi_bcast(theta), mpi_rank(g)))) - 2.0);
  optim::LbfgsOptions scipy_defaults;
  scipy_defaults.tolerance_gradient = 1e-5;
  scipy_defaults.tolerance_function = 2.220446049250313e-09;
  std::vector<Tensor> values = {Tensor({1.0})};
  auto poly = optim::minimize(loss, {theta}, values, {}, scipy_defaults);

  // The heat inversion of the demo problem at 32², NT = 200, κ ∈ [1, 1.3]
  // from κ = 1 (2 × 2 patches on 4 ranks, 2 × 1 on 2, 1 × 1 on 1).
  solvers::HeatInverseOptions heat;
  heat.config.nx = heat.config.ny = 32;
  heat.config.nt = 200;
  const int ranks = comm->size();
  heat.config.px = ranks == 4 ? 2 : ranks;
  heat.config.py = ranks == 4 ? 2 : 1;
  heat.kappa_min = 1.0;
  heat.kappa_max = 1.3;
  solvers::HeatInverse problem(heat, comm);
  Tensor kappa = problem.kappa_start();
  const optim::LbfgsSummary heat_summary = problem.fit(kappa, scipy_defaults);
  if (comm->rank() != 0) return 0;
  std::printf("ranks=%d theta=%.16f\n", comm->size(), values[0][0]);
  report("adcme_polynomial", poly);

  report("heat_32_bounded", heat_summary);
  Eigen::VectorXd x1 = Eigen::VectorXd::Constant(25, 3.0);
  optim::Bounds box{Eigen::VectorXd(25), Eigen::VectorXd::Constant(25, 100.0)};
  for (int i = 0; i < 25; ++i) box.lower[i] = i % 2 == 0 ? 1.0 : -100.0;
  optim::LbfgsOptions m5 = scipy_defaults;
  m5.history = 5;
  report("driver1_bounded", optim::lbfgsb(driver1, x1, box, m5));

  optim::LbfgsOptions tight;
  tight.tolerance_gradient = 1e-8;
  for (int n : {2, 100}) {
    Eigen::VectorXd x(n);
    for (int i = 0; i < n; ++i) x[i] = i % 2 == 0 ? -1.2 : 1.0;
    report(n == 2 ? "rosenbrock_2d" : "rosenbrock_100d",
           optim::lbfgs(rosenbrock, x, tight));
  }
  return 0;
}
