// ADCME's L-BFGS example: minimise (sum(mpi_sum(fθ^rank)) − 2)² with
// fθ = mpi_bcast(θ), from θ = 1. With 4 ranks the minimiser is the root of
// 1 + θ + θ² + θ³ = 2, θ = 0.5436890126920764.
//   mpirun -n 4 lbfgs_poly
#include <cmath>
#include <cstdio>

#include "adgraph.h"
#include "examples/example_check.h"

using namespace adgraph;

int main(int argc, char** argv) {
  MpiEnvironment env(&argc, &argv);
  auto comm = program_world();
  Graph g;
  Value theta = g.placeholder("theta", {1});
  Value l = pow(mpi_bcast(theta), mpi_rank(g));
  Value loss = square(sum(mpi_sum(l)) - 2.0);

  optim::LbfgsOptions options;
  options.tolerance_gradient = 1e-12;
  options.trace = true;
  std::vector<Tensor> values = {Tensor({1.0})};
  optim::LbfgsSummary summary =
      optim::minimize(loss, {theta}, values, {}, options);
  if (comm->rank() == 0) std::printf("theta = %.16f\n", values[0][0]);

  // The root of Σ_{r<P} θ^r = 2 by bisection (P = 1: f ≡ 1, θ stays 1).
  double lo = 0, hi = 1;
  for (int i = 0; i < 200 && comm->size() > 1; ++i) {
    const double mid = 0.5 * (lo + hi);
    double s = 0;
    for (int r = 0; r < comm->size(); ++r) s += std::pow(mid, r);
    (s < 2 ? lo : hi) = mid;
  }
  examples::Checker check(*comm);
  const double root = comm->size() > 1 ? 0.5 * (lo + hi) : 1.0;
  if (std::fabs(values[0][0] - root) > 1e-10)
    check.expect("theta", values[0][0], root);
  if (summary.iterations > 10)
    check.expect("iterations", summary.iterations, 10);
  return check.exit_code();
}
