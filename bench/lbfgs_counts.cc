// Iteration and evaluation counts of optim::lbfgs on the problems SciPy's
// L-BFGS-B reference counts are quoted for (docs/PERFORMANCE.md). Counts,
// not times. Run: mpirun -n 4 build/bench/lbfgs_counts
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
  if (comm->rank() != 0) return 0;
  std::printf("ranks=%d theta=%.16f\n", comm->size(), values[0][0]);
  report("adcme_polynomial", poly);

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
