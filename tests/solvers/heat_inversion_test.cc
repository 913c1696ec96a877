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
  const Tensor truth = problem.kappa_true();
  auto relative_error = [&] {
    const double err2 =
        comm->allreduce_sum((kappa.array() - truth.array()).square().sum());
    const double ref2 = comm->allreduce_sum(truth.array().square().sum());
    return std::sqrt(err2 / ref2);
  };
  // The target is reached well before the 50-iteration limit: after 25
  // (measured 7.3e-4 there), and the next 25 keep improving.
  optim::LbfgsOptions options;
  options.max_iterations = 25;
  options.tolerance_gradient = 1e-10;
  const optim::LbfgsSummary first = problem.fit(kappa, options);
  const double error_at_25 = relative_error();
  EXPECT_LE(error_at_25, 1e-2) << first.message;
  const optim::LbfgsSummary second = problem.fit(kappa, options);
  EXPECT_LT(relative_error(), error_at_25) << second.message;
  EXPECT_LT(second.final_f, 1e-3 * first.initial_f);
}

}  // namespace
}  // namespace adgraph::solvers
