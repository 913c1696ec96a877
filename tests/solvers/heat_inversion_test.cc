#include <gtest/gtest.h>

#include <cmath>

#include "tests/mpi_ops/mpi_test_util.h"

namespace adgraph::solvers {
namespace {

TEST(HeatInversion, RecoversKappaOnA32GridWithin50Iterations) {
  // 32², NT = 200 (an independent L-BFGS-B run reaches a relative κ error of
  // 1.5e-3 in 12 iterations on this problem).
  const int size = testing::world_size();
  HeatInverseOptions o;
  o.config.nx = o.config.ny = 32;
  o.config.nt = 200;
  o.config.px = size == 4 ? 2 : size;
  o.config.py = size == 4 ? 2 : 1;
  auto comm = Communicator::world();
  HeatInverse problem(o, *comm);
  Tensor kappa = problem.kappa_start();
  optim::LbfgsOptions options;
  options.max_iterations = 50;
  options.tolerance_gradient = 1e-10;
  optim::LbfgsSummary s = problem.fit(kappa, options);
  const Tensor truth = problem.kappa_true();
  const double err2 =
      comm->allreduce_sum((kappa.array() - truth.array()).square().sum());
  const double ref2 = comm->allreduce_sum(truth.array().square().sum());
  EXPECT_LE(std::sqrt(err2 / ref2), 1e-2) << s.message;
  EXPECT_LE(s.iterations, 50);
  EXPECT_LT(s.final_f, 1e-3 * s.initial_f);
}

}  // namespace
}  // namespace adgraph::solvers
